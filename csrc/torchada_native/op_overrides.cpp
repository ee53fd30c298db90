// torchada's operator overrides for the MUSA backend. Installed only when asked for
// (TORCHADA_ENABLE_CPP_OPS=1) through torchada._ops.overrides; see op_override.h for the contract and
// docs/native_ops.md for how to add one.

#include <limits>

#include "op_override.h"
#include "torchada_native.h"

namespace torchada_native {
namespace {

// ---------------------------------------------------------------- isfinite
// torch's isfinite is a composite of four device kernels, (x == x) * (|x| != inf); for the
// floating dtypes one comparison says the same, |x| < inf (false for NaN and for +-inf): two
// kernels, and nothing is read back to the host. Other dtypes keep the previous kernel.
at::Tensor isfinite(const at::Tensor& self);

torchada_ops::Override isfinite_override{
    "isfinite", "aten::isfinite",
    "floating dtypes as |x| < inf: two device kernels instead of four, no host round trip",
    TORCHADA_KERNEL(isfinite)};

at::Tensor isfinite(const at::Tensor& self) {
  if (!torchada_ops::is_standard_floating(self.scalar_type())) {
    isfinite_override.trace(self, "previous kernel");
    return isfinite_override.previous<at::Tensor>(self);
  }
  isfinite_override.trace(self, "|x| < inf");
  // Written into a tensor laid out like the input, as torch's result is, whatever layout the
  // backend's abs returns.
  at::Tensor out = at::empty_like(self, self.options().dtype(at::kBool));
  return at::lt_out(out, at::abs(self), std::numeric_limits<double>::infinity());
}

// ---------------------------------------------------------------- table
torchada_ops::Override* const kOverrides[] = {
    &isfinite_override,
};

}  // namespace

void init_op_overrides(pybind11::module_& m) { torchada_ops::bind(m, kOverrides); }

}  // namespace torchada_native
