// torch.distributed.ProcessGroupMCCL: torch_musa's MCCL backend, a c10d Backend as on hardware.
//
// The class, its constructors, methods and options are torch_musa 2.7.1's. What a real backend
// does on the device, this one hands to Python (torchada._simulator.mccl_backend), which runs the
// collectives on gloo over host copies: simulated device memory is host memory. torch's
// ProcessGroup wraps this backend for the "musa" device, as it wraps the real one.

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/utils/pybind.h>

#include "../torch_features.h"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torchada_sim {
namespace {

namespace py = pybind11;
using c10d::Work;
using WorkPtr = c10::intrusive_ptr<Work>;
using TensorList = std::vector<at::Tensor>;
using TensorLists = std::vector<std::vector<at::Tensor>>;

// ProcessGroupMCCL.h: kProcessGroupMCCLDefaultTimeout.
constexpr std::chrono::milliseconds kDefaultTimeout(10 * 60 * 1000);
constexpr const char* kCollectivesModule = "torchada._simulator.mccl_backend";

bool python_is_running() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// Drops a Python reference where the GIL may not be held (a Work or backend freed by a C++ thread).
void release(py::object& obj) {
  if (!obj) return;
  if (!python_is_running()) {
    obj.release();  // the interpreter is gone or going: nothing left to free it with
    return;
  }
  py::gil_scoped_acquire gil;
  obj = py::object();
}

// gloo's point-to-point work, then what follows it on the simulated device (the copy of received
// bytes into the musa tensor), run once when the work is first seen complete. gloo's send and
// receive works have no future to chain it to.
class PointToPointWork : public Work {
 public:
  PointToPointWork(WorkPtr inner, py::object then)
      : Work(-1, c10d::OpType::UNKNOWN),
        inner_(std::move(inner)),
        then_(std::move(then)) {}
  ~PointToPointWork() override { release(then_); }

  bool isCompleted() override {
    if (!inner_->isCompleted()) return false;
    follow();
    return true;
  }
  bool isSuccess() const override { return inner_->isSuccess(); }
  std::exception_ptr exception() const override { return inner_->exception(); }
  int sourceRank() const override { return inner_->sourceRank(); }
  std::vector<at::Tensor> result() override { return inner_->result(); }
  bool wait(std::chrono::milliseconds timeout) override {
    inner_->wait(timeout);
    follow();
    return true;
  }

 private:
  // The GIL alone guards then_: a mutex taken around Python code could deadlock with a thread
  // that holds the GIL and waits for it.
  void follow() {
    py::gil_scoped_acquire gil;
    if (!then_) return;
    py::object then = std::move(then_);
    then();
  }

  WorkPtr inner_;
  py::object then_;
};

// The one Work of a coalesced batch (torch's _coalescing_manager, batch_isend_irecv).
class CoalescedWork : public Work {
 public:
  explicit CoalescedWork(std::vector<WorkPtr> works)
      : Work(-1, c10d::OpType::COALESCED), works_(std::move(works)) {}

  bool isCompleted() override {
    for (auto& w : works_) {
      if (!w->isCompleted()) return false;
    }
    return true;
  }
  bool wait(std::chrono::milliseconds timeout) override {
    for (auto& w : works_) w->wait(timeout);
    return true;
  }

 private:
  std::vector<WorkPtr> works_;
};

class ProcessGroupMCCL : public c10d::Backend {
 public:
  struct Options : c10d::Backend::Options {
    explicit Options(bool is_high_priority_stream = false)
        : c10d::Backend::Options("mccl", kDefaultTimeout),
          is_high_priority_stream(is_high_priority_stream) {}

    bool is_high_priority_stream;
    c10::intrusive_ptr<ProcessGroupMCCL> split_from;
    // NCCL_SPLIT_NOCOLOR - 1: uninitialized (ProcessGroupMCCL.h).
    int split_color{-2};
#if !TORCHADA_HAS_BACKEND_OPTIONS
    // ProcessGroupMCCL.h, built on torch 2.7, declares these itself; later torch has them in
    // Backend::Options.
    std::vector<uint64_t> global_ranks_in_group;
    std::string group_name;
#endif
  };

