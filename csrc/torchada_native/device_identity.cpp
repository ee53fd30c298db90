// "cuda" is the MUSA device in identity checks as well: torch.device("cuda:N") equals and hashes
// like musa:N, and Tensor.is_cuda answers True for musa tensors.
//
// Both live in C types that Python cannot patch (torch.device and TensorBase are static types),
// and both sit on hot paths (every device comparison, every `x.is_cuda`), so the switch is made in
// the type slots themselves: torch.device's tp_richcompare/tp_hash, and the PyGetSetDef behind the
// TensorBase.is_cuda descriptor. Each replacement does its own check and then calls torch's
// function, so CPU tensors and non-CUDA devices take torch's path plus a type comparison. Turning
// the switch off puts torch's slots back.

#include "torchada_native.h"

#include <torch/csrc/Device.h>
#include <torch/csrc/autograd/python_variable.h>
#include <ATen/PythonTorchFunctionTLS.h>

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
