// silu_and_mul on host memory (the simulator's device memory), checked and run under the
// input's device and current stream, as sgl-kernel's CUDA kernels are launched.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <cmath>

void silu_and_mul(at::Tensor& out, const at::Tensor& input) {
  TORCH_CHECK(input.is_cuda(), "silu_and_mul: input must be a CUDA tensor, got ", input.device());
  TORCH_CHECK(input.scalar_type() == at::kFloat && input.is_contiguous(), "float32, contiguous");
  const int64_t d = input.size(-1) / 2;
  const at::cuda::OptionalCUDAGuard device_guard(at::device_of(input));
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  (void)stream;
  const float* in = input.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t row = 0; row < input.numel() / (2 * d); ++row) {
    for (int64_t i = 0; i < d; ++i) {
      const float x = in[row * 2 * d + i];
      o[row * d + i] = x / (1.0f + std::exp(-x)) * in[row * 2 * d + d + i];
    }
  }
}

int64_t current_device_index() { return c10::cuda::current_device(); }
