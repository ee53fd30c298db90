// The Python side of torchada's native library, in one translation unit: the module's entry point
// (last), and the pieces that live in Python's own type slots (Tensor.to's device argument,
// torch.device identity and Tensor.is_cuda). One unit pays torch's Python headers once; the
// dispatcher's side is the other unit (dispatcher.cpp), so that two cores build the library.
// Measured by bench/bench_native.py (test_cold_build) and bench/native_units.py.

#include "torchada_native.h"

#include <torch/csrc/Device.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <ATen/PythonTorchFunctionTLS.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

// =================================================================================================
// Tensor.to with "cuda" devices read as MUSA devices, in C so that every .to() call (CPU ones
// included) pays a few type checks rather than another Python frame.
//
// The dispatcher-level translation (dispatcher.cpp) already makes tensor.to("cuda") produce
// a musa tensor, but torch decides whether .to() may return `self` by comparing devices, and a musa
// tensor is never on "cuda": x.to("cuda") would copy a tensor that CUDA would hand back as is. So
// the device argument is rewritten before torch sees it, by make_tensor_to: a method descriptor
// calling the method it stands in for. torchada puts it where torch's C Tensor.to is reached:
// Tensor.orig_to, which torch_musa's own Tensor.to wrapper calls last (the wrapper runs as before,
// at no extra Python frame), or Tensor.to itself when there is no such wrapper.

namespace torchada_native {

namespace {
std::array<PyObject*, 130> g_musa_devices{};  // musa:<index>, slot index + 1 (index -1 .. 128)
}  // namespace

PyObject* musa_device(c10::DeviceIndex index) {
  const size_t slot = static_cast<size_t>(static_cast<int>(index) + 1);
  if (slot >= g_musa_devices.size()) {
    return THPDevice_New(c10::Device(kMusa, index));
  }
  if (g_musa_devices[slot] == nullptr) {
    g_musa_devices[slot] = THPDevice_New(c10::Device(kMusa, index));
    if (g_musa_devices[slot] == nullptr) return nullptr;
  }
  Py_INCREF(g_musa_devices[slot]);
  return g_musa_devices[slot];
}

namespace {

PyObject* g_prev_to = nullptr;                   // the Tensor.to this one calls (strong reference)
PyObject* g_last_spec = nullptr;                 // one-entry cache: most programs use one string
PyObject* g_last_device = nullptr;
std::string g_to_doc;

// torch's own parser, so that a malformed string fails with torch's error (naming the string).
// Kept out of the hot path: translating C++ exceptions costs a warning-handler swap per call.
PyObject* parse_cuda(const char* s, Py_ssize_t n) {
  HANDLE_TH_ERRORS
  const c10::Device parsed(std::string(s, static_cast<size_t>(n)));
  return musa_device(parsed.index());
  END_HANDLE_TH_ERRORS
}

// New reference to the musa device that a CUDA device spec (torch.device or str) names; nullptr
// with no error set when `spec` is not a CUDA spec. Malformed "cuda:..." strings raise torch's own
// parser error, which names the string.
PyObject* translate(PyObject* spec) {
  if (THPDevice_Check(spec)) {
    const c10::Device& d = reinterpret_cast<THPDevice*>(spec)->device;
    return d.type() == kCuda ? musa_device(d.index()) : nullptr;
  }
  if (!PyUnicode_Check(spec)) return nullptr;
  if (spec == g_last_spec) {
    Py_XINCREF(g_last_device);
    return g_last_device;
  }
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(spec, &n);
  if (s == nullptr) {  // not encodable: leave it to torch, which reports it as for any device
    PyErr_Clear();
    return nullptr;
  }
  PyObject* result = nullptr;
  if (n >= 4 && std::memcmp(s, "cuda", 4) == 0 && (n == 4 || s[4] == ':')) {
    result = parse_cuda(s, n);
    if (result == nullptr) return nullptr;
  }
  if (PyUnicode_CheckExact(spec)) {
    Py_INCREF(spec);
    Py_XINCREF(result);
    Py_XSETREF(g_last_spec, spec);
    Py_XSETREF(g_last_device, result);
  }
  return result;
}

// Name the device the user wrote in the pending exception, as the dispatcher path does.
void add_device_context(PyObject* user, PyObject* translated) {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value != nullptr) {
    PyObject* args = PyObject_GetAttrString(value, "args");
    if (args != nullptr && PyTuple_Check(args) && PyTuple_GET_SIZE(args) >= 1 &&
        PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
      PyObject* first = PyUnicode_FromFormat("%U (torchada: device '%S' runs on MUSA as '%S')",
                                             PyTuple_GET_ITEM(args, 0), user, translated);
      if (first != nullptr) {
        PyObject* rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
        PyObject* prefix = PyTuple_Pack(1, first);
        PyObject* joined = (rest && prefix) ? PySequence_Concat(prefix, rest) : nullptr;
        if (joined != nullptr) PyObject_SetAttrString(value, "args", joined);
        Py_XDECREF(joined);
        Py_XDECREF(prefix);
        Py_XDECREF(rest);
        Py_DECREF(first);
      }
    }
    Py_XDECREF(args);
    PyErr_Clear();  // a failure to annotate must not replace the user's error
  }
  PyErr_Restore(type, value, tb);
}

// Calls `callee(*args, **kw)` where args[0] is the tensor, with the device argument (args[1] or
// the `device` keyword) read as MUSA when it names CUDA. Nothing here throws C++ exceptions
// (parse_cuda converts its own), so no HANDLE_TH_ERRORS on this hot path.
PyObject* call_translating(PyObject* callee, PyObject* const* args, Py_ssize_t nargs,
                           PyObject* kwnames) {
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  const Py_ssize_t total = nargs + nkw;
  Py_ssize_t slots[2] = {nargs > 1 ? 1 : -1, -1};
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "device") == 0) {
      slots[1] = nargs + i;
      break;
    }
  }
  PyObject* translated[2] = {nullptr, nullptr};
  for (int k = 0; k < 2; ++k) {
    if (slots[k] < 0) continue;
    translated[k] = translate(args[slots[k]]);
    if (translated[k] == nullptr && PyErr_Occurred()) {
      Py_XDECREF(translated[0]);
      return nullptr;
    }
  }
  if (translated[0] == nullptr && translated[1] == nullptr) {
    return PyObject_Vectorcall(callee, args, static_cast<size_t>(nargs), kwnames);
  }
  PyObject* small[8];
  std::vector<PyObject*> large;
  PyObject** call = small;
  if (total > 8) {
    try {
      large.resize(static_cast<size_t>(total));
    } catch (const std::bad_alloc&) {
      Py_XDECREF(translated[0]);
      Py_XDECREF(translated[1]);
      return PyErr_NoMemory();
    }
    call = large.data();
  }
  std::memcpy(call, args, static_cast<size_t>(total) * sizeof(PyObject*));
  for (int k = 0; k < 2; ++k) {
    if (translated[k] != nullptr) call[slots[k]] = translated[k];
  }
  PyObject* result = PyObject_Vectorcall(callee, call, static_cast<size_t>(nargs), kwnames);
  for (int k = 0; k < 2; ++k) {
    if (translated[k] == nullptr) continue;
    if (result == nullptr) add_device_context(args[slots[k]], translated[k]);
    Py_DECREF(translated[k]);
  }
  return result;
}

