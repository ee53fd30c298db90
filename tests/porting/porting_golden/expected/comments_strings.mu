/*
 * Comments and strings that mention CUDA must survive porting unchanged:
 * cudaMalloc, cudaStream_t, at::cuda::getCurrentCUDAStream, __CUDA_ARCH__ >= 800.
 */
#include <cstdio>
#include <musa_runtime.h>

// A line comment naming cudaMemcpy and cublasSgemm stays as written. \
   This continuation line is still part of the comment: cudaFree(ptr);

static const char* kBanner = "built for CUDA with cudaMalloc and cudaFree";
static const char* kEscaped = "quote \" then cudaMemset and a backslash \\";
static const char kQuote = '"';
static const char kApos = '\'';
static const wchar_t* kWide = L"wide cudaMalloc";
static const char* kRaw = R"delim(raw "cudaMalloc" with ) and )" quotes)delim";
static const char* kRawU8 = u8R"(cudaDeviceSynchronize())";
static const long kBig = 1'000'000;
static const unsigned kMask = 0xFFFF'FFFFu;

#define LOG_ERR(call)                                                  \
  do {                                                                 \
    musaError_t e_ = (call);                                           \
    if (e_ != musaSuccess)                                             \
      std::fprintf(stderr, "%s failed: %s\n", #call, musaGetErrorString(e_)); \
  } while (0)

#if CUDA_VERSION >= 12000 || CUDART_VERSION >= 12000
#define HAS_CUDA12 1
#endif

int main() {
  float* buf = nullptr;  // cudaMalloc'd below
  LOG_ERR(musaMalloc(&buf, 1024 * sizeof(float)));
  std::printf("cudaMalloc -> %p (%s)\n", (void*)buf, kBanner);
  LOG_ERR(musaFree(buf)); /* cudaFree inside a block comment */ LOG_ERR(musaDeviceReset());
  // Near misses are user code, never rewritten:
  int mycudaMalloc = 0, cudaMallocX = 1, my_cuda_helper = 2;
  return mycudaMalloc + cudaMallocX + my_cuda_helper + (int)kBig + (int)kMask + kQuote + kApos +
         (kWide != nullptr) + (kRaw != nullptr) + (kRawU8 != nullptr) + (kEscaped != nullptr);
}
