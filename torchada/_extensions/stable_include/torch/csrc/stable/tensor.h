// torch/csrc/stable/tensor.h from torchada's stable-ABI kit. A torch that has this header (2.8 and
// later) gets its own, wherever the kit's directory is on the include path. For torch 2.7: a
// torch::stable::Tensor over torch's C shim (aoti_torch_*), owning its AtenTensorHandle as
// torch's later class does, with the accessors stable kernels use.
#pragma once
#if defined(__has_include_next)
#if __has_include_next(<torch/csrc/stable/tensor.h>)
#define TORCHADA_STABLE_TENSOR_FROM_TORCH
#include_next <torch/csrc/stable/tensor.h>
#endif
#endif

#ifndef TORCHADA_STABLE_TENSOR_FROM_TORCH
// Marks the kit's own class (tests check which one a build got).
#define TORCHADA_STABLE_TENSOR_BACKPORT
#include <torch/csrc/inductor/aoti_torch/c/shim.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace torch {
namespace stable {

class Tensor {
 public:
  Tensor() = default;
  // Takes ownership of `handle` (it is deleted with the last copy).
  explicit Tensor(AtenTensorHandle handle)
      : handle_(handle, [](AtenTensorHandle h) { aoti_torch_delete_tensor_object(h); }) {}

  AtenTensorHandle get() const { return handle_.get(); }
  bool defined() const { return handle_ != nullptr; }

  void* data_ptr() const {
    void* ptr = nullptr;
    check(aoti_torch_get_data_ptr(get(), &ptr), "data_ptr");
    return ptr;
  }
  void* mutable_data_ptr() const { return data_ptr(); }
  const void* const_data_ptr() const { return data_ptr(); }
  template <typename T>
  T* mutable_data_ptr() const { return static_cast<T*>(data_ptr()); }
  template <typename T>
  const T* const_data_ptr() const { return static_cast<const T*>(data_ptr()); }

  int64_t dim() const { return query(aoti_torch_get_dim, "dim"); }
  int64_t numel() const { return query(aoti_torch_get_numel, "numel"); }
  int64_t storage_offset() const { return query(aoti_torch_get_storage_offset, "storage_offset"); }
  int64_t size(int64_t d) const {
    int64_t value = 0;
    check(aoti_torch_get_size(get(), wrap(d), &value), "size");
    return value;
  }
  int64_t stride(int64_t d) const {
    int64_t value = 0;
    check(aoti_torch_get_stride(get(), wrap(d), &value), "stride");
    return value;
  }
  bool is_contiguous() const {
    // Row-major with no gaps; dimensions of size 1 may have any stride (torch's rule).
    int64_t expected = 1;
    for (int64_t d = dim() - 1; d >= 0; --d) {
      const int64_t n = size(d);
      if (n == 1) continue;
      if (stride(d) != expected) return false;
      expected *= n;
    }
    return true;
  }
  int32_t get_device() const {
    int32_t index = 0;
    check(aoti_torch_get_device_index(get(), &index), "get_device");
    return index;
  }

 private:
  std::shared_ptr<AtenTensorOpaque> handle_;

  int64_t wrap(int64_t d) const { return d < 0 ? d + dim() : d; }
  int64_t query(AOTITorchError (*fn)(AtenTensorHandle, int64_t*), const char* what) const {
    int64_t value = 0;
    check(fn(get(), &value), what);
    return value;
  }
  static void check(AOTITorchError err, const char* what) {
    if (err != 0) {
      throw std::runtime_error(std::string("torch::stable::Tensor::") + what + " failed");
    }
  }
};

}  // namespace stable
}  // namespace torch
#endif  // TORCHADA_STABLE_TENSOR_FROM_TORCH
