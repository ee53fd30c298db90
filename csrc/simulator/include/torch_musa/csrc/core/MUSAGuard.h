// Device and stream guards of torch_musa (c10::musa::MUSAGuard and friends): RAII over the guard
// implementation registered for c10::DeviceType::PrivateUse1, restoring on scope exit what they
// changed. Devices and streams of any other type are rejected.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Stream.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/Exception.h>

#include <optional>
#include <utility>
#include <vector>

#include <torch_musa/csrc/core/MUSAStream.h>

namespace c10::musa {

class MUSAGuard {
 public:
  MUSAGuard() = delete;
  explicit MUSAGuard(c10::DeviceIndex device_index)
      : MUSAGuard(c10::Device(c10::DeviceType::PrivateUse1, device_index)) {}
  explicit MUSAGuard(c10::Device device)
      : original_(detail::guard_impl()->getDevice()), current_(original_) {
    set_device(device);
  }
  MUSAGuard(const MUSAGuard&) = delete;
  MUSAGuard& operator=(const MUSAGuard&) = delete;
  MUSAGuard(MUSAGuard&&) = delete;
  MUSAGuard& operator=(MUSAGuard&&) = delete;
  ~MUSAGuard() { detail::guard_impl()->uncheckedSetDevice(original_); }

  void set_device(c10::Device device) {
    device = detail::check_musa_device(device);
    if (device != current_) {
      detail::guard_impl()->setDevice(device);
    }
    current_ = device;
  }
  void reset_device(c10::Device device) { set_device(device); }
  void set_index(c10::DeviceIndex device_index) {
    set_device(c10::Device(c10::DeviceType::PrivateUse1, device_index));
  }

  c10::Device original_device() const { return original_; }
  c10::Device current_device() const { return current_; }

 private:
  c10::Device original_;
  c10::Device current_;
};

// A MUSAGuard that may hold no device (then it does nothing), e.g. for device_of(tensor).
class OptionalMUSAGuard {
 public:
  OptionalMUSAGuard() = default;
  explicit OptionalMUSAGuard(std::optional<c10::Device> device) {
    if (device.has_value()) {
      guard_.emplace(*device);
    }
  }
  explicit OptionalMUSAGuard(std::optional<c10::DeviceIndex> device_index) {
    if (device_index.has_value()) {
      guard_.emplace(*device_index);
    }
  }
  OptionalMUSAGuard(const OptionalMUSAGuard&) = delete;
  OptionalMUSAGuard& operator=(const OptionalMUSAGuard&) = delete;
  OptionalMUSAGuard(OptionalMUSAGuard&&) = delete;
  OptionalMUSAGuard& operator=(OptionalMUSAGuard&&) = delete;

  void set_device(c10::Device device) {
    if (guard_.has_value()) {
      guard_->set_device(device);
    } else {
      guard_.emplace(device);
    }
  }
  void reset_device(c10::Device device) { set_device(device); }
  void set_index(c10::DeviceIndex device_index) {
    set_device(c10::Device(c10::DeviceType::PrivateUse1, device_index));
  }

  std::optional<c10::Device> original_device() const {
    return guard_.has_value() ? std::optional<c10::Device>(guard_->original_device())
                              : std::nullopt;
  }
  std::optional<c10::Device> current_device() const {
    return guard_.has_value() ? std::optional<c10::Device>(guard_->current_device())
                              : std::nullopt;
  }
  // Restores the original device now and holds nothing afterwards.
  void reset() { guard_.reset(); }

 private:
  std::optional<MUSAGuard> guard_;
};

// Makes a stream current (and its device current) for a scope; restores both on exit.
class MUSAStreamGuard {
 public:
  MUSAStreamGuard() = delete;
  explicit MUSAStreamGuard(c10::Stream stream)
      : original_device_(detail::guard_impl()->getDevice()),
        original_stream_(MUSAStream(stream)),  // checks the type before anything changes
        current_stream_(original_stream_) {
    enter(stream);
  }
  MUSAStreamGuard(const MUSAStreamGuard&) = delete;
  MUSAStreamGuard& operator=(const MUSAStreamGuard&) = delete;
  MUSAStreamGuard(MUSAStreamGuard&&) = delete;
  MUSAStreamGuard& operator=(MUSAStreamGuard&&) = delete;
  ~MUSAStreamGuard() { leave(); }

