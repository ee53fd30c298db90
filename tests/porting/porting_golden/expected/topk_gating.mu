// Mixture-of-experts gating: softmax over experts, then top-k selection per token.
#include <torch/all.h>
#include <torch_musa/csrc/aten/musa/MUSAContext.h>
#include <torch_musa/csrc/core/MUSAGuard.h>
#include <cub/block/block_reduce.cuh>

#include <cfloat>

namespace moe {

template <int kThreads>
__global__ void topk_gating_kernel(const float* __restrict__ logits, float* __restrict__ weights,
                                   int* __restrict__ indices, int num_experts, int k,
                                   bool renormalize) {
  using BlockReduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float s_max, s_sum;
  extern __shared__ float probs[];

  const int token = blockIdx.x;
  const float* row = logits + static_cast<int64_t>(token) * num_experts;

  float local_max = -FLT_MAX;
  for (int e = threadIdx.x; e < num_experts; e += kThreads) local_max = fmaxf(local_max, row[e]);
  const float block_max = BlockReduce(temp).Reduce(local_max, cub::Max());
  if (threadIdx.x == 0) s_max = block_max;
  __syncthreads();

  float local_sum = 0.f;
  for (int e = threadIdx.x; e < num_experts; e += kThreads) {
    const float p = __expf(row[e] - s_max);
    probs[e] = p;
    local_sum += p;
  }
  const float block_sum = BlockReduce(temp).Sum(local_sum);
  if (threadIdx.x == 0) s_sum = block_sum;
  __syncthreads();

  for (int e = threadIdx.x; e < num_experts; e += kThreads) probs[e] /= s_sum;
  __syncthreads();

  // k is small (1-8): a serial arg-max per slot on thread 0 beats a block-wide sort.
  if (threadIdx.x == 0) {
    float picked_sum = 0.f;
    for (int slot = 0; slot < k; ++slot) {
      int best = 0;
      float best_p = -1.f;
      for (int e = 0; e < num_experts; ++e) {
        if (probs[e] > best_p) {
          best_p = probs[e];
          best = e;
        }
      }
      weights[token * k + slot] = best_p;
      indices[token * k + slot] = best;
      picked_sum += best_p;
      probs[best] = -1.f;
    }
    if (renormalize) {
      for (int slot = 0; slot < k; ++slot) weights[token * k + slot] /= picked_sum;
    }
  }
}

std::tuple<torch::Tensor, torch::Tensor> topk_gating(const torch::Tensor& logits, int64_t k,
                                                     bool renormalize) {
  TORCH_CHECK(logits.is_privateuseone(), "logits must be a device tensor");
  TORCH_CHECK(logits.scalar_type() == at::ScalarType::Float, "logits must be float32");
  const int64_t tokens = logits.size(0);
  const int experts = logits.size(1);
  auto weights = torch::empty({tokens, k}, logits.options());
  auto indices = torch::empty({tokens, k}, logits.options().dtype(torch::kInt32));
  const at::musa::OptionalMUSAGuard guard(device_of(logits));
  const size_t smem = experts * sizeof(float);
  topk_gating_kernel<128><<<tokens, 128, smem, at::musa::getCurrentMUSAStream()>>>(
      logits.data_ptr<float>(), weights.data_ptr<float>(), indices.data_ptr<int>(), experts, k,
      renormalize);
  C10_MUSA_KERNEL_LAUNCH_CHECK();
  return {weights, indices};
}

}  // namespace moe

TORCH_LIBRARY_FRAGMENT(moe_ops, m) {
  m.def("topk_gating(Tensor logits, int k, bool renormalize) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(moe_ops, PrivateUse1, m) { m.impl("topk_gating", &moe::topk_gating); }
