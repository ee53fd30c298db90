#include "scatter_musa.h"

#include <torch_musa/csrc/aten/musa/MUSAContext.h>

#include "utils.muh"

#define THREADS 256
#define BLOCKS(N) (N + THREADS - 1) / THREADS

template <typename scalar_t>
__global__ void scatter_sum_kernel(const scalar_t* src, const int64_t* index, scalar_t* out,
                                   int64_t numel) {
  const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < numel) atomicAdd(out + index[i], src[i]);
}

torch::Tensor scatter_sum_musa(torch::Tensor src, torch::Tensor index, int64_t dim_size) {
  CHECK_MUSA(src);
  CHECK_MUSA(index);
  CHECK_INPUT(src.numel() == index.numel());
  c10::musa::MaybeSetDevice(src.get_device());
  auto out = torch::zeros({dim_size}, src.options());
  auto stream = at::musa::getCurrentMUSAStream();
  AT_DISPATCH_FLOATING_TYPES(src.scalar_type(), "scatter_sum_cuda", [&] {
    scatter_sum_kernel<scalar_t><<<BLOCKS(src.numel()), THREADS, 0, stream>>>(
        src.data_ptr<scalar_t>(), index.data_ptr<int64_t>(), out.data_ptr<scalar_t>(),
        src.numel());
  });
  return out;
}
