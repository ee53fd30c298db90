/*
 * libmublas.so of the simulated MUSA SDK: a handle API and a correct, unoptimised column-major
 * SGEMM computed on the host.
 *
 * Status codes (mublasStatus_t); the real values are not public, these follow cuBLAS's numbering:
 *   0  MUBLAS_STATUS_SUCCESS
 *   1  MUBLAS_STATUS_NOT_INITIALIZED   null or destroyed handle
 *   3  MUBLAS_STATUS_ALLOC_FAILED
 *   7  MUBLAS_STATUS_INVALID_VALUE     negative size, leading dimension too small, bad operation
 * mublasOperation_t: 0 N (as is), 1 T (transpose), 2 C (conjugate transpose; same as T for reals).
 * mublasMath_t: 0 default, 1 tensor-op, 3 pedantic, 16 TF32 tensor-op; any is accepted and stored,
 * the simulated SGEMM always accumulates in float.
 */
#include "musa_sim_sdk.h"

typedef int mublasStatus_t;
typedef void* mublasStream_t;

enum {
  MUBLAS_STATUS_SUCCESS = 0,
  MUBLAS_STATUS_NOT_INITIALIZED = 1,
  MUBLAS_STATUS_ALLOC_FAILED = 3,
  MUBLAS_STATUS_INVALID_VALUE = 7,
};

enum { MUBLAS_OP_N = 0, MUBLAS_OP_T = 1, MUBLAS_OP_C = 2 };

#define HANDLE_TAG 0x424c4153u

typedef struct {
  unsigned tag;
  mublasStream_t stream;
  int math_mode;
} sim_handle;

typedef sim_handle* mublasHandle_t;

static sim_handle* live(mublasHandle_t h) { return h != NULL && h->tag == HANDLE_TAG ? h : NULL; }

SIM_API mublasStatus_t mublasCreate(mublasHandle_t* handle) {
  if (handle == NULL) return MUBLAS_STATUS_INVALID_VALUE;
  sim_handle* h = calloc(1, sizeof *h);
  if (h == NULL) return MUBLAS_STATUS_ALLOC_FAILED;
  h->tag = HANDLE_TAG;
  *handle = h;
  return MUBLAS_STATUS_SUCCESS;
}

SIM_API mublasStatus_t mublasDestroy(mublasHandle_t handle) {
  sim_handle* h = live(handle);
  if (h == NULL) return MUBLAS_STATUS_NOT_INITIALIZED;
  h->tag = 0;
  free(h);
  return MUBLAS_STATUS_SUCCESS;
}

SIM_API mublasStatus_t mublasGetVersion(mublasHandle_t handle, int* version) {
  if (live(handle) == NULL) return MUBLAS_STATUS_NOT_INITIALIZED;
  if (version == NULL) return MUBLAS_STATUS_INVALID_VALUE;
  *version = SIM_MUBLAS_VERSION;
  return MUBLAS_STATUS_SUCCESS;
}

SIM_API mublasStatus_t mublasSetStream(mublasHandle_t handle, mublasStream_t stream) {
  sim_handle* h = live(handle);
  if (h == NULL) return MUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = stream;
  return MUBLAS_STATUS_SUCCESS;
}

SIM_API mublasStatus_t mublasGetStream(mublasHandle_t handle, mublasStream_t* stream) {
  sim_handle* h = live(handle);
  if (h == NULL) return MUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == NULL) return MUBLAS_STATUS_INVALID_VALUE;
  *stream = h->stream;
  return MUBLAS_STATUS_SUCCESS;
}

SIM_API mublasStatus_t mublasSetMathMode(mublasHandle_t handle, int mode) {
  sim_handle* h = live(handle);
  if (h == NULL) return MUBLAS_STATUS_NOT_INITIALIZED;
  h->math_mode = mode;
  return MUBLAS_STATUS_SUCCESS;
}

static int max1(int v) { return v > 1 ? v : 1; }

/* C = alpha * op(A) * op(B) + beta * C, all column-major; op(A) is m x k, op(B) is k x n. */
SIM_API mublasStatus_t mublasSgemm(mublasHandle_t handle, int transa, int transb, int m, int n,
                                   int k, const float* alpha, const float* A, int lda,
                                   const float* B, int ldb, const float* beta, float* C,
                                   int ldc) {
  if (live(handle) == NULL) return MUBLAS_STATUS_NOT_INITIALIZED;
  if (transa < MUBLAS_OP_N || transa > MUBLAS_OP_C || transb < MUBLAS_OP_N ||
      transb > MUBLAS_OP_C || m < 0 || n < 0 || k < 0 ||
      lda < max1(transa == MUBLAS_OP_N ? m : k) || ldb < max1(transb == MUBLAS_OP_N ? k : n) ||
      ldc < max1(m))
    return MUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0) return MUBLAS_STATUS_SUCCESS;
  if (alpha == NULL || beta == NULL || C == NULL) return MUBLAS_STATUS_INVALID_VALUE;
  const float a = *alpha, b = *beta;
  int use_ab = a != 0.0f && k > 0;
  if (use_ab && (A == NULL || B == NULL)) return MUBLAS_STATUS_INVALID_VALUE;
  /* Strides that read op(A)[i, l] and op(B)[l, j] whatever the transposition. */
  const long a_row = transa == MUBLAS_OP_N ? 1 : lda, a_col = transa == MUBLAS_OP_N ? lda : 1;
  const long b_row = transb == MUBLAS_OP_N ? 1 : ldb, b_col = transb == MUBLAS_OP_N ? ldb : 1;
  for (int j = 0; j < n; ++j) {
    float* c = C + (long)j * ldc;
    for (int i = 0; i < m; ++i) {
      float acc = 0.0f;
      if (use_ab) {
        const float* ap = A + i * a_row;
        const float* bp = B + j * b_col;
        for (int l = 0; l < k; ++l) acc += ap[l * a_col] * bp[l * b_row];
      }
      /* beta == 0 must not read C: it may hold NaN or be uninitialised */
      c[i] = (use_ab ? a * acc : 0.0f) + (b == 0.0f ? 0.0f : b * c[i]);
    }
  }
  return MUBLAS_STATUS_SUCCESS;
}
