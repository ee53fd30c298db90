// Host versions of two stable-ABI kernels: out = input * scale (+ bias), and input's first size.
#include "ops.h"

#include <cuda_runtime.h>

#include <stdexcept>

void scaled_copy(torch::stable::Tensor& out, torch::stable::Tensor const& input, double scale,
                 std::optional<torch::stable::Tensor> const& bias) {
  if (out.numel() != input.numel() || !input.is_contiguous() || !out.is_contiguous()) {
    throw std::runtime_error("scaled_copy: out and input must be contiguous and the same size");
  }
  const float* in = static_cast<const float*>(input.data_ptr());
  const float* add = bias ? static_cast<const float*>(bias->data_ptr()) : nullptr;
  float* dst = static_cast<float*>(out.data_ptr());
  for (int64_t i = 0; i < input.numel(); ++i) {
    dst[i] = static_cast<float>(in[i] * scale) + (add ? add[i] : 0.0f);
  }
  // A kernel launch would be checked here; nothing was launched, so no error is pending.
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw std::runtime_error(cudaGetErrorString(err));
  }
}

int64_t leading_size(torch::stable::Tensor const& input) { return input.size(0); }

// vLLM-MUSA builds its stable library with -DCUDA_VERSION=0, so that the paths vLLM gates on a
// recent CUDA (Blackwell's) compile out.
#ifndef CUDA_VERSION
#error "built without -DCUDA_VERSION"
#endif
#if CUDA_VERSION >= 12080
int64_t blackwell_paths() { return 1; }
#else
int64_t blackwell_paths() { return 0; }
#endif
