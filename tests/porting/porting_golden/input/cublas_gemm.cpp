// Plain cuBLAS GEMM wrapper with explicit handle management and status checks.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <sstream>
#include <stdexcept>

#define CHECK_CUBLAS(expr)                                                       \
  do {                                                                           \
    cublasStatus_t status_ = (expr);                                             \
    if (status_ != CUBLAS_STATUS_SUCCESS) {                                      \
      std::ostringstream msg;                                                    \
      msg << "cuBLAS call failed: " #expr " -> " << static_cast<int>(status_);   \
      throw std::runtime_error(msg.str());                                       \
    }                                                                            \
  } while (0)

namespace gemm {

// Own handle, bound to the current stream on every call (cuBLAS handles are not stream-safe).
class Handle {
 public:
  Handle() { CHECK_CUBLAS(cublasCreate(&handle_)); }
  ~Handle() { cublasDestroy(handle_); }
  cublasHandle_t get(cudaStream_t stream) {
    CHECK_CUBLAS(cublasSetStream(handle_, stream));
    return handle_;
  }

 private:
  cublasHandle_t handle_ = nullptr;
};

static const char* status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    default: return "other";
  }
}

// C = alpha * A @ B + beta * C for row-major float tensors (computed as B^T A^T in column-major).
torch::Tensor sgemm(torch::Tensor a, torch::Tensor b, double alpha, double beta) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda(), "inputs must be CUDA tensors");
  TORCH_CHECK(a.scalar_type() == torch::kFloat, "sgemm wants float32");
  const int m = a.size(0), k = a.size(1), n = b.size(1);
  auto c = torch::zeros({m, n}, a.options());
  static Handle handle;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const float fa = static_cast<float>(alpha), fb = static_cast<float>(beta);
  cublasStatus_t st = cublasSgemm(handle.get(stream), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &fa,
                                  b.data_ptr<float>(), n, a.data_ptr<float>(), k, &fb,
                                  c.data_ptr<float>(), n);
  TORCH_CHECK(st == CUBLAS_STATUS_SUCCESS, "cublasSgemm: ", status_name(st));
  return c;
}

// Mixed precision through the shared PyTorch handle and GemmEx.
torch::Tensor hgemm(torch::Tensor a, torch::Tensor b) {
  auto c = torch::empty({a.size(0), b.size(1)}, a.options());
  cublasHandle_t h = at::cuda::getCurrentCUDABlasHandle();
  CHECK_CUBLAS(cublasSetMathMode(h, CUBLAS_TENSOR_OP_MATH));
  const float one = 1.f, zero = 0.f;
  CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, b.size(1), a.size(0), a.size(1), &one,
                            b.data_ptr(), CUDA_R_16F, b.size(1), a.data_ptr(), CUDA_R_16F,
                            a.size(1), &zero, c.data_ptr(), CUDA_R_16F, b.size(1),
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP));
  return c;
}

// Batched strided GEMM for attention scores.
void batched(torch::Tensor q, torch::Tensor k, torch::Tensor out) {
  cublasHandle_t h = at::cuda::getCurrentCUDABlasHandle();
  const float one = 1.f, zero = 0.f;
  const int b = q.size(0), s = q.size(1), d = q.size(2);
  CHECK_CUBLAS(cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, s, s, d, &one,
                                         k.data_ptr<float>(), d, (long long)s * d,
                                         q.data_ptr<float>(), d, (long long)s * d, &zero,
                                         out.data_ptr<float>(), s, (long long)s * s, b));
#if defined(CUBLAS_VERSION) && CUBLAS_VERSION >= 11000
  CHECK_CUBLAS(cublasSetWorkspace(h, nullptr, 0));
#endif
}

}  // namespace gemm
