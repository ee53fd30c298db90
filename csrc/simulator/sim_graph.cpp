// torch_musa's _MUSAC._MUSAGraph (csrc/core/Graph.cpp over csrc/aten/musa/MUSAGraph.{h,cpp}):
// the executable's life cycle through libmusart, with the object's members laid out as the
// simulated release's MUSAGraph.h declares them (2.7.1: has_graph_exec_ at byte 17; from
// 2.9.1.post1: capture_ended_ at 17, has_graph_exec_ at 18, keep_graph_ last), bound by
// pybind11 with a shared_ptr holder as Graph.cpp binds it.
//
// What a capture records and what a replay runs is the Python side's (musa_graph/graphs.py and
// torchada._simulator.graph_capture); here are the runtime calls MUSAGraph.cpp makes:
// capture_end instantiates (musaGraphInstantiate, which fails past the driver's limit of live
// executables), reinstantiate_graph destroys the executable and instantiates it again, replay
// launches, reset and the destructor destroy both.

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/util/flat_hash_map.h>

#include <dlfcn.h>

#include <atomic>
#include <cstddef>
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
// The pools graphs released (reset() from 2.9.1.post1 hands its private pool back), for the
// Python side to see.
std::atomic<uint64_t> g_pools_released{0};

// MUSAGraph.h's protected members, in its order and with its types, per release (the headers
// under csrc/simulator/include_releases declare the same). The generator-state map is held as
// opaque bytes of the map's size: the simulator keeps no generator states in C++.
using GeneratorStates = ska::flat_hash_map<void*, uint64_t>;
struct MembersV2_7_1 {
  static constexpr bool kReleaseEra = false;  // 2.7.1: no capture_ended_, no keep_graph_
  Handle graph_ = nullptr;
  Handle graph_exec_ = nullptr;
  bool has_graph_ = false;
  bool has_graph_exec_ = false;
  uint64_t capture_id_ = static_cast<uint64_t>(-1);
  std::pair<uint64_t, uint64_t> mempool_id_{0, 0};
  int64_t capture_stream_[2] = {0, 0};  // at::musa::MUSAStream (a c10::Stream)
  alignas(GeneratorStates) unsigned char captured_generator_states_[sizeof(GeneratorStates)] = {};
  int capture_dev_ = -1;
  // 2.7.1's replay() and pool() ask whether a capture succeeded through has_graph_exec_.
  bool capture_succeeded() const { return has_graph_exec_; }
  bool keep() const { return false; }
};

struct MembersV2_9_1_post1 {
  static constexpr bool kReleaseEra = true;  // capture_ended_ at 17, keep_graph_ last
  Handle graph_ = nullptr;
  Handle graph_exec_ = nullptr;
  bool has_graph_ = false;
  bool capture_ended_ = false;
  bool has_graph_exec_ = false;
  uint64_t capture_id_ = static_cast<uint64_t>(-1);
  std::pair<uint64_t, uint64_t> mempool_id_{0, 0};
  int64_t capture_stream_[2] = {0, 0};
  alignas(GeneratorStates) unsigned char captured_generator_states_[sizeof(GeneratorStates)] = {};
  int8_t capture_dev_ = -1;  // c10::DeviceIndex
  bool keep_graph_ = false;
  bool capture_succeeded() const { return capture_ended_; }
  bool keep() const { return keep_graph_; }
};

static_assert(offsetof(MembersV2_7_1, has_graph_exec_) == 17, "2.7.1 layout");
static_assert(offsetof(MembersV2_7_1, capture_id_) == 24, "2.7.1 layout");
static_assert(offsetof(MembersV2_7_1, mempool_id_) == 32, "2.7.1 layout");
static_assert(offsetof(MembersV2_7_1, capture_stream_) == 48, "2.7.1 layout");
static_assert(offsetof(MembersV2_7_1, captured_generator_states_) == 64, "2.7.1 layout");
static_assert(offsetof(MembersV2_9_1_post1, capture_ended_) == 17, "2.9.1.post1 layout");
static_assert(offsetof(MembersV2_9_1_post1, has_graph_exec_) == 18, "2.9.1.post1 layout");
static_assert(offsetof(MembersV2_7_1, capture_dev_) == 96, "2.7.1 layout");
static_assert(offsetof(MembersV2_9_1_post1, capture_stream_) == 48, "2.9.1.post1 layout");
static_assert(offsetof(MembersV2_9_1_post1, capture_dev_) == 96, "2.9.1.post1 layout");
static_assert(offsetof(MembersV2_9_1_post1, keep_graph_) == 97, "2.9.1.post1 layout");

// The runtime calls of MUSAGraph.cpp, per release: 2.7.1's (csrc/aten/musa/MUSAGraph.cpp at
// v2.7.1) or 2.9.1.post1's (keep_graph, instantiate(), lazy instantiation in replay, reset()
// releasing the private pool, raw handles).
template <typename M>
struct MUSAGraph : M {
  using M::graph_;
  using M::graph_exec_;
  using M::has_graph_;
  using M::has_graph_exec_;
  using M::mempool_id_;