// Tensor.to as a method: prepends self and calls the Tensor.to it replaced.
PyObject* tensor_to(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  PyObject* small[9];
  std::vector<PyObject*> large;
  PyObject** call = small;
  if (total + 1 > 9) {
    try {
      large.resize(static_cast<size_t>(total + 1));
    } catch (const std::bad_alloc&) {
      return PyErr_NoMemory();
    }
    call = large.data();
  }
  call[0] = self;
  if (total > 0) std::memcpy(call + 1, args, static_cast<size_t>(total) * sizeof(PyObject*));
  return call_translating(g_prev_to, call, nargs + 1, kwnames);
}

PyMethodDef g_to_def = {"to", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(
                                  tensor_to)),
                        METH_FASTCALL | METH_KEYWORDS, nullptr};

// A method descriptor of `tensor_type` that translates CUDA devices, then calls `previous`.
pybind11::object make_tensor_to(pybind11::object tensor_type, pybind11::object previous) {
  TORCH_CHECK(PyType_Check(tensor_type.ptr()), "make_tensor_to expects a type");
  Py_INCREF(previous.ptr());
  Py_XSETREF(g_prev_to, previous.ptr());
  if (g_to_doc.empty()) {
    pybind11::object doc = pybind11::getattr(previous, "__doc__", pybind11::none());
    g_to_doc = doc.is_none() ? std::string("Tensor.to") : doc.cast<std::string>();
    g_to_doc += "\n\n('cuda' devices run on MUSA: torchada)";
    g_to_def.ml_doc = g_to_doc.c_str();
  }
  PyObject* descr =
      PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(tensor_type.ptr()), &g_to_def);
  if (descr == nullptr) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::object>(descr);
}

// The same translation, for Python code that wants it (and for the tests to compare with).
pybind11::object translate_spec(pybind11::handle spec) {
  PyObject* r = translate(spec.ptr());
  if (r == nullptr) {
    if (PyErr_Occurred()) throw pybind11::error_already_set();
    return pybind11::none();
  }
  return pybind11::reinterpret_steal<pybind11::object>(r);
}

}  // namespace

void init_device_methods(pybind11::module_& m) {
  m.def("make_tensor_to", &make_tensor_to,
        "A Tensor.to method descriptor reading 'cuda' devices as 'musa' before calling "
        "`previous`.");
  m.def("translate_device", &translate_spec,
        "torch.device('musa', N) for a 'cuda[:N]' spec, None for anything else.");
}

}  // namespace torchada_native

// =================================================================================================
// "cuda" is the MUSA device in identity checks as well: torch.device("cuda:N") equals and hashes
// like musa:N, and Tensor.is_cuda answers True for musa tensors.
//
// Both live in C types that Python cannot patch (torch.device and TensorBase are static types),
// and both sit on hot paths (every device comparison, every `x.is_cuda`), so the switch is made in
// the type slots themselves: torch.device's tp_richcompare/tp_hash, and the PyGetSetDef behind the
// TensorBase.is_cuda descriptor. Each replacement does its own check and then calls torch's
// function, so CPU tensors and non-CUDA devices take torch's path plus a type comparison. Turning
// the switch off puts torch's slots back.

