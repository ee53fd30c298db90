// Rotary position embedding applied in place to query/key, registered with the dispatcher.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch_musa/csrc/aten/musa/MUSAContext.h>
#include <torch_musa/csrc/core/MUSAGuard.h>
#include <torch/library.h>

#include <cmath>

namespace rope {

template <typename scalar_t, bool kNeox>
__device__ __forceinline__ void rotate(scalar_t* __restrict__ x, const float* __restrict__ cos_ptr,
                                       const float* __restrict__ sin_ptr, int rot_offset,
                                       int embed_dim) {
  int xi, yi;
  if (kNeox) {
    // GPT-NeoX style: the two halves of the head are rotated against each other.
    xi = rot_offset;
    yi = embed_dim + rot_offset;
  } else {
    // GPT-J style: neighbouring elements form the complex pairs.
    xi = 2 * rot_offset;
    yi = 2 * rot_offset + 1;
  }
  const float c = cos_ptr[rot_offset];
  const float s = sin_ptr[rot_offset];
  const float a = static_cast<float>(x[xi]);
  const float b = static_cast<float>(x[yi]);
  x[xi] = static_cast<scalar_t>(a * c - b * s);
  x[yi] = static_cast<scalar_t>(b * c + a * s);
}

template <typename scalar_t, bool kNeox>
__global__ void rotary_kernel(const int64_t* __restrict__ positions, scalar_t* __restrict__ query,
                              scalar_t* __restrict__ key, const float* __restrict__ cache,
                              int rot_dim, int64_t q_stride, int64_t k_stride, int num_heads,
                              int num_kv_heads, int head_size) {
  const int token = blockIdx.x;
  const int64_t pos = positions[token];
  const float* cos_ptr = cache + pos * rot_dim;
  const int embed_dim = rot_dim / 2;
  const float* sin_ptr = cos_ptr + embed_dim;

  const int nq = num_heads * embed_dim;
  for (int i = threadIdx.x; i < nq; i += blockDim.x) {
    const int head = i / embed_dim;
    const int rot_offset = i % embed_dim;
    rotate<scalar_t, kNeox>(query + token * q_stride + head * head_size, cos_ptr, sin_ptr,
                            rot_offset, embed_dim);
  }
  const int nk = num_kv_heads * embed_dim;
  for (int i = threadIdx.x; i < nk; i += blockDim.x) {
    const int head = i / embed_dim;
    const int rot_offset = i % embed_dim;
    rotate<scalar_t, kNeox>(key + token * k_stride + head * head_size, cos_ptr, sin_ptr,
                            rot_offset, embed_dim);
  }
}

void rotary_embedding(const at::Tensor& positions, at::Tensor& query, at::Tensor& key,
                      int64_t head_size, const at::Tensor& cos_sin_cache, bool is_neox) {
  TORCH_CHECK(query.device().type() == at::kMUSA, "query must be a GPU tensor");
  const int64_t num_tokens = positions.numel();
  const int rot_dim = cos_sin_cache.size(1);
  const int num_heads = query.size(-1) / head_size;
  const int num_kv_heads = key.size(-1) / head_size;
  const int64_t q_stride = query.stride(-2);
  const int64_t k_stride = key.stride(-2);

  dim3 grid(num_tokens);
  dim3 block(std::min<int64_t>(num_heads * rot_dim / 2, 512));
  const c10::musa::OptionalMUSAGuard guard(device_of(query));
  const musaStream_t stream = at::musa::getCurrentMUSAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16,
                                  query.scalar_type(), "rotary_embedding", [&] {
    if (is_neox) {
      rotary_kernel<scalar_t, true><<<grid, block, 0, stream>>>(
          positions.data_ptr<int64_t>(), query.data_ptr<scalar_t>(), key.data_ptr<scalar_t>(),
          cos_sin_cache.data_ptr<float>(), rot_dim, q_stride, k_stride, num_heads, num_kv_heads,
          head_size);
    } else {
      rotary_kernel<scalar_t, false><<<grid, block, 0, stream>>>(
          positions.data_ptr<int64_t>(), query.data_ptr<scalar_t>(), key.data_ptr<scalar_t>(),
          cos_sin_cache.data_ptr<float>(), rot_dim, q_stride, k_stride, num_heads, num_kv_heads,
          head_size);
    }
  });
  C10_MUSA_KERNEL_LAUNCH_CHECK();
}

at::Tensor build_cache(int64_t max_pos, int64_t rot_dim, double base) {
  auto inv_freq = 1.0 / at::pow(base, at::arange(0, rot_dim, 2, at::kFloat) / rot_dim);
  auto t = at::arange(max_pos, at::kFloat);
  auto freqs = at::outer(t, inv_freq);
  return at::cat({freqs.cos(), freqs.sin()}, -1).to(at::kMUSA);
}

}  // namespace rope

TORCH_LIBRARY(rope, m) {
  m.def("rotary_embedding(Tensor positions, Tensor(a!) query, Tensor(b!) key, int head_size, "
        "Tensor cos_sin_cache, bool is_neox) -> ()");
}

TORCH_LIBRARY_IMPL(rope, PrivateUse1, m) {
  m.impl("rotary_embedding", &rope::rotary_embedding);
}