  ProcessGroupMCCL(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   c10::intrusive_ptr<Options> options)
      : c10d::Backend(rank, size), options_(std::move(options)), uid_(next_uid()) {
    TORCH_CHECK(options_, "ProcessGroupMCCL: options must not be None");
    py::gil_scoped_acquire gil;
    // importlib.import_module, not PyImport_ImportModule: the latter imports the top-level
    // package too, and importing `torchada` itself turns torchada on in a program that only
    // loaded the simulated torch_musa.
    collectives_ = py::module_::import("importlib")
                       .attr("import_module")(kCollectivesModule)
                       .attr("MCCLCollectives")(store, rank, size, options_->timeout);
  }

  ~ProcessGroupMCCL() override { release(collectives_); }

  static c10::intrusive_ptr<c10d::Backend> create(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout) {
    auto options = c10::make_intrusive<Options>();
    options->timeout = timeout;
    return c10::make_intrusive<ProcessGroupMCCL>(store, rank, size, options);
  }

  c10::intrusive_ptr<Options> getOptions() { return options_; }
#if TORCHADA_HAS_BACKEND_OPTIONS
  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override { return options_; }
#endif
  uint64_t getUid() const { return uid_; }
  const std::string getBackendName() const override { return "mccl"; }
  bool supportsSplitting() const override { return false; }
  bool supportsCoalescing() const override { return true; }

  // mcclGroupStart/End nest; the simulated collectives complete as they are issued.
  void groupStart() { ++group_depth_; }
  void groupEnd() {
    TORCH_CHECK(group_depth_ > 0, "MCCL error: invalid usage: mcclGroupEnd without mcclGroupStart");
    --group_depth_;
  }
  // Communicators split from this group's: the simulator never splits (nor does MCCL).
  uint64_t getCommSplitCounter() const { return 0; }
  void addEphemeralTimeout(const std::chrono::milliseconds& timeout) {
    std::lock_guard<std::mutex> lock(mutex_);
    ephemeral_timeout_ += timeout;
  }
  bool verifyWorkTimeoutForTest(const WorkPtr& /*work*/, const std::chrono::milliseconds& timeout) {
    std::lock_guard<std::mutex> lock(mutex_);
    return options_->timeout + ephemeral_timeout_ == timeout;
  }
  void performNocolorSplit(at::Device /*device*/) {}  // MCCL has no comm split
  bool isInitialized() {
    std::lock_guard<std::mutex> lock(mutex_);
    return connected_;
  }
  c10d::ErrorType getError() override { return c10d::ErrorType::SUCCESS; }
  void eagerConnectSingleDevice(at::Device /*device*/) override { mark_connected(); }
  void setSequenceNumberForGroup() override {}  // MCCL starts sequence numbers at 0
  uint64_t getSequenceNumberForGroup() override { return seq_; }

  void startCoalescing() override {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(!coalescing_,
                "ProcessGroupMCCL: startCoalescing called while already coalescing; call "
                "endCoalescing first");
    coalescing_ = true;
  }
  WorkPtr endCoalescing() override {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(coalescing_, "ProcessGroupMCCL: endCoalescing called without startCoalescing");
    coalescing_ = false;
    return c10::make_intrusive<CoalescedWork>(std::move(coalesced_));
  }
  void shutdown() override { call("shutdown"); }
  void abort() override { call("abort"); }

