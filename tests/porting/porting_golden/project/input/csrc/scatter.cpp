// Operator entry point: picks the CPU or the CUDA implementation by the input's device.
#include <torch/script.h>

#include "cpu/scatter_cpu.h"

#ifdef WITH_CUDA
#include "cuda/scatter_cuda.h"
#endif

#ifdef _WIN32
#ifdef WITH_CUDA
PyMODINIT_FUNC PyInit__scatter_cuda(void) { return NULL; }
#else
PyMODINIT_FUNC PyInit__scatter_cpu(void) { return NULL; }
#endif
#endif

torch::Tensor scatter_sum(torch::Tensor src, torch::Tensor index, int64_t dim_size) {
  if (src.device().is_cuda()) {
#ifdef WITH_CUDA
    return scatter_sum_cuda(src, index, dim_size);
#else
    AT_ERROR("Not compiled with CUDA support");
#endif
  }
  return scatter_sum_cpu(src, index, dim_size);
}

static auto registry = torch::RegisterOperators().op("scatter_ext::scatter_sum", &scatter_sum);
