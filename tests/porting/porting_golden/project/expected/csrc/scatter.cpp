// Operator entry point: picks the CPU or the CUDA implementation by the input's device.
#include <torch/script.h>

#include "cpu/scatter_cpu.h"

#ifdef WITH_MUSA
#include "musa/scatter_musa.h"
#endif

#ifdef _WIN32
#ifdef WITH_MUSA
PyMODINIT_FUNC PyInit__scatter_musa(void) { return NULL; }
#else
PyMODINIT_FUNC PyInit__scatter_cpu(void) { return NULL; }
#endif
#endif

torch::Tensor scatter_sum(torch::Tensor src, torch::Tensor index, int64_t dim_size) {
  if (src.device().is_privateuseone()) {
#ifdef WITH_MUSA
    return scatter_sum_musa(src, index, dim_size);
#else
    AT_ERROR("Not compiled with CUDA support");
#endif
  }
  return scatter_sum_cpu(src, index, dim_size);
}

static auto registry = torch::RegisterOperators().op("scatter_ext::scatter_sum", &scatter_sum);
