// Device checks on the kinds of objects that answer is_cuda(): tensors, devices, the deprecated
// type object, stable-ABI tensors and packed sequences.
#include <torch/extension.h>
#include <torch/csrc/stable/tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <vector>

namespace checks {

using torch::nn::utils::rnn::PackedSequence;

bool on_gpu(const at::Tensor& t) { return t.is_cuda() && t.device().is_cuda(); }

bool all_on_gpu(const std::vector<at::Tensor>& tensors) {
  for (const auto& t : tensors) {
    if (!t.is_cuda()) return false;
  }
  return true;
}

// The deprecated type object has is_cuda() but nothing for other backends: the port asks the
// tensor itself.
bool legacy_on_gpu(const at::Tensor& t) { return t.type().is_cuda(); }

bool legacy_through_variable(const at::Tensor& t) {
  auto kind = t.type();
  return kind.is_cuda();
}

// Stable-ABI tensors answer is_cuda() only.
bool stable_on_gpu(const torch::stable::Tensor& st) { return st.is_cuda(); }

bool sequence_on_gpu(const PackedSequence& seq) { return seq.is_cuda() && seq.data().is_cuda(); }

at::Device gpu(int index) { return at::Device(at::kCUDA, index); }

c10::Device gpu_c10(int index) { return c10::Device(c10::kCUDA, index); }

at::TensorOptions gpu_float() { return at::TensorOptions().device(torch::kCUDA).dtype(at::kFloat); }

int current_gpu() {
  c10::cuda::OptionalCUDAGuard guard;
  return static_cast<int>(c10::cuda::current_device());
}

}  // namespace checks
