// Helpers of the process-group adapter, written against CUDA's C++ APIs.
#pragma once

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

inline void check_device_tensor(const at::Tensor& t) {
  TORCH_CHECK(t.is_cuda(), "expected a CUDA tensor, got one on ", t.device());
}
