// CPU-backed simulator of torch_musa's native module (_MUSAC).
//
// Tensors on the PrivateUse1 key (renamed "musa" from Python) live in host memory. Only what a real
// backend must provide is written here: allocator with statistics, device guard with streams and
// timed events, the hooks interface, generators, profiler stubs, explicit view/copy kernels and a
// boxed fallback to the CPU kernels. Everything else of the torch.musa surface is Python
// (torch_musa/ in the simulator).
//
// This file is the Python module; the runtime is in sim_runtime.cpp and the operators in
// sim_kernels.cpp, which include neither Python nor the C++ frontend (they compile faster).
// sim_mccl.cpp holds the distributed backend.

#include <torch/csrc/Device.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/Storage.h>
#include <torch/csrc/utils/pybind.h>

#include "sim_internal.h"

#include <pthread.h>

#include <string>

namespace torchada_sim {

// ---------------------------------------------------------------- unified CPU memory
// The Python half of sim_runtime.cpp's unified CPU memory: edit_device takes Python objects.
c10::Device to_device(py::handle obj) {
  if (THPDevice_Check(obj.ptr())) return reinterpret_cast<THPDevice*>(obj.ptr())->device;
  if (py::isinstance<py::int_>(obj)) return c10::Device(kMusa, obj.cast<c10::DeviceIndex>());
  return c10::Device(obj.cast<std::string>());
}

// torch_musa's storage.edit_device: the storage keeps its memory and now belongs to `device`.
void edit_device(py::handle storage_obj, py::handle device_obj) {
  TORCH_CHECK_TYPE(THPStorage_Check(storage_obj.ptr()),
                   "edit_device(): argument 'self' must be Storage, not ",
                   Py_TYPE(storage_obj.ptr())->tp_name);
  const c10::Storage& storage = THPStorage_Unpack(storage_obj.ptr());
  c10::Device device = to_device(device_obj);
  if (!device.has_index()) device = c10::Device(device.type(), t_current_device);
  const void* p = storage.data();
  // Where the hardware would fault later, on the first access, the simulator refuses now.
  if (p != nullptr && device.type() == kMusa) {
    check_device(device.index());
    TORCH_CHECK(is_unified_ptr(p) || is_pinned_ptr(p) || is_device_ptr(p), "edit_device: the ",
                storage.nbytes(), " bytes of this storage are pageable host memory, which a MUSA ",
                "device cannot access (its kernels would fault on them). Only memory from the ",
                "unified CPU allocator (PYTORCH_MUSA_ALLOC_CONF=cpu:unified or ",
                "torch_musa.use_unified_cpu_allocator()) can become device memory in place.");
  }
  if (p != nullptr && device.type() == c10::DeviceType::CPU) {
    TORCH_CHECK(!is_device_ptr(p), "edit_device: the ", storage.nbytes(),
                " bytes of this storage are MUSA device memory, which the host cannot access.");
  }
  storage.unsafeGetStorageImpl()->_mutable_data_ptr_no_checks().unsafe_set_device(device);
}

// ---------------------------------------------------------------- python bindings
void configure(int device_count, int64_t total_memory) {
  TORCH_CHECK(device_count >= 0 && device_count <= kMaxDevices, "device count must be in [0, ",
              kMaxDevices, "], got ", device_count);
  g_device_count = device_count;
  g_total_memory = total_memory;
  install_allocators(device_count);
  register_hooks();
  pthread_atfork(nullptr, nullptr, [] {
    if (g_initialized.load()) g_in_bad_fork = true;
  });
}

py::dict memory_stats_raw(int device) {
  check_device(device);
  auto& s = g_stats[device];
  py::dict d;
  const char* pools[3] = {"all", "small_pool", "large_pool"};
  for (int p = 0; p < 3; ++p) {
    d[py::str(std::string("bytes.") + pools[p])] =
        py::make_tuple(s.bytes[p].current.load(), s.bytes[p].peak.load(),
                       s.bytes[p].allocated.load(), s.bytes[p].freed.load());
    d[py::str(std::string("count.") + pools[p])] =
        py::make_tuple(s.count[p].current.load(), s.count[p].peak.load(),
                       s.count[p].allocated.load(), s.count[p].freed.load());
  }
  d["num_ooms"] = s.num_ooms.load();
  d["num_device_alloc"] = s.num_device_alloc.load();
  d["num_device_free"] = s.num_device_free.load();
  return d;
}

void reset_peak(int device) { reset_peak_stats(static_cast<c10::DeviceIndex>(device)); }

void reset_accumulated(int device) {
  reset_accumulated_stats(static_cast<c10::DeviceIndex>(device));
}

void bind_graph(py::module& m);  // sim_graph.cpp

}  // namespace torchada_sim

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace torchada_sim;
  m.def("_sim_configure", &configure);
  m.def("_sim_use_device_allocator", &use_device_allocator);
  bind_graph(m);
  m.def("_sim_register_process_group_mccl", &register_process_group_mccl);
  m.def("_musa_getDeviceCount", [] { return g_device_count; });
  m.def("_musa_getDevice", [] { return static_cast<int>(t_current_device); });
  m.def("_musa_setDevice", [](int d) {
    check_device(d);
    t_current_device = static_cast<c10::DeviceIndex>(d);
  });
  m.def("_musa_exchangeDevice", [](int d) {
    int old = t_current_device;
    if (d >= 0) {
      check_device(d);
      t_current_device = static_cast<c10::DeviceIndex>(d);
    }
    return old;
  });
  m.def("_musa_init", [] { g_initialized = true; });
  m.def("_musa_isInBadFork", [] { return g_in_bad_fork; });
  m.def("_musa_synchronize", [] {});
  m.def("_musa_getCurrentStream", [](int d) {
    if (d < 0) d = t_current_device;
    check_device(d);
    return py::make_tuple(t_current_stream[d], d, static_cast<int>(kMusa));
  });
  // What _MusaStreamBase.musa_stream reads, on every torch (torch.Stream.native_handle, which
  // reaches the guard's getStreamNativeHandle, came with torch 2.10 or 2.11).
  m.def("_sim_stream_native_handle", [](int device_index, int64_t stream_id) {
    return reinterpret_cast<uintptr_t>(
        stream_native_handle(static_cast<c10::DeviceIndex>(device_index), stream_id));
  });
  // torch_musa parses keywords, all optional (Module.cpp: PyMusaSetStream).
  m.def(
      "_musa_setStream",
      [](int64_t stream_id, int device_index, int /*device_type*/) {
        check_device(device_index);
        t_current_stream[device_index] = stream_id;
        t_current_device = static_cast<c10::DeviceIndex>(device_index);
      },
      py::arg("stream_id") = 0,
      py::arg("device_index") = 0,
      py::arg("device_type") = 0);
  m.def("_musa_default_generator", [](int idx) {
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(default_generator(static_cast<c10::DeviceIndex>(idx))));
  });
  m.def("_musa_memoryStatsRaw", &memory_stats_raw);
  m.def("_musa_resetPeakMemoryStats", &reset_peak);
  m.def("_musa_resetAccumulatedMemoryStats", &reset_accumulated);
  m.def("_musa_setMemoryFraction", [](double fraction, int device) {
    check_device(device);
    g_stats[device].fraction = fraction;
  });
  m.def("_musa_getMemoryFraction", [](int device) {
    check_device(device);
    return g_stats[device].fraction;
  });
  m.def("_musa_totalMemory", [] { return g_total_memory; });
  m.def("_musa_isPinnedPtr", [](uintptr_t p) { return is_pinned_ptr(reinterpret_cast<void*>(p)); });
  m.def("_musa_register_unified_cpu_allocator", &register_unified_cpu_allocator);
  m.def("_musa_reset_unified_cpu_allocator", &reset_unified_cpu_allocator);
  m.def("_edit_device_musa", &edit_device);
  // torch.Event.elapsed_time accepts no subclass as its argument; torch_musa's Event base is
  // native.
  m.def("_musa_elapsedTime", [](uintptr_t a, uintptr_t b) {
    return elapsed_time(reinterpret_cast<void*>(a), reinterpret_cast<void*>(b));
  });
  m.def("_get_allow_tf32", [] { return g_allow_tf32; });
  // A bool and nothing else, in torch_musa's words (its METH_O binding checks PyBool).
  m.def("_set_allow_tf32", [](py::handle v) {
    TORCH_CHECK(
        PyBool_Check(v.ptr()),
        "set_allow_tf32_cublas expects a bool, but got ",
        Py_TYPE(v.ptr())->tp_name);
    g_allow_tf32 = v.ptr() == Py_True;
  });
}
