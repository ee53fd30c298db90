#pragma once
// Shared helpers for the fused kernels; included by fused_stream.cu.
#include <cuda_runtime.h>
#include <c10/cuda/CUDAException.h>

inline int sm_count() {
  int dev = 0, sms = 0;
  C10_CUDA_CHECK(cudaGetDevice(&dev));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

inline size_t free_bytes() {
  size_t free_b = 0, total_b = 0;
  C10_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}
