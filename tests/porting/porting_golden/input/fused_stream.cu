// Fused bias + GELU + residual kernel for a PyTorch extension.
// Runs on the caller's current CUDA stream so it composes with the rest of the graph.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include "fused_common.cuh"

namespace fused {

constexpr int kThreads = 256;

template <typename scalar_t>
__device__ __forceinline__ float gelu(float x) {
  // tanh approximation; matches torch.nn.functional.gelu(approximate="tanh")
  const float k0 = 0.7978845608f;
  const float k1 = 0.044715f;
  return 0.5f * x * (1.f + tanhf(k0 * (x + k1 * x * x * x)));
}

template <typename scalar_t>
__global__ void bias_gelu_residual_kernel(const scalar_t* __restrict__ x,
                                          const scalar_t* __restrict__ bias,
                                          const scalar_t* __restrict__ residual,
                                          scalar_t* __restrict__ out, int64_t rows,
                                          int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = i % cols;
    float v = static_cast<float>(x[i]) + static_cast<float>(bias[c]);
    out[i] = static_cast<scalar_t>(gelu<scalar_t>(v) + static_cast<float>(residual[i]));
  }
}

torch::Tensor bias_gelu_residual(torch::Tensor x, torch::Tensor bias, torch::Tensor residual) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  TORCH_CHECK(bias.device().is_cuda() && residual.is_cuda(), "all inputs must live on cuda");
  TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
  const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
  auto out = torch::empty_like(x);
  const int64_t rows = x.size(0), cols = x.size(1);
  const int blocks = std::min<int64_t>((rows * cols + kThreads - 1) / kThreads, 65535);
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "bias_gelu", [&] {
    bias_gelu_residual_kernel<scalar_t><<<blocks, kThreads, 0, stream>>>(
        x.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(), residual.data_ptr<scalar_t>(),
        out.data_ptr<scalar_t>(), rows, cols);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

// Two-stream variant: the copy of the residual overlaps with the kernel on a side stream.
torch::Tensor bias_gelu_residual_async(torch::Tensor x, torch::Tensor bias,
                                       torch::Tensor residual_host) {
  c10::cuda::CUDAGuard guard(x.device());
  at::cuda::CUDAStream main = at::cuda::getCurrentCUDAStream();
  at::cuda::CUDAStream side = at::cuda::getStreamFromPool(/*isHighPriority=*/true);
  auto residual = torch::empty_like(x);
  cudaEvent_t copied;
  AT_CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  {
    c10::cuda::CUDAStreamGuard side_guard(side);
    AT_CUDA_CHECK(cudaMemcpyAsync(residual.data_ptr(), residual_host.data_ptr(),
                                  residual.nbytes(), cudaMemcpyHostToDevice, side.stream()));
    AT_CUDA_CHECK(cudaEventRecord(copied, side.stream()));
  }
  AT_CUDA_CHECK(cudaStreamWaitEvent(main.stream(), copied, 0));
  auto out = bias_gelu_residual(x, bias, residual);
  C10_CUDA_CHECK(cudaEventDestroy(copied));
  return out;
}

void sync_all() {
  C10_CUDA_CHECK(cudaDeviceSynchronize());
  cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "CUDA error: ", cudaGetErrorString(err));
}

}  // namespace fused

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("bias_gelu_residual", &fused::bias_gelu_residual, "fused bias+gelu+residual (CUDA)");
  m.def("bias_gelu_residual_async", &fused::bias_gelu_residual_async);
  m.def("sync_all", &fused::sync_all);
}