  WorkPtr broadcast(TensorList& tensors, const c10d::BroadcastOptions& opts) override {
    return collective("broadcast", tensors, opts);
  }
  WorkPtr allreduce(TensorList& tensors, const c10d::AllreduceOptions& opts) override {
    return collective("allreduce", tensors, opts);
  }
  WorkPtr allreduce_coalesced(TensorList& tensors,
                              const c10d::AllreduceCoalescedOptions& opts) override {
    return collective("allreduce_coalesced", tensors, opts);
  }
  WorkPtr reduce(TensorList& tensors, const c10d::ReduceOptions& opts) override {
    return collective("reduce", tensors, opts);
  }
  WorkPtr allgather(TensorLists& outputs, TensorList& inputs,
                    const c10d::AllgatherOptions& opts) override {
    return collective("allgather", outputs, inputs, opts);
  }
  WorkPtr _allgather_base(at::Tensor& output, at::Tensor& input,
                          const c10d::AllgatherOptions& opts) override {
    return collective("_allgather_base", output, input, opts);
  }
  WorkPtr allgather_coalesced(TensorLists& outputs, TensorList& inputs,
                              const c10d::AllgatherOptions& opts) override {
    return collective("allgather_coalesced", outputs, inputs, opts);
  }
  WorkPtr allgather_into_tensor_coalesced(TensorList& outputs, TensorList& inputs,
                                          const c10d::AllgatherOptions& opts) override {
    return collective("allgather_into_tensor_coalesced", outputs, inputs, opts);
  }
  WorkPtr gather(TensorLists& outputs, TensorList& inputs,
                 const c10d::GatherOptions& opts) override {
    return collective("gather", outputs, inputs, opts);
  }
  WorkPtr scatter(TensorList& outputs, TensorLists& inputs,
                  const c10d::ScatterOptions& opts) override {
    return collective("scatter", outputs, inputs, opts);
  }
  WorkPtr reduce_scatter(TensorList& outputs, TensorLists& inputs,
                         const c10d::ReduceScatterOptions& opts) override {
    return collective("reduce_scatter", outputs, inputs, opts);
  }
  WorkPtr _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                               const c10d::ReduceScatterOptions& opts) override {
    return collective("_reduce_scatter_base", output, input, opts);
  }
  WorkPtr reduce_scatter_tensor_coalesced(TensorList& outputs, TensorList& inputs,
                                          const c10d::ReduceScatterOptions& opts) override {
    return collective("reduce_scatter_tensor_coalesced", outputs, inputs, opts);
  }
  WorkPtr alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                        std::vector<int64_t>& input_splits,
                        const c10d::AllToAllOptions& opts) override {
    return collective("alltoall_base", output, input, output_splits, input_splits, opts);
  }
  WorkPtr alltoall(TensorList& outputs, TensorList& inputs,
                   const c10d::AllToAllOptions& opts) override {
    return collective("alltoall", outputs, inputs, opts);
  }
  WorkPtr barrier(const c10d::BarrierOptions& opts) override {
    return collective("barrier", opts);
  }
  WorkPtr send(TensorList& tensors, int dst_rank, int tag) override {
    return point_to_point("send", tensors, dst_rank, tag);
  }
  WorkPtr recv(TensorList& tensors, int src_rank, int tag) override {
    return point_to_point("recv", tensors, src_rank, tag);
  }
  WorkPtr recvAnysource(TensorList& tensors, int tag) override {
    return point_to_point("recv_anysource", tensors, tag);
  }

 private:
  static uint64_t next_uid() {
    static std::atomic<uint64_t> counter{0};
    return counter++;
  }

  void mark_connected() {
    std::lock_guard<std::mutex> lock(mutex_);
    connected_ = true;
  }

  template <typename... Args>
  void call(const char* name, Args&&... args) {
    py::gil_scoped_acquire gil;
    collectives_.attr(name)(std::forward<Args>(args)...);  // the result dies while the GIL is held
  }

  static WorkPtr as_work(py::handle obj) { return WorkPtr::reclaim_copy(obj.cast<Work*>()); }

  // While coalescing, endCoalescing's Work stands for the batch.
  WorkPtr issued(WorkPtr work) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (coalescing_) coalesced_.push_back(work);
    return work;
  }

  // Issues one operation on the Python side; the caller holds the GIL.
  template <typename... Args>
  py::object start(const char* name, Args&&... args) {
    mark_connected();
    ++seq_;
    return collectives_.attr(name)(std::forward<Args>(args)...);
  }

  // A collective's Work, which the Python side makes from a torch future: a plain C++ Work that
  // needs no Python object kept alive.
  template <typename... Args>
  WorkPtr collective(const char* name, Args&&... args) {
    py::gil_scoped_acquire gil;
    return issued(as_work(start(name, std::forward<Args>(args)...)));
  }

  template <typename... Args>
  WorkPtr point_to_point(const char* name, Args&&... args) {
    py::gil_scoped_acquire gil;
    auto started = py::cast<py::tuple>(start(name, std::forward<Args>(args)...));
    return issued(c10::make_intrusive<PointToPointWork>(as_work(started[0]), started[1]));
  }

  const c10::intrusive_ptr<Options> options_;
  const uint64_t uid_;
  py::object collectives_;
  std::mutex mutex_;
  bool connected_ = false;
  bool coalescing_ = false;
  std::vector<WorkPtr> coalesced_;
  std::chrono::milliseconds ephemeral_timeout_{0};
  std::atomic<uint64_t> seq_{0};
  int group_depth_ = 0;
};

}  // namespace

