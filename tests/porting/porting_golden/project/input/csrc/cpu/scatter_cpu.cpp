#include "scatter_cpu.h"

torch::Tensor scatter_sum_cpu(torch::Tensor src, torch::Tensor index, int64_t dim_size) {
  auto out = torch::zeros({dim_size}, src.options());
  return out.index_add_(0, index, src);
}
