// Operator overrides for the MUSA backend (PrivateUse1): the contract between an override and
// torchada. Guide: docs/native_ops.md. Header-only, so that an extension outside torchada (see
// examples/native_override) builds against it exactly as torchada's own library does.
//
// An override is an object with a name, the operator it replaces and a kernel factory. Nothing is
// registered when a library that defines overrides is loaded: torchada installs each enabled
// override at run time into its own torch::Library, and removing it drops that Library, which
// hands the operator back to whatever kernel it had before (the backend's own, a composite, or
// the backend's boxed fallback).

#pragma once

// The dispatcher, torch::Library and pybind11 with torch's type casters; not torch/extension.h,
// which would bring in the C++ frontend and autograd into every override's compile.
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/library.h>
#include <torch/version.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace torchada_ops {
inline namespace v1 {

namespace detail {

// The Python callable that receives call traces (TORCHADA_DEBUG_CPP_OPS=1), or nullptr. Owned
// reference, swapped under the GIL; deliberately leaked at exit (no GIL in static destructors).
inline std::atomic<PyObject*>& trace_sink() {
  static std::atomic<PyObject*> sink{nullptr};
  return sink;
}

inline void emit(const std::string& line) {
  if (!Py_IsInitialized()) return;
  pybind11::gil_scoped_acquire gil;
  PyObject* sink = trace_sink().load();
  if (sink == nullptr) return;
  PyObject* result = PyObject_CallFunction(sink, "s", line.c_str());
  if (result == nullptr) {
    PyErr_Clear();  // a broken logger must not fail the operator
  } else {
    Py_DECREF(result);
  }
}

inline std::string describe(const at::Tensor& t) {
  std::ostringstream out;
  if (!t.defined()) return "undefined";
  out << c10::toString(t.scalar_type()) << t.sizes() << " on " << t.device();
  return out.str();
}

// Collects the dispatcher's "Overriding a previously registered kernel" warning (torchada
// reports the shadowed kernel itself, once per install); every other warning passes through.
class ShadowWarningFilter final : public c10::WarningHandler {
 public:
  explicit ShadowWarningFilter(c10::WarningHandler* next) : next_(next) {}
  void process(const c10::Warning& warning) override {
    if (warning.msg().find("Overriding a previously registered kernel") != std::string::npos) {
      return;
    }
    next_->process(warning);
  }

 private:
  c10::WarningHandler* next_;
};

// The kernel an operator runs for the MUSA key now, kept to be called after an override
// replaced it. torch 2.9 hands out a copy (SafeKernelFunction, which also notices when the library
// that registered it is gone); older torch has no public way to it, so the copy is read from the
// dispatcher's table through the handle's private entry (an explicit instantiation may name a
// private member). Backend and composite kernels are never deregistered, so the plain copy holds.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9)
using CapturedKernel = c10::SafeKernelFunction;

inline CapturedKernel capture_kernel(const c10::OperatorHandle& op) {
  return op.getComputedKernelForDispatchKey(c10::DispatchKey::PrivateUse1);
}

inline std::string kernel_origin(const CapturedKernel& kernel, const c10::OperatorHandle&) {
  return kernel.debug();
}
#else
using CapturedKernel = c10::KernelFunction;

struct OperatorDefTag {};
auto operator_def_member(OperatorDefTag);
template <auto Member>
struct OperatorDefAccess {
  friend auto operator_def_member(OperatorDefTag) { return Member; }
};
template struct OperatorDefAccess<&c10::OperatorHandle::operatorDef_>;

inline CapturedKernel capture_kernel(const c10::OperatorHandle& op) {
  auto* def = op.*operator_def_member(OperatorDefTag{});
  return def->op.lookup(c10::DispatchKeySet(c10::DispatchKey::PrivateUse1));
}

// The "PrivateUse1: ..." line of the computed table: where that kernel was registered.
inline std::string kernel_origin(const CapturedKernel&, const c10::OperatorHandle& op) {
  const std::string table = op.dumpComputedTable();
  const std::string key = "PrivateUse1: ";
  const auto at = table.find(key);
  if (at == std::string::npos) return "unknown";
  const auto end = table.find('\n', at);
  return table.substr(at + key.size(), end == std::string::npos ? end : end - at - key.size());
}
#endif

}  // namespace detail

// Whether a dtype is one of the four floating types every backend implements.
inline bool is_standard_floating(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// One operator override. Define it at namespace scope next to its kernel:
//
//   at::Tensor my_op(const at::Tensor& self);
//   torchada_ops::Override my_op_override{"my_op", "aten::my_op", "what it does better",
//                                         TORCHADA_KERNEL(my_op)};
//
// `name` is what the environment calls it (TORCHADA_DISABLE_OP_OVERRIDE_<NAME>): by convention
// the operator's name without namespace or overload, lower case.
class Override {
 public:
  using KernelFactory = torch::CppFunction (*)();

  Override(const char* name, const char* op, const char* summary, KernelFactory kernel)
      : name_(name), op_(op), summary_(summary), kernel_(kernel) {}
  Override(const Override&) = delete;
  Override& operator=(const Override&) = delete;

  const char* name() const { return name_; }
  const char* op() const { return op_; }
  const char* summary() const { return summary_; }
  uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }

  // Call at the top of the kernel: counts the call and, when tracing is on, logs it with the
  // path taken ("|x| < inf", "backend kernel", ...).
  void trace(const at::Tensor& self, const char* path) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    if (detail::trace_sink().load(std::memory_order_relaxed) != nullptr) {
      detail::emit(std::string(name_) + ": " + op_ + "(" + detail::describe(self) + ") -> " + path);
    }
  }

  // The kernel this override replaced, called with the same arguments: for the inputs the
  // override does not handle, so that they behave exactly as they would without it. (A kernel
  // cannot redispatch to the key it is registered on; this calls the captured kernel directly.)
  template <class Ret, class... Args>
  Ret previous(const Args&... args) const {
    std::shared_ptr<const Captured> captured;
    {
      std::lock_guard<std::mutex> lock(previous_mutex_);
      captured = previous_;
    }
    TORCH_CHECK(captured != nullptr, "torchada: override '", name_,
                "' called its previous kernel while not installed");
    torch::jit::Stack stack;
    stack.reserve(sizeof...(Args));
    (torch::jit::push(stack, args), ...);
    captured->kernel.callBoxed(captured->op, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                               &stack);
    TORCH_INTERNAL_ASSERT(stack.size() == 1, "expected one result from ", op_);
    return std::move(stack.back()).to<Ret>();
  }

  struct InstallInfo {
    std::string previous;  // where the kernel it replaces was registered
    bool shadows;          // true when that kernel is the backend's own (not composite/fallback)
  };

  // Registers the kernel for PrivateUse1. Idempotent.
  InstallInfo install() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (library_) return info_;
    auto op = lookup();
    auto captured = std::make_shared<const Captured>(Captured{op, detail::capture_kernel(op)});
    info_ = {detail::kernel_origin(captured->kernel, op),
             op.hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)};
    {
      std::lock_guard<std::mutex> plock(previous_mutex_);
      previous_ = std::move(captured);
    }
    auto library = std::make_unique<torch::Library>(
        torch::Library::IMPL, op.schema().name().substr(0, op.schema().name().find("::")),
        c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    {
      detail::ShadowWarningFilter filter(c10::WarningUtils::get_warning_handler());
      c10::WarningUtils::WarningHandlerGuard guard(&filter);
      library->impl(unqualified().c_str(), kernel_());
    }
    library_ = std::move(library);
    return info_;
  }

  // Drops the registration: the operator goes back to the kernel it had before install().
  void remove() {
    std::lock_guard<std::mutex> lock(mutex_);
    library_.reset();
    // previous_ stays: a call already running on another thread may still be using it.
  }

  bool installed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return library_ != nullptr;
  }

 private:
  struct Captured {
    c10::OperatorHandle op;
    detail::CapturedKernel kernel;
  };

  c10::OperatorHandle lookup() const {
    std::string full(op_);
    const auto dot = full.find('.');
    const std::string base = full.substr(0, dot);
    const std::string overload = dot == std::string::npos ? "" : full.substr(dot + 1);
    auto handle = c10::Dispatcher::singleton().findSchema({base, overload});
    TORCH_CHECK(handle.has_value(), "torchada: override '", name_, "' names operator '", op_,
                "', which this PyTorch does not define");
    return *handle;
  }

  // "aten::add.Tensor" -> "add.Tensor": what torch::Library::impl expects inside its namespace.
  std::string unqualified() const {
    std::string full(op_);
    const auto sep = full.find("::");
    return sep == std::string::npos ? full : full.substr(sep + 2);
  }

  const char* name_;
  const char* op_;
  const char* summary_;
  KernelFactory kernel_;
  std::atomic<uint64_t> calls_{0};
  mutable std::mutex mutex_;
  std::unique_ptr<torch::Library> library_;
  InstallInfo info_;
  mutable std::mutex previous_mutex_;
  std::shared_ptr<const Captured> previous_;
};

