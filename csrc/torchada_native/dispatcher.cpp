// The dispatcher's side of torchada's native library, in one translation unit: device translation
// below Python (CUDA kernels and guard that serve the MUSA backend), then torchada's operator
// overrides. The Python side is the other unit (module.cpp), so that two cores build the library.

#include "torchada_native.h"
#include "../torch_features.h"
#include "op_override.h"

// torch/library.h before the generated ATen/ops headers, which expect the tensor types declared.
#include <torch/library.h>
#include <ATen/ops/empty_ops.h>
#include <ATen/ops/empty_strided_ops.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/lt.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>
#include <limits>

// =================================================================================================
// "cuda" devices served by the MUSA backend (PrivateUse1), with no Python on the way.
//
// In a PyTorch build without CUDA, a "cuda" factory reaches the dispatcher with the CUDA key (after
// torch.cuda._lazy_init(), which torchada answers with torch_musa's), where no kernel exists, and
// moving a tensor to "cuda" asks for a CUDA device guard, whose slot is empty. This part fills both
// slots, at run time and only when asked (so loading the library changes nothing):
//   - unboxed CUDA kernels for empty.memory_format / empty_strided (every factory, *_like, new_*
//     and _to_copy allocate through them) that redispatch straight to the PrivateUse1 kernel;
//   - a boxed kernel that rewrites Device arguments to PrivateUse1, registered per operator for
//     the factories with backend-specific kernels (tril_indices, ...) and those the MUSA backend
//     runs with kernels of its own, and as the CUDA fallback (on first use of the device) for the
//     operators of libraries loaded later;
//   - a CUDA device guard that delegates every call to the PrivateUse1 guard, translating devices
//     and streams at the boundary.
// Registrations cannot be taken back, so a global switch makes them inert: switched off, they fail
// the way they would without torchada (NotImplementedError from kernels, "not linked with support
// for cuda devices" from the guard).


namespace torchada_native {
namespace {

std::atomic<bool> g_enabled{false};
std::mutex g_register_mutex;
bool g_registered = false;
bool g_fallback = false;

constexpr const char* kSwitchedOff =
    "torchada's device translation, which runs 'cuda' devices on MUSA, is switched off "
    "(torchada.disable() was called); use a 'musa' device, or call torchada.enable() again";

inline bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

using ::torchada_native::to_musa;  // the Device overload, beside the Stream one below
inline c10::Device to_cuda(c10::Device d) {
  return d.type() == kMusa ? c10::Device(kCuda, d.index()) : d;
}
inline c10::Stream to_musa(const c10::Stream& s) {
  return s.device_type() == kCuda ? c10::Stream(c10::Stream::UNSAFE, to_musa(s.device()), s.id())
                                  : s;
}
inline c10::Stream to_cuda(const c10::Stream& s) {
  return s.device_type() == kMusa ? c10::Stream(c10::Stream::UNSAFE, to_cuda(s.device()), s.id())
                                  : s;
}

// The backend's own error stays (type and text); the note says which device the user asked for.
void add_device_context(c10::Error& e, c10::Device user) {
  e.add_context(c10::str("torchada: device '", user, "' runs on MUSA as '", to_musa(user), "'"));
}

[[noreturn]] void kernel_switched_off(const std::string& op) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "Could not run '", op,
                              "' with arguments from the 'CUDA' backend: ", kSwitchedOff, ".");
}

// ---------------------------------------------------------------- kernels
const c10::DispatchKeySet kMusaKeys(c10::DispatchKey::PrivateUse1);

at::Tensor empty_memory_format(c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout,
                               std::optional<at::Device> device, std::optional<bool> pin_memory,
                               std::optional<at::MemoryFormat> memory_format) {
  if (!enabled()) kernel_switched_off("aten::empty.memory_format");
  const c10::Device user = device.value_or(c10::Device(kCuda));
  try {
    return at::_ops::empty_memory_format::redispatch(kMusaKeys, size, dtype, layout,
                                                     to_musa(user), pin_memory, memory_format);
  } catch (c10::Error& e) {
    add_device_context(e, user);
    throw;
  }
}

at::Tensor empty_strided(c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                         std::optional<at::Device> device, std::optional<bool> pin_memory) {
  if (!enabled()) kernel_switched_off("aten::empty_strided");
  const c10::Device user = device.value_or(c10::Device(kCuda));
  try {
    return at::_ops::empty_strided::redispatch(kMusaKeys, size, stride, dtype, layout,
                                               to_musa(user), pin_memory);
  } catch (c10::Error& e) {
    add_device_context(e, user);
    throw;
  }
}

