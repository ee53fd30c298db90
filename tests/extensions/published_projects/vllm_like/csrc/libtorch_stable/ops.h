// Kernels of the stable-ABI library, declared as vLLM declares its libtorch_stable ops.
#pragma once

#include <torch/csrc/stable/tensor.h>

#include <cstdint>
#include <optional>

void scaled_copy(torch::stable::Tensor& out, torch::stable::Tensor const& input, double scale,
                 std::optional<torch::stable::Tensor> const& bias);
int64_t leading_size(torch::stable::Tensor const& input);
int64_t blackwell_paths();
