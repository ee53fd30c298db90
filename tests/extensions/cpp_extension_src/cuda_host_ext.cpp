// A host C++ extension written against CUDA's C++ APIs, as a CUDA project would write it. The tests
// build it through torchada (CUDAExtension in a setup.py, and load()), which ports it to
// torch_musa's APIs first; it then runs on musa tensors.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include <host_ext/device_check.h>  // through include_dirs: ported as well

#include "ext_common.cuh"  // beside this file: ported and renamed to .muh

// y[i] = alpha * x[i] + i, on x's device: the product is an ATen op, the ramp a loop over
// data_ptr() (host memory in the simulator), run under x's device and its current stream.
at::Tensor scale_add_index(const at::Tensor& x, double alpha) {
  expect_device_tensor(x, "x");
  TORCH_CHECK(x.scalar_type() == at::kFloat, "expected float32, got ", x.scalar_type());
  const at::cuda::OptionalCUDAGuard guard(device_of(x));
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  (void)stream;
  at::Tensor y = at::mul(x, alpha).contiguous();
  float* p = y.data_ptr<float>();
  for (int64_t i = 0; i < y.numel(); ++i) {
    p[i] += static_cast<float>(i + kRampStart);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

// The current device before, inside and after a CUDAGuard on x's device.
std::vector<int64_t> guard_devices(const at::Tensor& x) {
  expect_device_tensor(x, "x");
  const int64_t before = c10::cuda::current_device();
  int64_t inside = -1;
  {
    c10::cuda::CUDAGuard guard(x.device());
    inside = c10::cuda::current_device();
  }
  return {before, inside, c10::cuda::current_device()};
}

// The native handle of the current stream of `device`, as Python's cuda_stream shows it.
int64_t current_stream_handle(int64_t device) {
  cudaStream_t stream = at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device));
  return static_cast<int64_t>(reinterpret_cast<intptr_t>(stream));
}

// Stream ids: a pool stream, then the current one before, inside and after a CUDAStreamGuard.
std::vector<int64_t> stream_guard_ids(int64_t device) {
  const auto index = static_cast<c10::DeviceIndex>(device);
  c10::cuda::CUDAStream pool = c10::cuda::getStreamFromPool(false, index);
  const int64_t before = at::cuda::getCurrentCUDAStream(index).id();
  int64_t inside = -1;
  {
    c10::cuda::CUDAStreamGuard guard(pool);
    inside = at::cuda::getCurrentCUDAStream(index).id();
  }
  return {pool.id(), before, inside, at::cuda::getCurrentCUDAStream(index).id()};
}

// The runtime's device count, checked; and a failing call, which AT_CUDA_CHECK turns into an error.
int64_t runtime_device_count() {
  int count = 0;
  EXT_RUNTIME_CHECK(cudaGetDeviceCount(&count));
  return count;
}

void failing_runtime_call() { AT_CUDA_CHECK(cudaGetDeviceCount(nullptr)); }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scale_add_index", &scale_add_index, "alpha * x + arange(numel) on x's device");
  m.def("guard_devices", &guard_devices, "current device before/inside/after a CUDAGuard");
  m.def("current_stream_handle", &current_stream_handle, "native handle of the current stream");
  m.def("stream_guard_ids", &stream_guard_ids, "pool stream id, current id around a stream guard");
  m.def("runtime_device_count", &runtime_device_count, "the runtime's device count, checked");
  m.def("failing_runtime_call", &failing_runtime_call, "a runtime call that fails, checked");
}
