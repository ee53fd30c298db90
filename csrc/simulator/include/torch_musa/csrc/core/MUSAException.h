// Checking MUSA runtime results: C10_MUSA_CHECK and friends raise a c10::Error (a RuntimeError
// in Python) naming the runtime's error, as torch_musa's do.
#pragma once

#include <c10/macros/Macros.h>
#include <c10/util/Exception.h>

#include <musa_runtime_api.h>

namespace c10::musa::detail {

[[noreturn]] inline void musa_check_failed(musaError_t error, const char* expr) {
  TORCH_CHECK(false, "MUSA error: ", musaGetErrorString(error), " (error code ",
              static_cast<int>(error), ") from ", expr);
}

}  // namespace c10::musa::detail

#define C10_MUSA_CHECK(EXPR)                                          \
  do {                                                                \
    const musaError_t torchada_musa_err_ = (EXPR);                    \
    if (C10_UNLIKELY(torchada_musa_err_ != musaSuccess)) {            \
      ::c10::musa::detail::musa_check_failed(torchada_musa_err_, #EXPR); \
    }                                                                 \
  } while (0)

#define C10_MUSA_CHECK_WARN(EXPR)                                              \
  do {                                                                         \
    const musaError_t torchada_musa_err_ = (EXPR);                             \
    if (C10_UNLIKELY(torchada_musa_err_ != musaSuccess)) {                     \
      TORCH_WARN("MUSA warning: ", musaGetErrorString(torchada_musa_err_));    \
    }                                                                          \
  } while (0)

// Evaluates EXPR and clears the runtime's last error, whatever EXPR returned.
#define C10_MUSA_IGNORE_ERROR(EXPR) \
  do {                              \
    (void)(EXPR);                   \
    (void)musaGetLastError();       \
  } while (0)

// After a kernel launch: the launch reports its errors through the runtime's last error.
#define C10_MUSA_KERNEL_LAUNCH_CHECK() C10_MUSA_CHECK(musaGetLastError())
