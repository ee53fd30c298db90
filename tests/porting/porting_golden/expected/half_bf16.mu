// Mixed-precision casts and vectorised half2/bf16x2 math.
#include <musa_fp16.h>
#include <musa_bf16.h>
#if __has_include(<musa_fp8.h>)
#include <musa_fp8.h>
#define HAVE_FP8 1
#endif
#include <torch/extension.h>

__global__ void scale_half(__half* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __float2half(__half2float(x[i]) * s);
}

__global__ void scale_half2(__half2* x, __half2 s, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) x[i] = __hmul2(x[i], s);
}

__global__ void bf16_axpy(const __mt_bfloat16* x, __mt_bfloat16* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = __bfloat162float(x[i]) * a + __bfloat162float(y[i]);
    y[i] = __float2bfloat16(v);
  }
}

__global__ void bf16x2_add(const __mt_bfloat162* a, const __mt_bfloat162* b, __mt_bfloat162* c,
                           int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) c[i] = __hadd2(a[i], b[i]);
}

// Legacy aliases that older code still spells out.
__device__ mt_bfloat16 to_bf16(__half h) { return __float2bfloat16(__half2float(h)); }

#ifdef HAVE_FP8
__global__ void quantize_e4m3(const float* in, __mt_fp8_e4m3* out, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __mt_fp8_e4m3(in[i] * scale);
}

__global__ void quantize_e5m2(const float* in, __mt_fp8_e5m2* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __mt_fp8_e5m2(in[i]);
}
#endif

void launch_scale(torch::Tensor t, double s) {
  TORCH_CHECK(t.scalar_type() == at::kHalf);
  const int n = t.numel();
  scale_half<<<(n + 255) / 256, 256>>>(reinterpret_cast<__half*>(t.data_ptr<at::Half>()),
                                       static_cast<float>(s), n);
}

void launch_bf16(torch::Tensor x, torch::Tensor y, double a) {
  const int n = x.numel();
  bf16_axpy<<<(n + 255) / 256, 256>>>(
      reinterpret_cast<const __mt_bfloat16*>(x.data_ptr<at::BFloat16>()),
      reinterpret_cast<__mt_bfloat16*>(y.data_ptr<at::BFloat16>()), static_cast<float>(a), n);
}
