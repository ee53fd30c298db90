// torch_musa's graph id types (csrc/core/MUSAGraphsC10Utils.h): a capture's id and the id of a
// graph's private memory pool.
#pragma once

#include <utility>

namespace c10::musa {
using CaptureId_t = unsigned long long;
// The first value is nonzero for a pool a capture made, the second for graph_pool_handle()'s.
using MempoolId_t = std::pair<CaptureId_t, CaptureId_t>;
}  // namespace c10::musa

namespace at::musa {
using c10::musa::CaptureId_t;
using c10::musa::MempoolId_t;
}  // namespace at::musa
