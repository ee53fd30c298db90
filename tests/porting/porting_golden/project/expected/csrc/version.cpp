// The toolkit the extension was built with, for the Python side's compatibility check.
#include <torch/script.h>

#ifdef WITH_MUSA
#include <musa.h>
#endif

#ifdef _WIN32
#ifdef WITH_MUSA
PyMODINIT_FUNC PyInit__version_musa(void) { return NULL; }
#else
PyMODINIT_FUNC PyInit__version_cpu(void) { return NULL; }
#endif
#endif

int64_t musa_version() noexcept {
#ifdef WITH_MUSA
  return CUDA_VERSION;
#else
  return -1;
#endif
}

static auto registry = torch::RegisterOperators().op("scatter_ext::cuda_version", &musa_version);