// Any other op that reaches the CUDA key got there through a "cuda" Device argument (a CPU build
// has no CUDA tensors): rewrite those arguments and run the op on the MUSA backend.
void cuda_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet /*ks*/,
                   torch::jit::Stack* stack) {
  if (!enabled()) kernel_switched_off(c10::toString(op.schema().operator_name()));
  const size_t n = op.schema().arguments().size();
  const size_t base = stack->size() - n;
  std::optional<c10::Device> user;
  for (size_t i = base; i < stack->size(); ++i) {
    auto& iv = (*stack)[i];
    if (iv.isDevice() && iv.toDevice().type() == kCuda) {
      if (!user) user = iv.toDevice();
      iv = c10::IValue(to_musa(iv.toDevice()));
    }
  }
  try {
    op.redispatchBoxed(kMusaKeys, stack);
  } catch (c10::Error& e) {
    if (user) add_device_context(e, *user);
    throw;
  }
}

// ---------------------------------------------------------------- device guard
const c10::impl::DeviceGuardImplInterface* musa_impl() {
  return c10::impl::getDeviceGuardImpl(kMusa);
}

void guard_check_enabled() {
  TORCH_CHECK(enabled(), "PyTorch is not linked with support for cuda devices: ", kSwitchedOff,
              ".");
}

struct CudaAsMusaGuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kCuda; }

  c10::Device exchangeDevice(c10::Device d) const override {
    guard_check_enabled();
    try {
      return to_cuda(musa_impl()->exchangeDevice(to_musa(d)));
    } catch (c10::Error& e) {
      add_device_context(e, d);
      throw;
    }
  }
  c10::Device getDevice() const override {
    guard_check_enabled();
    return to_cuda(musa_impl()->getDevice());
  }
  // Never refused: the autograd engine calls setDevice on every registered guard from its worker
  // threads (where an exception would terminate the process), whatever devices the program uses.
  void setDevice(c10::Device d) const override {
    try {
      musa_impl()->setDevice(to_musa(d));
    } catch (c10::Error& e) {
      add_device_context(e, d);
      throw;
    }
  }
  // Undo paths (guard destructors) must work whatever the switch says, and never throw.
  // Switched off, only the entry points a "cuda" device reaches (exchangeDevice, getDevice, the
  // stream getters) refuse; everything else keeps delegating.
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (auto* p = c10::impl::device_guard_impl_registry[static_cast<size_t>(kMusa)].load()) {
      p->uncheckedSetDevice(to_musa(d));
    }
  }
  c10::Stream getStream(c10::Device d) const override {
    guard_check_enabled();
    return to_cuda(musa_impl()->getStream(to_musa(d)));
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    guard_check_enabled();
    return to_cuda(musa_impl()->getDefaultStream(to_musa(d)));
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool high_priority) const override {
    guard_check_enabled();
    return to_cuda(musa_impl()->getStreamFromGlobalPool(to_musa(d), high_priority));
  }
  c10::Stream getNewStream(c10::Device d, int priority) const override {
    guard_check_enabled();
    return to_cuda(musa_impl()->getNewStream(to_musa(d), priority));
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    return to_cuda(musa_impl()->exchangeStream(to_musa(s)));
  }
#if TORCHADA_HAS_STREAM_NATIVE_HANDLE
  void* getStreamNativeHandle(const c10::Stream s) const override {
    return musa_impl()->getStreamNativeHandle(to_musa(s));
  }
#endif
  void destroyEvent(void* event, const c10::DeviceIndex device_index) const noexcept override {
    if (auto* p = c10::impl::device_guard_impl_registry[static_cast<size_t>(kMusa)].load()) {
      p->destroyEvent(event, device_index);
    }
  }
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    musa_impl()->record(event, to_musa(stream), device_index, flag);
  }
  void block(void* event, const c10::Stream& stream) const override {
    musa_impl()->block(event, to_musa(stream));
  }
  bool queryEvent(void* event) const override { return musa_impl()->queryEvent(event); }
  c10::DeviceIndex deviceCount() const noexcept override {
    auto* p = c10::impl::device_guard_impl_registry[static_cast<size_t>(kMusa)].load();
    return p ? p->deviceCount() : 0;
  }
