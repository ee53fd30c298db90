// The adapter's Python module: ops that a process-group backend runs on the tensor's device.
#include <torch/extension.h>

#include "pg_utils.h"

// Fills `t` with `rank` under t's device, as a backend stamps a buffer before a collective.
at::Tensor stamp_rank(at::Tensor t, int64_t rank) {
  check_device_tensor(t);
  const c10::cuda::CUDAGuard guard(t.device());
  return t.fill_(rank);
}

// The device that is current under a guard for `t`, and the id of its current stream.
std::vector<int64_t> guarded_device_and_stream(const at::Tensor& t) {
  check_device_tensor(t);
  const c10::cuda::CUDAGuard guard(t.device());
  return {c10::cuda::current_device(), c10::cuda::getCurrentCUDAStream().id()};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("stamp_rank", &stamp_rank);
  m.def("guarded_device_and_stream", &guarded_device_and_stream);
}
