// torch_musa's _MUSAC._MUSAGraph (csrc/core/Graph.cpp over csrc/aten/musa/MUSAGraph.{h,cpp} in
// torch_musa 2.7.1): the executable's life cycle through libmusart, with the object's leading
// members laid out as MUSAGraph.h declares them (graph_, graph_exec_, has_graph_,
// has_graph_exec_), bound by pybind11 with a shared_ptr holder as Graph.cpp binds it.
//
// What a capture records and what a replay runs is the Python side's (musa_graph/graphs.py and
// torchada._simulator.graph_capture); here are the runtime calls MUSAGraph.cpp makes:
// capture_end instantiates (musaGraphInstantiate, which fails past the driver's limit of live
// executables), reinstantiate_graph destroys the executable and instantiates it again, replay
// launches, reset and the destructor destroy both.

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace torchada_sim {
namespace {

using musaError_t = int;
using Handle = void*;

// libmusart's graph calls, bound once the Python side has loaded the simulated libmusart.
struct GraphRuntime {
  musaError_t (*create)(Handle*, unsigned) = nullptr;
  musaError_t (*destroy)(Handle) = nullptr;
  musaError_t (*instantiate)(Handle*, Handle, void*, char*, size_t) = nullptr;
  musaError_t (*exec_destroy)(Handle) = nullptr;
  musaError_t (*launch)(Handle, Handle) = nullptr;
  const char* (*error_string)(musaError_t) = nullptr;
  musaError_t (*get_last_error)() = nullptr;
};
GraphRuntime g_rt;

template <typename F>
void bind_symbol(void* lib, const char* name, F& slot) {
  void* sym = dlsym(lib, name);
  TORCH_CHECK(sym != nullptr, "simulated libmusart lacks ", name);
  slot = reinterpret_cast<F>(sym);
}

void bind_runtime(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  TORCH_CHECK(lib != nullptr, "cannot load the simulated libmusart: ", dlerror());
  bind_symbol(lib, "musaGraphCreate", g_rt.create);
  bind_symbol(lib, "musaGraphDestroy", g_rt.destroy);
  bind_symbol(lib, "musaGraphInstantiate", g_rt.instantiate);
  bind_symbol(lib, "musaGraphExecDestroy", g_rt.exec_destroy);
  bind_symbol(lib, "musaGraphLaunch", g_rt.launch);
  bind_symbol(lib, "musaGetErrorString", g_rt.error_string);
  bind_symbol(lib, "musaGetLastError", g_rt.get_last_error);
}

// C10_MUSA_CHECK as torch_musa 2.7.1 words it (csrc/core/MUSAException.cpp:13-46, with
// get_musa_check_suffix from MUSAMiscFunctions.cpp:8-18 and the device-side assertion info, which
// only warns, from MUSADeviceAssertionHost.cpp:65-69).
void musa_check(musaError_t err) {
  if (err == 0) return;
  (void)g_rt.get_last_error();
  std::string message = "MUSA error: ";
  message += g_rt.error_string(err);
  const char* blocking = getenv("MUSA_LAUNCH_BLOCKING");
  if (!(blocking && atoi(blocking))) {
    message +=
        "\nMUSA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\nFor debugging consider passing "
        "MUSA_LAUNCH_BLOCKING=1.";
  }
  message += "\n";
  TORCH_WARN("Funtions c10_retrieve_device_side_assertion_info() is not implemented now!");
  TORCH_CHECK(false, message);
}

// C10_MUSA_CHECK_WARN (csrc/core/MUSAException.h).
void musa_check_warn(musaError_t err) {
  if (err == 0) return;
  (void)g_rt.get_last_error();
  TORCH_WARN("MUSA warning: ", g_rt.error_string(err));
}

std::atomic<uint64_t> g_pool_ids{0};

struct MUSAGraph {
  // MUSAGraph.h's protected members, in its order: what the runtime calls act on.
  Handle graph_ = nullptr;
  Handle graph_exec_ = nullptr;
  bool has_graph_ = false;
  bool has_graph_exec_ = false;
  uint64_t capture_id_ = static_cast<uint64_t>(-1);
  std::pair<uint64_t, uint64_t> mempool_id_{0, 0};

  ~MUSAGraph() { reset(); }

  void capture_begin(std::optional<std::pair<uint64_t, uint64_t>> pool,
                     const std::string& capture_error_mode) {
    TORCH_CHECK(!has_graph_exec_,
                "This MUSAGraph instance already owns a captured graph. "
                "To capture a new graph, create a new instance.");
    TORCH_CHECK(capture_error_mode == "global" || capture_error_mode == "thread_local" ||
                    capture_error_mode == "relaxed",
                "Unknown capture error mode. Expected `global`, `thread_local`, or `relaxed`, got ",
                capture_error_mode);
    if (pool && (pool->first != 0 || pool->second != 0)) {
      mempool_id_ = *pool;
    } else {
      mempool_id_ = {++g_pool_ids, 0};
    }
  }

  void capture_end() {
    musa_check(g_rt.create(&graph_, 0));  // what musaStreamEndCapture hands back
    has_graph_ = true;
    musa_check(g_rt.instantiate(&graph_exec_, graph_, nullptr, nullptr, 0));
    has_graph_exec_ = true;
  }

  void reinstantiate_graph() {
    TORCH_CHECK(graph_ != nullptr && graph_exec_ != nullptr && has_graph_ && has_graph_exec_,
                "The graph_ and graph_exec_ musa have been created in the graph capture stage");
    musa_check_warn(g_rt.exec_destroy(graph_exec_));
    graph_exec_ = nullptr;
    musa_check(g_rt.instantiate(&graph_exec_, graph_, nullptr, nullptr, 0));
  }

  void replay() {
    TORCH_CHECK(has_graph_exec_, "Called MUSAGraph::replay without a preceding successful capture.");
    musa_check(g_rt.launch(graph_exec_, nullptr));
  }

  void reset() {
    if (has_graph_) {
      musa_check_warn(g_rt.destroy(graph_));
      has_graph_ = false;
      graph_ = nullptr;
    }
    if (has_graph_exec_) {
      musa_check_warn(g_rt.exec_destroy(graph_exec_));
      has_graph_exec_ = false;
      graph_exec_ = nullptr;
    }
  }

  std::pair<uint64_t, uint64_t> pool() {
    TORCH_CHECK(has_graph_exec_,
                "Called MUSAGraph::pool() without a preceding successful capture.");
    return mempool_id_;
  }
};

}  // namespace

void bind_graph(py::module& m) {
  m.def("_sim_graph_runtime", &bind_runtime);
  py::class_<MUSAGraph, std::shared_ptr<MUSAGraph>>(m, "_MUSAGraph")
      .def(py::init<>())
      .def("capture_begin", &MUSAGraph::capture_begin, py::arg("pool"),
           py::arg("capture_error_mode"), py::call_guard<py::gil_scoped_release>())
      .def("capture_end", torch::wrap_pybind_function_no_gil(&MUSAGraph::capture_end))
      .def("reinstantiate_graph",
           torch::wrap_pybind_function_no_gil(&MUSAGraph::reinstantiate_graph))
      .def("replay", torch::wrap_pybind_function_no_gil(&MUSAGraph::replay))
      .def("reset", torch::wrap_pybind_function_no_gil(&MUSAGraph::reset))
      .def("pool", torch::wrap_pybind_function_no_gil(&MUSAGraph::pool));
}

}  // namespace torchada_sim
