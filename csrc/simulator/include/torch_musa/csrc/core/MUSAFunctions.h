// Device queries of torch_musa (c10::musa::device_count and friends), over the guard
// implementation registered for c10::DeviceType::PrivateUse1, so they agree with torch.musa.
#pragma once

#include <c10/core/Device.h>

#include <torch_musa/csrc/core/MUSAStream.h>

namespace c10::musa {

inline c10::DeviceIndex device_count() noexcept { return detail::guard_impl()->deviceCount(); }

inline c10::DeviceIndex current_device() { return detail::guard_impl()->getDevice().index(); }

inline void set_device(c10::DeviceIndex device) {
  detail::guard_impl()->setDevice(c10::Device(c10::DeviceType::PrivateUse1, device));
}

inline void device_synchronize() {
  detail::guard_impl()->synchronizeDevice(current_device());
}

}  // namespace c10::musa