namespace torchada_native {
namespace {

richcmpfunc g_torch_richcompare = nullptr;  // torch's slots, saved while ours are in place
hashfunc g_torch_hash = nullptr;
PyGetSetDescrObject* g_is_cuda_descr = nullptr;
PyGetSetDef* g_torch_is_cuda = nullptr;
PyGetSetDef g_is_cuda_def{};

PyObject* device_richcompare(PyObject* a, PyObject* b, int op) {
  if ((op == Py_EQ || op == Py_NE) && THPDevice_Check(a) && THPDevice_Check(b)) {
    const bool equal = to_musa(reinterpret_cast<THPDevice*>(a)->device) ==
                       to_musa(reinterpret_cast<THPDevice*>(b)->device);
    return PyBool_FromLong(equal == (op == Py_EQ));
  }
  return g_torch_richcompare(a, b, op);
}

// torch's hash of the musa device, so that equal devices hash equally whatever torch's formula is.
Py_hash_t device_hash(PyObject* self) {
  const c10::Device& d = reinterpret_cast<THPDevice*>(self)->device;
  if (d.type() != kCuda) return g_torch_hash(self);
  PyObject* musa = musa_device(d.index());
  if (musa == nullptr) return -1;
  const Py_hash_t h = g_torch_hash(musa);
  Py_DECREF(musa);
  return h;
}

// Plain tensors and parameters (no torch-function mode active) are answered here, musa counting
// as CUDA. Everything else goes through torch's getter, which hands subclasses and modes the
// question; their answer usually comes back here for the plain tensor underneath.
PyObject* is_cuda_get(PyObject* self, void* closure) {
  if (!THPVariable_CheckExact(self) || at::impl::torch_function_mode_enabled()) {
    PyObject* answer = g_torch_is_cuda->get(self, closure);
    if (answer != Py_False || !THPVariable_Check(self)) return answer;
    if (THPVariable_Unpack(self).device().type() != kMusa) return answer;
    Py_DECREF(answer);
    Py_RETURN_TRUE;
  }
  const c10::DeviceType type = THPVariable_Unpack(self).device().type();
  return PyBool_FromLong(type == kCuda || type == kMusa);
}

void set_cuda_is_musa(bool on) {
  PyTypeObject* device_type = &THPDeviceType;
  if (on && g_torch_richcompare == nullptr) {
    g_torch_richcompare = device_type->tp_richcompare;
    g_torch_hash = device_type->tp_hash;
    device_type->tp_richcompare = device_richcompare;
    device_type->tp_hash = device_hash;
  } else if (!on && g_torch_richcompare != nullptr) {
    device_type->tp_richcompare = g_torch_richcompare;
    device_type->tp_hash = g_torch_hash;
    g_torch_richcompare = nullptr;
    g_torch_hash = nullptr;
  }
  PyType_Modified(device_type);

  if (g_is_cuda_descr == nullptr) {
    PyObject* tensor_base = reinterpret_cast<PyObject*>(THPVariableClass);
    TORCH_CHECK(tensor_base != nullptr, "torch's Tensor type is not initialised yet");
    PyObject* descr = PyObject_GetAttrString(tensor_base, "is_cuda");  // the class attribute
    if (descr == nullptr) throw pybind11::error_already_set();
    const bool is_getset = Py_IS_TYPE(descr, &PyGetSetDescr_Type);
    if (!is_getset) {
      Py_DECREF(descr);
      TORCH_CHECK(false, "Tensor.is_cuda is not torch's C getter; it is left as it is");
    }
    g_is_cuda_descr = reinterpret_cast<PyGetSetDescrObject*>(descr);  // kept: a class attribute
    g_torch_is_cuda = g_is_cuda_descr->d_getset;
    g_is_cuda_def = *g_torch_is_cuda;
    g_is_cuda_def.get = is_cuda_get;
  }
  g_is_cuda_descr->d_getset = on ? &g_is_cuda_def : g_torch_is_cuda;
}

bool cuda_is_musa() { return g_torch_richcompare != nullptr; }

}  // namespace

void init_device_identity(pybind11::module_& m) {
  m.def("set_cuda_is_musa", &set_cuda_is_musa, pybind11::arg("on"),
        "True: torch.device('cuda:N') equals and hashes as musa:N, Tensor.is_cuda is True on "
        "musa tensors. False: torch's answers.");
  m.def("cuda_is_musa", &cuda_is_musa, "Whether set_cuda_is_musa(True) is in effect.");
}

}  // namespace torchada_native

// =================================================================================================
// Python entry point (loaded through torchada._native.library).

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torchada native helpers; use through torchada._native.library";
  torchada_native::init_device_translation(m);
  torchada_native::init_device_methods(m);
  torchada_native::init_device_identity(m);
  torchada_native::init_op_overrides(m);
}