// torch_musa's registerProcessGroupMCCL: the "mccl" backend for the musa device, and the
// ProcessGroupMCCL class with its Options in torch.distributed.
void register_process_group_mccl() {
  py::module_ dist = py::module_::import("torch.distributed");
  // torch_musa passes devices="musa", which its patched distributed_c10d.py wraps in a list; stock
  // torch would iterate the string, so the list is given here.
  py::list devices;
  devices.append("musa");
  dist.attr("Backend").attr("register_backend")(
      "mccl",
      py::cpp_function(&ProcessGroupMCCL::create, py::arg("store"), py::arg("rank"),
                       py::arg("world_size"), py::arg("timeout")),
      false, devices);

  auto pg = py::class_<ProcessGroupMCCL, c10d::Backend, c10::intrusive_ptr<ProcessGroupMCCL>>(
      dist, "ProcessGroupMCCL");
  pg.def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     c10::intrusive_ptr<ProcessGroupMCCL::Options> options) {
           return c10::make_intrusive<ProcessGroupMCCL>(store, rank, size, std::move(options));
         }),
         py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("options"),
         "Create a new ProcessGroupMCCL instance.")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       const std::chrono::milliseconds& timeout) {
             auto options = c10::make_intrusive<ProcessGroupMCCL::Options>();
             options->timeout = timeout;
             return c10::make_intrusive<ProcessGroupMCCL>(store, rank, size, options);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout") = kDefaultTimeout,
           "Create a new ProcessGroupMCCL instance.")
      .def("_group_start", &ProcessGroupMCCL::groupStart)
      .def("_group_end", &ProcessGroupMCCL::groupEnd)
      .def("comm_split_count", &ProcessGroupMCCL::getCommSplitCounter)
      .def(
          "_set_default_timeout",
          [](const c10::intrusive_ptr<ProcessGroupMCCL>& self, std::chrono::milliseconds timeout) {
            self->getOptions()->timeout = timeout;
          },
          py::arg("timeout"))
      .def(
          "_add_ephemeral_timeout",
          [](const c10::intrusive_ptr<ProcessGroupMCCL>& self,
             const std::chrono::milliseconds& timeout) { self->addEphemeralTimeout(timeout); },
          py::arg("timeout"))
      .def(
          "_verify_work_timeout",
          [](const c10::intrusive_ptr<ProcessGroupMCCL>& self, const WorkPtr& work,
             const std::chrono::milliseconds& timeout) {
            return self->verifyWorkTimeoutForTest(work, timeout);
          },
          py::arg("work"), py::arg("timeout"))
      .def_property_readonly("options", &ProcessGroupMCCL::getOptions,
                             "Return the options used to create this ProcessGroupMCCL instance.")
      .def_property_readonly("uid", &ProcessGroupMCCL::getUid, "Return the uid.")
      .def_property("bound_device_id", &ProcessGroupMCCL::getBoundDeviceId,
                    &ProcessGroupMCCL::setBoundDeviceId, "Return the bound device id.")
      .def("perform_nocolor_split", &ProcessGroupMCCL::performNocolorSplit)
      .def("_is_initialized", &ProcessGroupMCCL::isInitialized)
      .def("get_error", &ProcessGroupMCCL::getError);

  py::class_<ProcessGroupMCCL::Options, c10d::Backend::Options,
             c10::intrusive_ptr<ProcessGroupMCCL::Options>>(
      pg, "Options", "ProcessGroup options for the MCCL backend")
      .def(py::init<bool>(), py::arg("is_high_priority_stream") = false)
      .def_readwrite("is_high_priority_stream", &ProcessGroupMCCL::Options::is_high_priority_stream)
      .def_readwrite("split_from", &ProcessGroupMCCL::Options::split_from)
      .def_readwrite("split_color", &ProcessGroupMCCL::Options::split_color)
      .def_readwrite("global_ranks_in_group", &ProcessGroupMCCL::Options::global_ranks_in_group)
      .def_readwrite("group_name", &ProcessGroupMCCL::Options::group_name);
}

}  // namespace torchada_sim
