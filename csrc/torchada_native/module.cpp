// Python entry point of torchada's native library (loaded through torchada._native.library).

#include "torchada_native.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torchada native helpers; use through torchada._native.library";
  torchada_native::init_device_translation(m);
  torchada_native::init_device_methods(m);
  torchada_native::init_device_identity(m);
  torchada_native::init_op_overrides(m);
}
