// ATen's view of torch_musa: streams, guards, device queries and checks under at::musa.
#pragma once

#include <torch_musa/csrc/aten/musa/Exceptions.h>
#include <torch_musa/csrc/core/MUSAFunctions.h>
#include <torch_musa/csrc/core/MUSAGuard.h>
#include <torch_musa/csrc/core/MUSAStream.h>

#include <musa_runtime_api.h>

namespace at::musa {
using c10::musa::current_device;
using c10::musa::device_count;
using c10::musa::device_synchronize;
using c10::musa::set_device;

inline bool is_available() { return device_count() > 0; }
}  // namespace at::musa
