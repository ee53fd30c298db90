// Row-wise LayerNorm and Softmax kernels with vectorised loads and warp/block reductions.
#include <torch/extension.h>
#include <torch_musa/csrc/aten/musa/MUSAContext.h>
#include <torch_musa/csrc/core/MUSAGuard.h>
#include <musa_fp16.h>
#include <musa_bf16.h>

#include <cfloat>
#include <type_traits>

namespace norm {

template <typename T>
struct Vec4 {
  T x, y, z, w;
};

template <typename T>
__device__ __forceinline__ float to_float(T v) {
  return static_cast<float>(v);
}

template <>
__device__ __forceinline__ float to_float<at::Half>(at::Half v) {
  return __half2float(static_cast<__half>(v));
}

template <typename T>
__device__ __forceinline__ T from_float(float v) {
  return static_cast<T>(v);
}

__device__ __forceinline__ float warp_reduce_sum(float v) {
#pragma unroll
  for (int mask = 16; mask > 0; mask >>= 1) v += __shfl_xor_sync(0xffffffffu, v, mask);
  return v;
}

__device__ __forceinline__ float warp_reduce_max(float v) {
#pragma unroll
  for (int mask = 16; mask > 0; mask >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, mask));
  return v;
}

// Reduce across the block through shared memory; every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v, float* shared) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = kMax ? warp_reduce_max(v) : warp_reduce_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int nwarps = (blockDim.x + 31) / 32;
  v = (threadIdx.x < nwarps) ? shared[lane] : (kMax ? -FLT_MAX : 0.f);
  if (warp == 0) v = kMax ? warp_reduce_max(v) : warp_reduce_sum(v);
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

template <typename scalar_t>
__global__ void __launch_bounds__(1024) layer_norm_kernel(
    const scalar_t* __restrict__ input, const scalar_t* __restrict__ gamma,
    const scalar_t* __restrict__ beta, scalar_t* __restrict__ output, float* __restrict__ mean_out,
    float* __restrict__ rstd_out, int cols, float eps) {
  __shared__ float shared[32];
  const int row = blockIdx.x;
  const scalar_t* x = input + static_cast<int64_t>(row) * cols;
  scalar_t* y = output + static_cast<int64_t>(row) * cols;

  float sum = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += to_float(x[c]);
  const float mean = block_reduce<false>(sum, shared) / cols;

  float var = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = to_float(x[c]) - mean;
    var += d * d;
  }
  const float rstd = rsqrtf(block_reduce<false>(var, shared) / cols + eps);

  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float normed = (to_float(x[c]) - mean) * rstd;
    y[c] = from_float<scalar_t>(normed * to_float(gamma[c]) + to_float(beta[c]));
  }
  if (threadIdx.x == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

template <typename scalar_t>
__global__ void softmax_kernel(const scalar_t* __restrict__ input, scalar_t* __restrict__ output,
                               int cols, float scale) {
  __shared__ float shared[32];
  const int row = blockIdx.x;
  const scalar_t* x = input + static_cast<int64_t>(row) * cols;
  scalar_t* y = output + static_cast<int64_t>(row) * cols;

  float local_max = -FLT_MAX;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) local_max = fmaxf(local_max, to_float(x[c]) * scale);
  const float row_max = block_reduce<true>(local_max, shared);

  float local_sum = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) local_sum += __expf(to_float(x[c]) * scale - row_max);
  const float inv = 1.f / block_reduce<false>(local_sum, shared);

  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    y[c] = from_float<scalar_t>(__expf(to_float(x[c]) * scale - row_max) * inv);
  }
}

static int pick_threads(int cols) {
  int threads = 32;
  while (threads < cols && threads < 1024) threads <<= 1;
  return threads;
}

std::vector<torch::Tensor> layer_norm(torch::Tensor input, torch::Tensor gamma,
                                      torch::Tensor beta, double eps) {
  TORCH_CHECK(input.is_privateuseone(), "input must be on the GPU");
  TORCH_CHECK(input.dim() == 2, "expected a 2-D input");
  const at::musa::OptionalMUSAGuard guard(device_of(input));
  const int rows = input.size(0), cols = input.size(1);
  auto output = torch::empty_like(input);
  auto stats_opts = input.options().dtype(torch::kFloat);
  auto mean = torch::empty({rows}, stats_opts);
  auto rstd = torch::empty({rows}, stats_opts);
  auto stream = at::musa::getCurrentMUSAStream();
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(input.scalar_type(), "layer_norm", [&] {
    layer_norm_kernel<scalar_t><<<rows, pick_threads(cols), 0, stream>>>(
        input.data_ptr<scalar_t>(), gamma.data_ptr<scalar_t>(), beta.data_ptr<scalar_t>(),
        output.data_ptr<scalar_t>(), mean.data_ptr<float>(), rstd.data_ptr<float>(), cols,
        static_cast<float>(eps));
  });
  C10_MUSA_KERNEL_LAUNCH_CHECK();
  return {output, mean, rstd};
}

torch::Tensor softmax(torch::Tensor input, double scale) {
  TORCH_CHECK(input.is_privateuseone() && input.is_contiguous());
  const at::musa::OptionalMUSAGuard guard(device_of(input));
  const int rows = input.size(0), cols = input.size(1);
  auto output = torch::empty_like(input);
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(input.scalar_type(), "softmax", [&] {
    softmax_kernel<scalar_t><<<rows, pick_threads(cols), 0, at::musa::getCurrentMUSAStream()>>>(
        input.data_ptr<scalar_t>(), output.data_ptr<scalar_t>(), cols, static_cast<float>(scale));
  });
  C10_MUSA_KERNEL_LAUNCH_CHECK();
  return output;
}

}  // namespace norm

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("layer_norm", &norm::layer_norm);
  m.def("softmax", &norm::softmax);
}
