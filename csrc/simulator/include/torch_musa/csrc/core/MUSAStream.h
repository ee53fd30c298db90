// c10::musa::MUSAStream and the current-stream API of torch_musa, over the guard implementation
// torch_musa registers for c10::DeviceType::PrivateUse1. What they do is what the backend does:
// on the simulator, streams are its (synchronous) host-side streams.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/DeviceType.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <cstddef>
#include <functional>
#include <ostream>

#include <musa_runtime_api.h>

#include "../../../../../torch_features.h"
#include <torch_musa/csrc/aten/utils/Utils.h>
#if !TORCHADA_HAS_STREAM_NATIVE_HANDLE
#include <pybind11/pybind11.h>
#endif

namespace c10::musa {

namespace detail {

// torch_musa is the PrivateUse1 backend: its guard implementation is c10's for that type.
inline const c10::impl::DeviceGuardImplInterface* guard_impl() {
  return c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1);
}

inline c10::Device musa_device(c10::DeviceIndex index) {
  // -1 means "the current device", as everywhere in c10.
  return c10::Device(c10::DeviceType::PrivateUse1,
                     index < 0 ? guard_impl()->getDevice().index() : index);
}

inline c10::Device check_musa_device(c10::Device device) {
  TORCH_CHECK(device.type() == c10::DeviceType::PrivateUse1, "expected a musa device, got ",
              device);
  return device.has_index() ? device : musa_device(-1);
}

}  // namespace detail

class MUSAStream {
 public:
  enum Unchecked { UNCHECKED };

  explicit MUSAStream(c10::Stream stream) : stream_(stream) {
    TORCH_CHECK(stream_.device_type() == c10::DeviceType::PrivateUse1,
                "expected a musa stream, got a stream on ", stream_.device());
  }
  explicit MUSAStream(Unchecked, c10::Stream stream) : stream_(stream) {}

  bool operator==(const MUSAStream& other) const noexcept { return stream_ == other.stream_; }
  bool operator!=(const MUSAStream& other) const noexcept { return stream_ != other.stream_; }

  // CUDA code passes streams to runtime calls and kernel launches by implicit conversion.
  operator musaStream_t() const { return stream(); }
  operator c10::Stream() const { return unwrap(); }

  c10::DeviceType device_type() const { return c10::DeviceType::PrivateUse1; }
  c10::DeviceIndex device_index() const { return stream_.device_index(); }
  c10::Device device() const { return stream_.device(); }
  c10::StreamId id() const { return stream_.id(); }

  bool query() const { return detail::guard_impl()->queryStream(stream_); }
  void synchronize() const { detail::guard_impl()->synchronizeStream(stream_); }

  // The backend's native handle of this stream.
  musaStream_t stream() const {
#if TORCHADA_HAS_STREAM_NATIVE_HANDLE
    return static_cast<musaStream_t>(detail::guard_impl()->getStreamNativeHandle(stream_));
#else
    // A torch without getStreamNativeHandle (before 2.11): the simulated backend answers through
    // its module, as Stream.musa_stream does.
    pybind11::gil_scoped_acquire gil;
    auto handle = pybind11::module_::import("torch_musa._MUSAC")
                      .attr("_sim_stream_native_handle")(stream_.device_index(), stream_.id());
    return reinterpret_cast<musaStream_t>(handle.cast<uintptr_t>());
#endif
  }

  c10::Stream unwrap() const { return stream_; }

 private:
  c10::Stream stream_;
};

inline MUSAStream getStreamFromPool(bool isHighPriority = false, c10::DeviceIndex device = -1) {
  return MUSAStream(MUSAStream::UNCHECKED, detail::guard_impl()->getStreamFromGlobalPool(
                                               detail::musa_device(device), isHighPriority));
}

inline MUSAStream getDefaultMUSAStream(c10::DeviceIndex device_index = -1) {
  return MUSAStream(MUSAStream::UNCHECKED,
                    detail::guard_impl()->getDefaultStream(detail::musa_device(device_index)));
}

inline MUSAStream getCurrentMUSAStream(c10::DeviceIndex device_index = -1) {
  return MUSAStream(MUSAStream::UNCHECKED,
                    detail::guard_impl()->getStream(detail::musa_device(device_index)));
}

// Makes `stream` current on its own device; the current device does not change.
inline void setCurrentMUSAStream(MUSAStream stream) {
  detail::guard_impl()->exchangeStream(stream.unwrap());
}

inline std::ostream& operator<<(std::ostream& out, const MUSAStream& stream) {
  return out << stream.unwrap();
}

}  // namespace c10::musa

namespace at::musa {
using c10::musa::getCurrentMUSAStream;
using c10::musa::getDefaultMUSAStream;
using c10::musa::getStreamFromPool;
using c10::musa::MUSAStream;
using c10::musa::setCurrentMUSAStream;
}  // namespace at::musa

template <>
struct std::hash<c10::musa::MUSAStream> {
  std::size_t operator()(const c10::musa::MUSAStream& s) const noexcept {
    return std::hash<c10::Stream>{}(s.unwrap());
  }
};
