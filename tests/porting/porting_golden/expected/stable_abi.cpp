// Operator registration: classic dispatcher and the stable ABI.
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/library.h>
#include <torch_musa/csrc/aten/musa/MUSAContext.h>
#include <torch_musa/csrc/core/MUSAGuard.h>

namespace myops {

torch::stable::Tensor rms_norm_stable(torch::stable::Tensor x, double eps);
at::Tensor rms_norm(const at::Tensor& x, double eps);
at::Tensor rms_norm_backward(const at::Tensor& grad, const at::Tensor& x, double eps);

at::Tensor rms_norm_cuda(const at::Tensor& x, double eps) {
  TORCH_CHECK(x.device().type() == c10::DeviceType::PrivateUse1, "expected a CUDA tensor");
  TORCH_CHECK(x.device().type() == at::DeviceType::PrivateUse1);
  TORCH_CHECK(x.is_privateuseone());
  auto opts = at::TensorOptions().dtype(at::kFloat).device(at::kMUSA, x.get_device());
  c10::Device dev(c10::kPrivateUse1, 0);
  (void)dev;
  return rms_norm(x, eps).to(opts);
}

}  // namespace myops

STABLE_TORCH_LIBRARY(myops, m) {
  m.def("rms_norm(Tensor x, float eps) -> Tensor");
}

STABLE_TORCH_LIBRARY_IMPL(myops,
                          PrivateUse1,
                          m) {
  m.impl("rms_norm", TORCH_BOX(&myops::rms_norm_stable));
}

TORCH_LIBRARY_FRAGMENT(legacy_ops, m) {
  m.def("rms_norm(Tensor x, float eps) -> Tensor");
}

TORCH_LIBRARY_IMPL(legacy_ops, PrivateUse1, m) {
  m.impl("rms_norm", &myops::rms_norm_cuda);
}

TORCH_LIBRARY_IMPL(legacy_ops, /* training */ AutogradPrivateUse1, m) {
  m.impl("rms_norm", &myops::rms_norm);
}

TORCH_LIBRARY_IMPL(legacy_ops, CPU, m) {
  // The CPU registration must stay as it is.
  m.impl("rms_norm", &myops::rms_norm);
}

static auto registry = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);

// A namespace named cuda that is not at:: or c10:: is left alone and reported.
namespace cuda {
inline int device_count() { return 1; }
}  // namespace cuda