  explicit MUSAGraph(bool keep_graph = false) {
    if constexpr (M::kReleaseEra) this->keep_graph_ = keep_graph;
  }
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
    if constexpr (M::kReleaseEra) {
      this->capture_ended_ = true;
      has_graph_ = true;
      if (!this->keep_graph_) instantiate();
    } else {
      has_graph_ = true;
      musa_check(g_rt.instantiate(&graph_exec_, graph_, nullptr, nullptr, 0));
      has_graph_exec_ = true;
    }
  }

  void instantiate() {
    if constexpr (M::kReleaseEra) {
      TORCH_CHECK(this->capture_ended_,
                  "capture_end() must have been called before calling instantiate");
      if (has_graph_exec_) {
        TORCH_CHECK(this->keep_graph_,
                    "instantiate() is intended to be called by the user only when "
                    "keep_graph=true");
        musa_check(g_rt.exec_destroy(graph_exec_));
        graph_exec_ = nullptr;
      }
      musa_check(g_rt.instantiate(&graph_exec_, graph_, nullptr, nullptr, 0));
      has_graph_exec_ = true;
    }
  }

  void reinstantiate_graph() {
    if constexpr (M::kReleaseEra) {
      TORCH_CHECK(this->capture_ended_ && graph_ != nullptr && has_graph_,
                  "The graph_ musa has been created in the graph capture stage");
      if (has_graph_exec_) {
        musa_check_warn(g_rt.exec_destroy(graph_exec_));
        has_graph_exec_ = false;
        graph_exec_ = nullptr;
      }
      musa_check(g_rt.instantiate(&graph_exec_, graph_, nullptr, nullptr, 0));
      has_graph_exec_ = true;
    } else {
      TORCH_CHECK(graph_ != nullptr && graph_exec_ != nullptr && has_graph_ && has_graph_exec_,
                  "The graph_ and graph_exec_ musa have been created in the graph capture stage");
      musa_check_warn(g_rt.exec_destroy(graph_exec_));
      graph_exec_ = nullptr;
      musa_check(g_rt.instantiate(&graph_exec_, graph_, nullptr, nullptr, 0));
    }
  }

  void replay() {
    TORCH_CHECK(this->capture_succeeded(),
                "Called MUSAGraph::replay without a preceding successful capture.");
    if constexpr (M::kReleaseEra) {
      if (!has_graph_exec_) {
        TORCH_INTERNAL_ASSERT(this->keep_graph_);
        instantiate();
      }
    }
    musa_check(g_rt.launch(graph_exec_, nullptr));
  }

  void reset() {
    if constexpr (M::kReleaseEra) {
      if (this->capture_ended_) {
        ++g_pools_released;  // MUSACachingAllocator::releasePool(capture_dev_, mempool_id_)
        this->capture_ended_ = false;
      }
    }
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
    TORCH_CHECK(this->capture_succeeded(),
                "Called MUSAGraph::pool() without a preceding successful capture.");
    return mempool_id_;
  }

  uintptr_t raw_musa_graph() {
    if constexpr (M::kReleaseEra) {
      TORCH_CHECK(this->keep_graph_,
                  "You cannot access the raw musaGraph_t instance unless MUSAGraph was "
                  "initialized with keep_graph=true");
      TORCH_CHECK(has_graph_,
                  "You cannot access the raw musaGraph_t instance until capture_end() has been "
                  "called");
    }
    return reinterpret_cast<uintptr_t>(graph_);
  }

  uintptr_t raw_musa_graph_exec() {
    TORCH_CHECK(has_graph_exec_,
                "You cannot access the raw musaGraphExec_t instance until instantiate() has "
                "been called");
    return reinterpret_cast<uintptr_t>(graph_exec_);
  }
};

template <typename M>
void bind_release(py::module& m) {
  using G = MUSAGraph<M>;
  py::class_<G, std::shared_ptr<G>> cls(m, "_MUSAGraph");
  if constexpr (M::kReleaseEra) {
    cls.def(py::init<bool>(), py::arg("keep_graph") = false);
  } else {
    cls.def(py::init<>());
  }
  cls.def("capture_begin", &G::capture_begin, py::arg("pool"), py::arg("capture_error_mode"),
          py::call_guard<py::gil_scoped_release>())
      .def("capture_end", torch::wrap_pybind_function_no_gil(&G::capture_end))
      .def("reinstantiate_graph", torch::wrap_pybind_function_no_gil(&G::reinstantiate_graph))
      .def("replay", torch::wrap_pybind_function_no_gil(&G::replay))
      .def("reset", torch::wrap_pybind_function_no_gil(&G::reset))
      .def("pool", torch::wrap_pybind_function_no_gil(&G::pool));
  if constexpr (M::kReleaseEra) {
    cls.def("instantiate", torch::wrap_pybind_function_no_gil(&G::instantiate))
        .def("raw_musa_graph", &G::raw_musa_graph, py::call_guard<py::gil_scoped_release>())
        .def("raw_musa_graph_exec", &G::raw_musa_graph_exec,
             py::call_guard<py::gil_scoped_release>());
  }
}

}  // namespace

void bind_graph(py::module& m) {
  m.def("_sim_graph_runtime", &bind_runtime);
  // The C++ class is bound once the release is known (torch_musa's __init__ reads it first).
  m.def("_sim_bind_graph", [](py::module target, const std::string& layout) {
    if (layout == "2.7.1") {
      bind_release<MembersV2_7_1>(target);
    } else {
      TORCH_CHECK(layout == "2.9.1.post1", "unknown MUSAGraph layout ", layout);
      bind_release<MembersV2_9_1_post1>(target);
    }
  });
  m.def("_sim_graph_pools_released", [] { return g_pools_released.load(); });
}

}  // namespace torchada_sim