#if TORCHADA_HAS_DEVICE_CAPABILITY
  c10::DeviceCapability getDeviceCapability(c10::Device d) const override {
    return musa_impl()->getDeviceCapability(to_musa(d));
  }
#endif
  bool queryStream(const c10::Stream& stream) const override {
    return musa_impl()->queryStream(to_musa(stream));
  }
  void synchronizeStream(const c10::Stream& stream) const override {
    musa_impl()->synchronizeStream(to_musa(stream));
  }
#if TORCHADA_HAS_STREAM_CAPTURE_QUERY
  bool isStreamCapturing(const c10::Stream& stream) const override {
    return musa_impl()->isStreamCapturing(to_musa(stream));
  }
#endif
  void synchronizeEvent(void* event) const override { musa_impl()->synchronizeEvent(event); }
  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    musa_impl()->synchronizeDevice(device_index);
  }
  void recordDataPtrOnStream(const c10::DataPtr& data_ptr,
                             const c10::Stream& stream) const override {
    musa_impl()->recordDataPtrOnStream(data_ptr, to_musa(stream));
  }
  double elapsedTime(void* event1, void* event2,
                     const c10::DeviceIndex device_index) const override {
    return musa_impl()->elapsedTime(event1, event2, device_index);
  }
};

// ---------------------------------------------------------------- registration
bool has_device_argument(const c10::FunctionSchema& schema) {
  for (const auto& arg : schema.arguments()) {
    auto type = arg.type();
    if (type->kind() == c10::TypeKind::OptionalType) {
      type = type->castRaw<c10::OptionalType>()->getElementType();
    }
    if (type->kind() == c10::TypeKind::DeviceObjType) return true;
  }
  return false;
}

// The CUDA key is reached only through a "cuda" Device argument (a CPU build has no CUDA
// tensors), so the operators that need a CUDA kernel are those with a Device argument and no CUDA
// kernel of their own:
//   - those the MUSA backend runs with its own kernel: their composite kernel would run on the CUDA
//     key instead (some need a device-specific stub only the backend's kernel avoids), so "cuda"
//     takes the backend's kernel, as "musa" does;
//   - those with no kernel for the CUDA key at all (tril_indices, ...).
// One registration each costs a small part of what a backend fallback does at this point (it
// rewrites every operator's dispatch table); the fallback, for the operators of libraries loaded
// later, is registered on first use of the device.
bool needs_cuda_kernel(const c10::OperatorHandle& op) {
  return !op.hasKernelForDispatchKey(c10::DispatchKey::CUDA) &&
         (op.hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1) ||
          !op.hasComputedKernelForDispatchKey(c10::DispatchKey::CUDA));
}

std::string full_name(const c10::OperatorName& name) {
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

// Every operator with a Device argument that needs the kernel, by full name. Reading every
// operator's schema takes milliseconds; the answer depends only on the libraries that define the
// operators, so the caller keeps it.
std::vector<std::string> device_argument_ops() {
  auto& dispatcher = c10::Dispatcher::singleton();
  std::vector<std::string> out;
  for (const auto& name : dispatcher.getAllOpNames()) {
    if (name.name == "aten::empty" || name.name == "aten::empty_strided") continue;  // see above
    auto op = dispatcher.findOp(name);
    if (op && has_device_argument(op->schema()) && needs_cuda_kernel(*op)) {
      out.push_back(full_name(name));
    }
  }
  return out;
}

void register_device_argument_kernels(const std::vector<std::string>& names) {
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const auto& full : names) {
    const auto dot = full.find('.');
    c10::OperatorName name(full.substr(0, dot),
                           dot == std::string::npos ? "" : full.substr(dot + 1));
    auto op = dispatcher.findOp(name);
    if (!op || !needs_cuda_kernel(*op)) continue;  // gone, or served since the list was made
    // Leaked on purpose, like the libraries below.
    new c10::RegistrationHandleRAII(dispatcher.registerImpl(
        name, c10::DispatchKey::CUDA, c10::KernelFunction::makeFromBoxedFunction<&cuda_fallback>(),
        std::nullopt, nullptr, "torchada: 'cuda' runs the MUSA backend's kernel"));
  }
}

