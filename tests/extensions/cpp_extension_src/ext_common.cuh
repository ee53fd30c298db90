// Shared by the extension's sources.
#pragma once

#include <c10/cuda/CUDAException.h>

constexpr int kRampStart = 0;

#define EXT_RUNTIME_CHECK(EXPR) C10_CUDA_CHECK(EXPR)
