// Worked example of an operator override (docs/native_ops.md): count the host synchronisations a
// program makes. Reading a value of a musa tensor on the host (.item(), float(t), bool(t), an
// `if t:`) goes through aten::_local_scalar_dense, which waits for the device. This override
// counts those calls, then runs the kernel it replaced: results do not change.

#include <op_override.h>

namespace {

at::Scalar local_scalar_dense(const at::Tensor& self);

torchada_ops::Override sync_override{
    "_local_scalar_dense", "aten::_local_scalar_dense",
    "counts scalar reads from the device (.item(), bool(t)), then runs the backend's kernel",
    TORCHADA_KERNEL(local_scalar_dense)};

at::Scalar local_scalar_dense(const at::Tensor& self) {
  sync_override.trace(self, "backend kernel");  // counts the call; logs it when tracing
  return sync_override.previous<at::Scalar>(self);
}

torchada_ops::Override* const kOverrides[] = {&sync_override};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { torchada_ops::bind(m, kOverrides); }