bool has_cuda_kernel(const char* name, const char* overload) {
  auto op = c10::Dispatcher::singleton().findSchema({name, overload});
  return op && op->hasKernelForDispatchKey(c10::DispatchKey::CUDA);
}

// Why the CUDA slots cannot be taken, or "" when they can: only a build without CUDA, with the
// MUSA backend's guard in place, qualifies.
std::string blocker() {
  if (c10::impl::hasDeviceGuardImpl(kCuda)) {
    return "a CUDA device guard is already registered (this PyTorch has CUDA support)";
  }
  if (!c10::impl::hasDeviceGuardImpl(kMusa)) {
    return "no MUSA (PrivateUse1) device guard is registered: torch_musa is not loaded";
  }
  if (has_cuda_kernel("aten::empty", "memory_format") ||
      has_cuda_kernel("aten::empty_strided", "")) {
    return "aten::empty already has a CUDA kernel (this PyTorch has CUDA support)";
  }
  if (c10::Dispatcher::singleton().hasBackendFallbackForDispatchKey(c10::DispatchKey::CUDA)) {
    return "another library already registered a fallback for the CUDA dispatch key";
  }
  return "";
}

void register_translation(const std::vector<std::string>& device_ops) {
  std::lock_guard<std::mutex> lock(g_register_mutex);
  if (g_registered) return;
  const std::string why = blocker();
  TORCH_CHECK(why.empty(), "torchada cannot serve 'cuda' devices natively: ", why);
  // Leaked on purpose: the dispatcher and the guard registry keep pointing at them until exit.
  // The registrar, not registerDeviceGuard (torch 2.8+): every torch has it.
  c10::impl::DeviceGuardImplRegistrar(kCuda, new CudaAsMusaGuardImpl());
  auto* kernels = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::CUDA,
                                     __FILE__, __LINE__);
  kernels->impl("empty.memory_format", TORCH_FN(empty_memory_format));
  kernels->impl("empty_strided", TORCH_FN(empty_strided));
  register_device_argument_kernels(device_ops);
  g_registered = true;
}

// The same kernel as a fallback for the CUDA key: it serves the operators of libraries loaded
// after register_translation(). Registered once, on first use of the device, since it rewrites
// every operator's dispatch table. Returns whether torchada's fallback is in place.
bool register_fallback() {
  std::lock_guard<std::mutex> lock(g_register_mutex);
  TORCH_CHECK(g_registered, "torchada: register_device_translation() comes first");
  if (g_fallback) return true;
  if (c10::Dispatcher::singleton().hasBackendFallbackForDispatchKey(c10::DispatchKey::CUDA)) {
    return false;  // another library's; the operators known at registration keep torchada's kernel
  }
  auto* fallback =
      new torch::Library(torch::Library::IMPL, "_", c10::DispatchKey::CUDA, __FILE__, __LINE__);
  fallback->fallback(torch::CppFunction::makeFromBoxedFunction<&cuda_fallback>());
  g_fallback = true;
  return true;
}

}  // namespace

void init_device_translation(pybind11::module_& m) {
  m.def("device_translation_blocker", &blocker,
        "Why 'cuda' devices cannot be served natively in this process, or '' when they can.");
  m.def("device_argument_ops", &device_argument_ops,
        "The operators with a Device argument that need a CUDA kernel, by full name.");
  m.def("register_device_translation", &register_translation, pybind11::arg("device_ops"),
        "Fill the CUDA kernel and guard slots, for device_ops (from device_argument_ops()) "
        "among the operators (once per process; switched off until enabled).");
  m.def("register_device_fallback", &register_fallback,
        "Add the CUDA fallback for operators registered since (once per process); whether "
        "torchada's fallback is in place.");
  m.def("device_fallback_registered", [] {
    std::lock_guard<std::mutex> lock(g_register_mutex);
    return g_fallback;
  });
  m.def("device_translation_registered", [] {
    std::lock_guard<std::mutex> lock(g_register_mutex);
    return g_registered;
  });
  m.def("set_device_translation_enabled", [](bool on) { g_enabled.store(on); });
  m.def("device_translation_enabled", [] { return enabled(); });
}

}  // namespace torchada_native

// =================================================================================================
// torchada's operator overrides for the MUSA backend. Installed only when asked for
// (TORCHADA_ENABLE_CPP_OPS=1) through torchada._ops.overrides; see op_override.h for the contract and
// docs/native_ops.md for how to add one.

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
