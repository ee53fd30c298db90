// What the torch being compiled against offers, for the C++ that must build on every torch a
// torch_musa release pairs with (2.7.1 .. 2.13). Use sites test a feature's name, never a version:
// the versions live here, next to what each one brought.
//
// Each is a virtual method or a data member of a torch class, which the preprocessor cannot see,
// so torch/version.h is the test, except where a header of its own came with the feature. Where
// only the versions we test bracket the change, the later one is named: an override left out
// still compiles, an override of a method that does not exist does not.

#pragma once

#include <torch/version.h>

#define TORCHADA_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// c10::impl::DeviceGuardImplInterface::getStreamNativeHandle: absent in 2.9, present in 2.11.
#define TORCHADA_HAS_STREAM_NATIVE_HANDLE TORCHADA_TORCH_AT_LEAST(2, 11)

// DeviceGuardImplInterface::isStreamCapturing: absent in 2.11, present in 2.12.
#define TORCHADA_HAS_STREAM_CAPTURE_QUERY TORCHADA_TORCH_AT_LEAST(2, 12)

// c10::DeviceCapability and DeviceGuardImplInterface::getDeviceCapability, which came with their
// own header (absent in 2.9, present in 2.11).
#define TORCHADA_HAS_DEVICE_CAPABILITY __has_include(<c10/core/DeviceCapability.h>)

// c10d::Backend::getBackendOptions() and the group_name / global_ranks_in_group members of
// c10d::Backend::Options: absent in 2.7 (each backend's Options declared its own), present in 2.9.
#define TORCHADA_HAS_BACKEND_OPTIONS TORCHADA_TORCH_AT_LEAST(2, 9)

// c10::DeviceAllocator, the allocator torch.accelerator's memory functions ask for: absent in
// 2.7, present in 2.9.
#define TORCHADA_HAS_DEVICE_ALLOCATOR TORCHADA_TORCH_AT_LEAST(2, 9)

// DeviceAllocator::getMemoryInfo (torch.accelerator.get_memory_info): absent in 2.9, present in
// 2.11.
#define TORCHADA_HAS_DEVICE_MEMORY_INFO TORCHADA_TORCH_AT_LEAST(2, 11)
