// torchada's native library: pieces that must live below Python to cost nothing on hot paths.
// Each feature exposes an init function that module.cpp calls to add its Python bindings; nothing
// is registered with torch when the library is loaded, only when Python asks for it (the operator
// overrides included: loading the library for device translation installs none of them).

#pragma once

// Only what these declarations need: torch/extension.h would bring in most of torch (the C++
// frontend, autograd, nn) and make each of the library's translation units a compile of it.
// Each source includes the torch headers it uses.
#include <c10/core/Device.h>
#include <pybind11/pybind11.h>

namespace torchada_native {

constexpr c10::DeviceType kCuda = c10::DeviceType::CUDA;
constexpr c10::DeviceType kMusa = c10::DeviceType::PrivateUse1;

// The device a CUDA device stands for: musa with the same index; any other device unchanged.
inline c10::Device to_musa(c10::Device d) {
  return d.type() == kCuda ? c10::Device(kMusa, d.index()) : d;
}

// New reference to torch.device("musa", index), cached per index (nullptr with an error set).
PyObject* musa_device(c10::DeviceIndex index);

// "cuda" devices served by the MUSA (PrivateUse1) backend: dispatcher.cpp.
void init_device_translation(pybind11::module_& m);

// Tensor.to reading "cuda" devices as MUSA ones before torch compares devices: module.cpp.
void init_device_methods(pybind11::module_& m);

// torch.device("cuda:N") == musa:N and Tensor.is_cuda on musa tensors: module.cpp.
void init_device_identity(pybind11::module_& m);

// Operator overrides for the MUSA key, installed one by one from Python: dispatcher.cpp.
void init_op_overrides(pybind11::module_& m);

}  // namespace torchada_native
