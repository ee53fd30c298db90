// The stable library's schema and its CUDA registrations, as vLLM writes them; the module init
// lets `import vllm_like._C_stable_libtorch` load it.
#include <Python.h>

#include <torch/csrc/stable/library.h>

#include "ops.h"

STABLE_TORCH_LIBRARY(vllm_like, ops) {
  ops.def("scaled_copy(Tensor! out, Tensor input, float scale, Tensor? bias) -> ()");
  ops.def("leading_size(Tensor input) -> int");
  ops.def("blackwell_paths() -> int");
}

STABLE_TORCH_LIBRARY_IMPL(vllm_like, CUDA, ops) {
  ops.impl("scaled_copy", TORCH_BOX(&scaled_copy));
  ops.impl("leading_size", TORCH_BOX(&leading_size));
}

STABLE_TORCH_LIBRARY_IMPL(vllm_like, CompositeExplicitAutograd, ops) {
  ops.impl("blackwell_paths", TORCH_BOX(&blackwell_paths));
}

static struct PyModuleDef stable_module = {PyModuleDef_HEAD_INIT, "_C_stable_libtorch", nullptr,
                                           0, nullptr};

PyMODINIT_FUNC PyInit__C_stable_libtorch(void) { return PyModule_Create(&stable_module); }
