// A host C++ extension used by the simulator's extension-build tests. It is built twice, by
// torch_musa.utils.musa_extension.load and by a setup.py with MUSAExtension + BuildExtension.
#include <torch/extension.h>

#include <string>

namespace {

void check_musa(const at::Tensor& x) {
  TORCH_CHECK(x.device().type() == c10::DeviceType::PrivateUse1, "expected a musa tensor, got ",
              x.device());
}

}  // namespace

// y[i] = alpha * x[i] + i: the product is an ATen op (dispatched to the simulator), the ramp a
// plain loop over data_ptr(), which in the simulator is host memory.
at::Tensor scale_add_index(const at::Tensor& x, double alpha) {
  check_musa(x);
  TORCH_CHECK(x.scalar_type() == at::kFloat, "expected float32, got ", x.scalar_type());
  at::Tensor y = at::mul(x, alpha).contiguous();
  float* p = y.data_ptr<float>();
  for (int64_t i = 0; i < y.numel(); ++i) {
    p[i] += static_cast<float>(i);
  }
  return y;
}

// A tensor allocated from C++ on x's device, filled through its raw pointer: sum of squares of x.
at::Tensor sum_squares(const at::Tensor& x) {
  check_musa(x);
  at::Tensor xc = x.to(at::kDouble).contiguous();
  at::Tensor out = at::empty({1}, xc.options());
  const double* in = xc.data_ptr<double>();
  double acc = 0.0;
  for (int64_t i = 0; i < xc.numel(); ++i) {
    acc += in[i] * in[i];
  }
  out.data_ptr<double>()[0] = acc;
  return out;
}

bool is_musa(const at::Tensor& x) { return x.device().type() == c10::DeviceType::PrivateUse1; }

std::string device_type_name(const at::Tensor& x) {
  return c10::DeviceTypeName(x.device().type(), /*lower_case=*/true);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scale_add_index", &scale_add_index, "alpha * x + arange(numel), on musa tensors");
  m.def("sum_squares", &sum_squares, "sum of x**2 as a 1-element float64 tensor on x's device");
  m.def("is_musa", &is_musa, "whether x is a PrivateUse1 (musa) tensor");
  m.def("device_type_name", &device_type_name, "c10's lower-case name of x's device type");
}