  // A stream on another device first restores the original stream of the previous one.
  void reset_stream(c10::Stream stream) {
    MUSAStream checked(stream);
    if (checked.device() == current_stream_.device()) {
      detail::guard_impl()->exchangeStream(stream);
      current_stream_ = checked;
      return;
    }
    leave();
    enter(stream);
  }

  MUSAStream original_stream() const { return original_stream_; }
  MUSAStream current_stream() const { return current_stream_; }
  c10::Device original_device() const { return original_device_; }
  c10::Device current_device() const { return current_stream_.device(); }

 private:
  void enter(c10::Stream stream) {
    const auto* impl = detail::guard_impl();
    if (stream.device() != impl->getDevice()) {
      impl->setDevice(stream.device());
    }
    original_stream_ = MUSAStream(MUSAStream::UNCHECKED, impl->exchangeStream(stream));
    current_stream_ = MUSAStream(MUSAStream::UNCHECKED, stream);
  }
  void leave() noexcept {
    const auto* impl = detail::guard_impl();
    try {
      impl->exchangeStream(original_stream_.unwrap());
    } catch (...) {
      // A destructor must not throw; the stream of a device that went away stays as it is.
    }
    impl->uncheckedSetDevice(original_device_);
  }

  c10::Device original_device_;
  MUSAStream original_stream_;
  MUSAStream current_stream_;
};

class OptionalMUSAStreamGuard {
 public:
  OptionalMUSAStreamGuard() = default;
  explicit OptionalMUSAStreamGuard(std::optional<c10::Stream> stream) {
    if (stream.has_value()) {
      guard_.emplace(*stream);
    }
  }
  OptionalMUSAStreamGuard(const OptionalMUSAStreamGuard&) = delete;
  OptionalMUSAStreamGuard& operator=(const OptionalMUSAStreamGuard&) = delete;
  OptionalMUSAStreamGuard(OptionalMUSAStreamGuard&&) = delete;
  OptionalMUSAStreamGuard& operator=(OptionalMUSAStreamGuard&&) = delete;

  void reset_stream(c10::Stream stream) {
    if (guard_.has_value()) {
      guard_->reset_stream(stream);
    } else {
      guard_.emplace(stream);
    }
  }
  std::optional<MUSAStream> original_stream() const {
    return guard_.has_value() ? std::optional<MUSAStream>(guard_->original_stream())
                              : std::nullopt;
  }
  std::optional<MUSAStream> current_stream() const {
    return guard_.has_value() ? std::optional<MUSAStream>(guard_->current_stream())
                              : std::nullopt;
  }
  void reset() { guard_.reset(); }

 private:
  std::optional<MUSAStreamGuard> guard_;
};

// Makes each stream current on its own device for a scope; the current device does not change.
class MUSAMultiStreamGuard {
 public:
  explicit MUSAMultiStreamGuard(c10::ArrayRef<MUSAStream> streams) {
    originals_.reserve(streams.size());
    for (const MUSAStream& stream : streams) {
      originals_.push_back(detail::guard_impl()->exchangeStream(stream.unwrap()));
    }
  }
  MUSAMultiStreamGuard(const MUSAMultiStreamGuard&) = delete;
  MUSAMultiStreamGuard& operator=(const MUSAMultiStreamGuard&) = delete;
  MUSAMultiStreamGuard(MUSAMultiStreamGuard&&) = delete;
  MUSAMultiStreamGuard& operator=(MUSAMultiStreamGuard&&) = delete;
  ~MUSAMultiStreamGuard() {
    // Newest first, so a device listed twice ends on the stream it had before the guard.
    for (auto it = originals_.rbegin(); it != originals_.rend(); ++it) {
      try {
        detail::guard_impl()->exchangeStream(*it);
      } catch (...) {
      }
    }
  }

 private:
  std::vector<c10::Stream> originals_;
};

}  // namespace c10::musa

namespace at::musa {
using c10::musa::MUSAGuard;
using c10::musa::MUSAMultiStreamGuard;
using c10::musa::MUSAStreamGuard;
using c10::musa::OptionalMUSAGuard;
using c10::musa::OptionalMUSAStreamGuard;
}  // namespace at::musa
