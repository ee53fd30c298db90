// The generator state a MUSA graph registers (csrc/aten/musa/MUSAGeneratorImpl.h): only what
// MUSAGraph.h needs to name it.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <cstdint>

namespace at {
struct MUSAGeneratorState : public c10::intrusive_ptr_target {
  uint64_t seed_ = 0;
  uint64_t philox_offset_per_thread_ = 0;
  uint32_t offset_intragraph_ = 0;
};
}  // namespace at
