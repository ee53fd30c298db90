// The op registrations, as sgl-kernel's common_extension writes them, and the Python module.
#include <Python.h>
#include <torch/all.h>
#include <torch/library.h>

#include <ATen/ATen.h>

void silu_and_mul(at::Tensor& out, const at::Tensor& input);
int64_t current_device_index();

TORCH_LIBRARY_FRAGMENT(sgl_like, m) {
  m.def("silu_and_mul(Tensor! out, Tensor input) -> ()");
  m.impl("silu_and_mul", torch::kCUDA, &silu_and_mul);
  m.def("current_device_index() -> int", &current_device_index);
}

static struct PyModuleDef common_ops_module = {PyModuleDef_HEAD_INIT, "common_ops", nullptr, 0,
                                               nullptr};

PyMODINIT_FUNC PyInit_common_ops(void) { return PyModule_Create(&common_ops_module); }
