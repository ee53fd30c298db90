// Argument checks of the extension, in a project include directory.
#pragma once

#include <ATen/ATen.h>

inline void expect_device_tensor(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.is_cuda(), what, " must be a CUDA tensor, got one on ", t.device());
}
