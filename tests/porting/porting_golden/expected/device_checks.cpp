// Device checks on the kinds of objects that answer is_cuda(): tensors, devices, the deprecated
// type object, stable-ABI tensors and packed sequences.
#include <torch/extension.h>
#include <torch/csrc/stable/tensor.h>
#include <torch_musa/csrc/aten/musa/MUSAContext.h>
#include <torch_musa/csrc/core/MUSAGuard.h>

#include <vector>

namespace checks {

using torch::nn::utils::rnn::PackedSequence;

bool on_gpu(const at::Tensor& t) { return t.is_privateuseone() && t.device().is_privateuseone(); }

bool all_on_gpu(const std::vector<at::Tensor>& tensors) {
  for (const auto& t : tensors) {
    if (!t.is_privateuseone()) return false;
  }
  return true;
}

// The deprecated type object has is_cuda() but nothing for other backends: the port asks the
// tensor itself.
bool legacy_on_gpu(const at::Tensor& t) { return t.is_privateuseone(); }

bool legacy_through_variable(const at::Tensor& t) {
  auto kind = t.type();
  return kind.is_cuda();
}

// Stable-ABI tensors answer is_cuda() only.
bool stable_on_gpu(const torch::stable::Tensor& st) { return st.is_cuda(); }

bool sequence_on_gpu(const PackedSequence& seq) { return seq.is_cuda() && seq.data().is_cuda(); }

at::Device gpu(int index) { return at::Device(at::kMUSA, index); }

c10::Device gpu_c10(int index) { return c10::Device(c10::kPrivateUse1, index); }

at::TensorOptions gpu_float() { return at::TensorOptions().device(torch::kMUSA).dtype(at::kFloat); }

int current_gpu() {
  c10::musa::OptionalMUSAGuard guard;
  return static_cast<int>(c10::musa::current_device());
}

}  // namespace checks