// Adds the Python functions torchada drives an extension's overrides with. Call it once from the
// extension's PYBIND11_MODULE with the extension's table of overrides.
template <size_t N>
void bind(pybind11::module_& m, Override* const (&table)[N]) {
  namespace py = pybind11;
  std::vector<Override*> overrides(table, table + N);
  auto find = [overrides](const std::string& name) -> Override& {
    for (Override* o : overrides) {
      if (name == o->name()) return *o;
    }
    std::string known;
    for (Override* o : overrides) known += std::string(known.empty() ? "" : ", ") + o->name();
    throw py::key_error("no operator override named '" + name + "' (known: " + known + ")");
  };
  m.def(
      "op_overrides",
      [overrides]() {
        py::list out;
        for (Override* o : overrides) {
          py::dict d;
          d["name"] = o->name();
          d["op"] = o->op();
          d["summary"] = o->summary();
          d["installed"] = o->installed();
          d["calls"] = o->calls();
          out.append(d);
        }
        return out;
      },
      "The operator overrides this library defines, with their state.");
  m.def(
      "install_op_override",
      [find](const std::string& name) {
        Override::InstallInfo info = find(name).install();
        py::dict d;
        d["previous"] = info.previous;
        d["shadows"] = info.shadows;
        return d;
      },
      py::arg("name"), "Register one override for the MUSA key (idempotent).");
  m.def(
      "remove_op_override", [find](const std::string& name) { find(name).remove(); },
      py::arg("name"), "Drop one override: the operator gets its previous kernel back.");
  m.def(
      "set_op_override_trace",
      [](py::object sink) {
        PyObject* next = sink.is_none() ? nullptr : sink.inc_ref().ptr();
        PyObject* old = detail::trace_sink().exchange(next);
        Py_XDECREF(old);
      },
      py::arg("sink"), "A callable taking one line per overridden call, or None.");
}

}  // namespace v1
}  // namespace torchada_ops

// The kernel factory of an Override: TORCHADA_KERNEL(my_kernel).
#define TORCHADA_KERNEL(fn) \
  +[]() -> torch::CppFunction { return torch::CppFunction(TORCH_FN(fn)); }
