// torchada_stable_box.h, from torchada's stable-ABI kit: force-include it (-include <path>, path
// from torchada.utils.cpp_extension.stable_compat_box_header()) in stable-ABI sources.
//
// It gives TORCH_BOX(&fn) to the torches that lack it (those before 2.11; torch 2.11 and later
// define their own in <torch/csrc/stable/library.h>). From torch 2.10 on, torch's library.h is
// included here and TORCH_BOX is given only where it did not define one; torch 2.7 to 2.9 get the
// C shim only, since torch 2.7's library.h cannot be included twice.
//
// TORCH_BOX(&fn) is the boxed form (void(StableIValue* stack, uint64_t num_args, uint64_t
// num_outputs)) of a plain C++ kernel, for STABLE_TORCH_LIBRARY_IMPL's
// m.impl("op", TORCH_BOX(&fn)). A torch that has TORCH_BOX keeps its own. Supported here:
// tensors (torch::stable::Tensor or AtenTensorHandle),
// std::optional of them, bool, integers and floating-point numbers as parameters; void, one
// tensor or one number as the result.
#pragma once
// CUDA_VERSION is 0 where the build did not define it, in a MUSA build (MUSA's runtime header
// is there): MUSA is no CUDA release, so code gated on a CUDA version (#if CUDA_VERSION >=
// 12080) keeps its CUDA-only paths off, as vLLM-MUSA's -DCUDA_VERSION=0 does. The same for a
// setup.py build and a JIT one (load(extra_cflags=["-include", ...])). A -DCUDA_VERSION=N of the
// build's own is kept; a CUDA build without MUSA's headers gets cuda.h's.
#if !defined(CUDA_VERSION) && defined(__has_include)
#if __has_include(<musa_runtime.h>)
#define CUDA_VERSION 0
#endif
#endif
#ifdef __cplusplus
#include <torch/csrc/api/include/torch/version.h>
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 10)
#include <torch/csrc/stable/library.h>
#else
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#endif

#ifndef TORCH_BOX
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace torchada_stable_box {

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

template <typename T>
inline constexpr bool unsupported_v = false;

// A stack slot holds a tensor as an AtenTensorHandle the kernel owns, a number in its low bytes,
// and an optional as nullptr or a heap-allocated slot the kernel frees (torch's stable ABI).
template <typename T>
T unbox(StableIValue value) {
  if constexpr (std::is_same_v<T, AtenTensorHandle>) {
    return reinterpret_cast<AtenTensorHandle>(value);
  } else if constexpr (is_optional<T>::value) {
    if (value == 0) {
      return std::nullopt;
    }
    StableIValue* inner = reinterpret_cast<StableIValue*>(value);
    T result(unbox<typename T::value_type>(*inner));
    delete inner;
    return result;
  } else if constexpr (std::is_class_v<T> && std::is_constructible_v<T, AtenTensorHandle>) {
    return T(reinterpret_cast<AtenTensorHandle>(value));
  } else if constexpr (std::is_arithmetic_v<T>) {
    T result;
    std::memcpy(&result, &value, sizeof(T));
    return result;
  } else {
    static_assert(unsupported_v<T>,
                  "TORCH_BOX (torchada's, for a torch without it): unsupported parameter type");
  }
}

template <typename T>
StableIValue box(T value) {
  if constexpr (std::is_same_v<T, AtenTensorHandle>) {
    return reinterpret_cast<StableIValue>(value);
  } else if constexpr (std::is_class_v<T>) {
    // A torch::stable::Tensor: the caller gets a handle of its own; ours goes with `value`.
    AtenTensorHandle handle = nullptr;
    if (aoti_torch_new_tensor_handle(value.get(), &handle) != 0) {
      throw std::runtime_error("TORCH_BOX: could not hand the result tensor back to torch");
    }
    return reinterpret_cast<StableIValue>(handle);
  } else if constexpr (std::is_arithmetic_v<T>) {
    StableIValue result = 0;
    std::memcpy(&result, &value, sizeof(T));
    return result;
  } else {
    static_assert(unsupported_v<T>,
                  "TORCH_BOX (torchada's, for a torch without it): unsupported result type");
  }
}

template <typename F>
struct boxer;

template <typename R, typename... Args>
struct boxer<R(Args...)> {
  template <R (*fn)(Args...)>
  static void boxed(StableIValue* stack, uint64_t num_args, uint64_t num_outputs) {
    constexpr uint64_t outputs = std::is_void_v<R> ? 0 : 1;
    if (num_args != sizeof...(Args) || num_outputs != outputs) {
      throw std::runtime_error(
          "TORCH_BOX: the registered schema has " + std::to_string(num_args) + " arguments and " +
          std::to_string(num_outputs) + " results; the kernel takes " +
          std::to_string(sizeof...(Args)) + " and returns " + std::to_string(outputs));
    }
    call<fn>(stack, std::index_sequence_for<Args...>{});
  }

 private:
  template <R (*fn)(Args...), std::size_t... I>
  static void call(StableIValue* stack, std::index_sequence<I...>) {
    std::tuple<std::decay_t<Args>...> args(unbox<std::decay_t<Args>>(stack[I])...);
    if constexpr (std::is_void_v<R>) {
      fn(std::get<I>(args)...);
    } else {
      stack[0] = box<std::decay_t<R>>(fn(std::get<I>(args)...));
    }
  }
};

}  // namespace torchada_stable_box

#define TORCH_BOX(func)                                                                  \
  (&torchada_stable_box::boxer<std::remove_pointer_t<std::remove_reference_t<decltype(func)>>>:: \
       template boxed<(func)>)
#endif  // TORCH_BOX
#endif  // __cplusplus
