#pragma once

#include "../extensions.h"

torch::Tensor scatter_sum_cuda(torch::Tensor src, torch::Tensor index, int64_t dim_size);
