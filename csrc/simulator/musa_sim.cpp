// CPU-backed simulator of torch_musa's native module (_MUSAC).
//
// Tensors on the PrivateUse1 key (renamed "musa" from Python) live in host memory. Only what a real
// backend must provide is written here: allocator with statistics, device guard with streams and
// timed events, the hooks interface, generators, profiler stubs, explicit view/copy kernels and a
// boxed fallback to the CPU kernels. Everything else of the torch.musa surface is Python
// (torch_musa/ in the simulator).

#include <torch/extension.h>

#include <ATen/EmptyTensor.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/record_function.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/Device.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/Storage.h>
#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include "stubs/sim_handles.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace torchada_sim {

constexpr int kMaxDevices = 16;
constexpr c10::DeviceType kMusa = c10::DeviceType::PrivateUse1;
constexpr size_t kSmallSize = 1 << 20;  // the caching allocator's small-pool boundary

int g_device_count = 0;
int64_t g_total_memory = 0;
std::atomic<bool> g_initialized{false};
bool g_in_bad_fork = false;
bool g_allow_tf32 = true;  // torch_musa's Context default

thread_local c10::DeviceIndex t_current_device = 0;

// ---------------------------------------------------------------- memory statistics
// Index 0: all, 1: small pool, 2: large pool.
struct Stat {
  std::atomic<int64_t> current{0}, peak{0}, allocated{0}, freed{0};
  void add(int64_t n) {
    int64_t now = current.fetch_add(n) + n;
    allocated.fetch_add(n);
    int64_t p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
  }
  void sub(int64_t n) {
    current.fetch_sub(n);
    freed.fetch_add(n);
  }
};

struct DeviceStats {
  std::array<Stat, 3> bytes;   // allocated == reserved == active == requested here: no caching
  std::array<Stat, 3> count;   // number of live blocks
  std::atomic<int64_t> num_ooms{0};
  std::atomic<int64_t> num_device_alloc{0}, num_device_free{0};
  double fraction = 1.0;
};

std::array<DeviceStats, kMaxDevices> g_stats;

struct BlockInfo {
  size_t size;
  c10::DeviceIndex device;
};
std::mutex g_blocks_mutex;
std::unordered_map<void*, BlockInfo> g_blocks;

void check_device(c10::DeviceIndex d) {
  TORCH_CHECK(d >= 0 && d < g_device_count, "Invalid device id: ", static_cast<int>(d),
              " (the simulated MUSA machine has ", g_device_count, " devices)");
}

void record_alloc(c10::DeviceIndex d, size_t n) {
  auto& s = g_stats[d];
  int pool = n < kSmallSize ? 1 : 2;
  s.bytes[0].add(n);
  s.bytes[pool].add(n);
  s.count[0].add(1);
  s.count[pool].add(1);
  s.num_device_alloc.fetch_add(1);
}

void record_free(c10::DeviceIndex d, size_t n) {
  auto& s = g_stats[d];
  int pool = n < kSmallSize ? 1 : 2;
  s.bytes[0].sub(n);
  s.bytes[pool].sub(n);
  s.count[0].sub(1);
  s.count[pool].sub(1);
  s.num_device_free.fetch_add(1);
}

void sim_free(void* ptr) {
  if (ptr == nullptr) return;
  BlockInfo info{0, 0};
  {
    std::lock_guard<std::mutex> g(g_blocks_mutex);
    auto it = g_blocks.find(ptr);
    if (it != g_blocks.end()) {
      info = it->second;
      g_blocks.erase(it);
    }
  }
  if (info.size) record_free(info.device, info.size);
  std::free(ptr);
}

void* sim_malloc(size_t n, c10::DeviceIndex d) {
  check_device(d);
  auto& s = g_stats[d];
  int64_t limit = static_cast<int64_t>(static_cast<double>(g_total_memory) * s.fraction);
  if (s.bytes[0].current.load() + static_cast<int64_t>(n) > limit) {
    s.num_ooms.fetch_add(1);
    TORCH_CHECK_WITH(OutOfMemoryError, false, "MUSA out of memory. Tried to allocate ", n,
                     " bytes on device ", static_cast<int>(d),
                     " (simulated board: ", g_total_memory, " bytes total, ",
                     s.bytes[0].current.load(), " bytes allocated)");
  }
  void* p = nullptr;
  size_t bytes = n == 0 ? 1 : n;
  if (posix_memalign(&p, 64, bytes) != 0 || p == nullptr) {
    s.num_ooms.fetch_add(1);
    TORCH_CHECK_WITH(OutOfMemoryError, false, "MUSA out of memory (host allocation of ", n,
                     " bytes failed)");
  }
  {
    std::lock_guard<std::mutex> g(g_blocks_mutex);
    g_blocks[p] = BlockInfo{n, d};
  }
  record_alloc(d, n);
  return p;
}

struct SimAllocator final : c10::Allocator {
  // index -1: follow the thread's current device (the allocator torch looks up by device type).
  explicit SimAllocator(c10::DeviceIndex index) : index_(index) {}
  c10::DataPtr allocate(size_t n) override {
    c10::DeviceIndex d = index_ >= 0 ? index_ : t_current_device;
    void* p = sim_malloc(n, d);
    return {p, p, &sim_free, c10::Device(kMusa, d)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &sim_free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

 private:
  c10::DeviceIndex index_;
};

SimAllocator g_current_allocator(-1);
std::array<SimAllocator*, kMaxDevices> g_device_allocators{};

SimAllocator* allocator_for(c10::DeviceIndex d) {
  check_device(d);
  return g_device_allocators[d];
}

// Pinned host memory: plain host memory whose pointers are remembered, so is_pinned() can answer.
std::mutex g_pinned_mutex;
std::unordered_set<void*> g_pinned;

void pinned_free(void* p) {
  {
    std::lock_guard<std::mutex> g(g_pinned_mutex);
    g_pinned.erase(p);
  }
  std::free(p);
}

struct PinnedAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    void* p = nullptr;
    if (posix_memalign(&p, 64, n == 0 ? 1 : n) != 0) {
      TORCH_CHECK_WITH(OutOfMemoryError, false, "pinned host allocation of ", n, " bytes failed");
    }
    {
      std::lock_guard<std::mutex> g(g_pinned_mutex);
      g_pinned.insert(p);
    }
    return {p, p, &pinned_free, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &pinned_free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

PinnedAllocator g_pinned_allocator;

bool is_pinned_ptr(const void* p) {
  std::lock_guard<std::mutex> g(g_pinned_mutex);
  return g_pinned.count(const_cast<void*>(p)) > 0;
}

// ---------------------------------------------------------------- unified CPU memory
// torch_musa's unified CPU allocator (PYTORCH_MUSA_ALLOC_CONF=cpu:unified, or inside
// use_unified_cpu_allocator()) gives CPU tensors managed memory (musaMallocManaged), which a storage
// may then turn into device memory in place (edit_device). Simulated devices run on host memory,
// so what is kept is which memory is managed: only managed, pinned or device memory may become a
// device storage, and a managed allocation needs a device, as the runtime call does.
std::mutex g_unified_mutex;
std::unordered_set<void*> g_unified;

void unified_free(void* p) {
  {
    std::lock_guard<std::mutex> g(g_unified_mutex);
    g_unified.erase(p);
  }
  std::free(p);
}

struct UnifiedCPUAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    TORCH_CHECK(g_device_count > 0,
                "MUSA error: no MUSA-capable device is detected (error code 100) from "
                "musaMallocManaged(&ptr, size, musaMemAttachGlobal)");
    void* p = nullptr;
    if (posix_memalign(&p, 64, n == 0 ? 1 : n) != 0) {
      TORCH_CHECK_WITH(OutOfMemoryError, false, "managed allocation of ", n, " bytes failed");
    }
    {
      std::lock_guard<std::mutex> g(g_unified_mutex);
      g_unified.insert(p);
    }
    return {p, p, &unified_free, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &unified_free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

UnifiedCPUAllocator g_unified_cpu_allocator;
// As torch_musa's allocator context: one saved allocator, overwritten by each registration.
c10::Allocator* g_prev_cpu_allocator = nullptr;

void register_unified_cpu_allocator() {
  g_prev_cpu_allocator = c10::GetAllocator(c10::DeviceType::CPU);
  c10::SetAllocator(c10::DeviceType::CPU, &g_unified_cpu_allocator);
}

void reset_unified_cpu_allocator() {
  c10::SetAllocator(c10::DeviceType::CPU, g_prev_cpu_allocator);
}

bool is_unified_ptr(const void* p) {
  std::lock_guard<std::mutex> g(g_unified_mutex);
  return g_unified.count(const_cast<void*>(p)) > 0;
}

bool is_device_ptr(const void* p) {
  std::lock_guard<std::mutex> g(g_blocks_mutex);
  return g_blocks.count(const_cast<void*>(p)) > 0;
}

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

// ---------------------------------------------------------------- streams and events
thread_local std::array<c10::StreamId, kMaxDevices> t_current_stream{};
std::array<std::atomic<c10::StreamId>, kMaxDevices> g_next_stream{};
std::atomic<uint32_t> g_pool_cursor{0};
constexpr c10::StreamId kPoolSize = 32;

// Starts with libmusart's event record (whether and when it was recorded), so Event.musa_event
// works with libmusart too.
struct SimEvent {
  sim_event runtime{SIM_EVENT_TAG, 0, {0, 0}};
  bool timing = false;
  c10::DeviceIndex device = -1;
};

// Native handles of the backend's own streams: records libmusart accepts (sim_handles.h), one per
// stream, kept for the process (torch never destroys a stream it made). The default stream is
// NULL, as the runtime's legacy default stream is; an external stream's id is its handle.
std::mutex g_stream_records_mutex;
std::unordered_map<int64_t, sim_stream*> g_stream_records;

void* stream_native_handle(c10::DeviceIndex idx, c10::StreamId id) {
  if (id == 0) return nullptr;
  const bool own = id <= kPoolSize + static_cast<c10::StreamId>(g_next_stream[idx].load());
  if (!own) return reinterpret_cast<void*>(static_cast<intptr_t>(id));
  std::lock_guard<std::mutex> lock(g_stream_records_mutex);
  auto& record = g_stream_records[id * kMaxDevices + idx];
  if (record == nullptr) record = new sim_stream{SIM_STREAM_TAG, idx};
  return record;
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

struct SimGuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kMusa; }
  c10::Device exchangeDevice(c10::Device d) const override {
    auto old = getDevice();
    if (d.index() != old.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(kMusa, t_current_device); }
  void setDevice(c10::Device d) const override {
    check_device(d.index());
    t_current_device = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < g_device_count) t_current_device = d.index();
  }
  c10::Stream getStream(c10::Device d) const override {
    auto idx = d.index() < 0 ? t_current_device : d.index();
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kMusa, idx), t_current_stream[idx]);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*high_priority*/) const override {
    c10::StreamId id = 1 + static_cast<c10::StreamId>(g_pool_cursor.fetch_add(1) % kPoolSize);
    return c10::Stream(c10::Stream::UNSAFE, d, id);
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    auto idx = d.index() < 0 ? t_current_device : d.index();
    c10::StreamId id = kPoolSize + 1 + g_next_stream[idx].fetch_add(1);
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kMusa, idx), id);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    auto old = getStream(s.device());
    t_current_stream[s.device_index()] = s.id();
    return old;
  }
  void* getStreamNativeHandle(const c10::Stream s) const override {
    return stream_native_handle(s.device_index(), s.id());
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(g_device_count);
  }
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                "Event device index ", device_index,
                " does not match recording stream's device index ",
                stream.device_index(), ".");
    auto* e = static_cast<SimEvent*>(*event);
    if (e == nullptr) {
      e = new SimEvent();
      e->timing = flag == c10::EventFlag::BACKEND_DEFAULT;
      e->device = stream.device_index();
      *event = e;
    }
    clock_gettime(CLOCK_MONOTONIC, &e->runtime.when);
    e->runtime.recorded = 1;
  }
  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}
  bool queryEvent(void* /*event*/) const override { return true; }
  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    auto* e = static_cast<SimEvent*>(event);
    if (e != nullptr) e->runtime.tag = 0;
    delete e;
  }
  bool queryStream(const c10::Stream& /*stream*/) const override { return true; }
  void synchronizeStream(const c10::Stream& /*stream*/) const override {}
  void synchronizeEvent(void* /*event*/) const override {}
  void synchronizeDevice(const c10::DeviceIndex /*device_index*/) const override {}
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
  double elapsedTime(void* event1, void* event2, const c10::DeviceIndex /*device_index*/)
      const override {
    auto* a = static_cast<SimEvent*>(event1);
    auto* b = static_cast<SimEvent*>(event2);
    TORCH_CHECK(a && b && a->runtime.recorded && b->runtime.recorded,
                "Both events must be recorded before calculating elapsed time.");
    TORCH_CHECK(a->timing && b->timing,
                "Both events must be created with argument 'enable_timing=True'.");
    const auto& ta = a->runtime.when;
    const auto& tb = b->runtime.when;
    return (tb.tv_sec - ta.tv_sec) * 1e3 + (tb.tv_nsec - ta.tv_nsec) / 1e6;
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, SimGuardImpl);
SimGuardImpl g_guard_impl;

// ---------------------------------------------------------------- profiler stubs
// torch_musa registers these (registerPrivateUse1Methods) so that the autograd profiler with
// use_device="musa" times device work; mark / rangePush / rangePop are no-ops there too. Work is
// synchronous here, so an event is the time at which it was recorded.
struct SimProfilerStubs final : torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, torch::profiler::impl::ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    if (device != nullptr) *device = t_current_device;
    *event = std::make_shared<double>(now_ms());
    if (cpu_ns != nullptr) *cpu_ns = c10::getTime();
  }
  float elapsed(const torch::profiler::impl::ProfilerVoidEventStub* event,
                const torch::profiler::impl::ProfilerVoidEventStub* event2) const override {
    const double a = *static_cast<const double*>(event->get());
    const double b = *static_cast<const double*>(event2->get());
    return static_cast<float>((b - a) * 1000.0);  // microseconds, as the CUDA stubs answer
  }
  void mark(const char* /*name*/) const override {}
  void rangePush(const char* /*name*/) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }
  void onEachDevice(std::function<void(int)> op) const override {
    const c10::DeviceIndex previous = t_current_device;
    for (int i = 0; i < g_device_count; ++i) {
      t_current_device = static_cast<c10::DeviceIndex>(i);
      op(i);
    }
    t_current_device = previous;
  }
  void synchronize() const override {}
};

SimProfilerStubs g_profiler_stubs;
const bool g_profiler_stubs_registered = [] {
  torch::profiler::impl::registerPrivateUse1Methods(&g_profiler_stubs);
  return true;
}();

// ---------------------------------------------------------------- generators
// torch_musa's generator is a Philox one: its state is (seed, offset), get_offset/set_offset work,
// and pickling a generator saves both. CPU kernels (reached through the fallback) only accept CPU
// generators, so each kernel that draws gets a CPU generator of its own seeded from (seed,
// offset), and the offset advances: the stream is a function of (seed, offset), as on the device,
// so set_offset and set_state replay draws exactly. The state is 16 bytes, seed then offset.
struct SimGenerator final : c10::GeneratorImpl {
  explicit SimGenerator(c10::DeviceIndex idx)
      : c10::GeneratorImpl(c10::Device(kMusa, idx),
                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        seed_(c10::detail::getNonDeterministicRandom()) {}
  void set_current_seed(uint64_t seed) override {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t current_seed() const override { return seed_; }
  uint64_t seed() override {
    auto s = c10::detail::getNonDeterministicRandom();
    set_current_seed(s);
    return s;
  }
  void set_offset(uint64_t offset) override {
    TORCH_CHECK(offset % 4 == 0, "offset must be a multiple of 4");
    offset_ = offset;
  }
  uint64_t get_offset() const override { return offset_; }
  void set_state(const c10::TensorImpl& new_state) override {
    TORCH_CHECK(new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>() &&
                    new_state.device().type() == c10::kCPU,
                "RNG state must be a torch.ByteTensor");
    TORCH_CHECK(new_state.numel() == kStateSize, "RNG state is wrong size");
    const auto* bytes = new_state.data_dtype_initialized<uint8_t>();
    std::memcpy(&seed_, bytes, sizeof(seed_));
    std::memcpy(&offset_, bytes + sizeof(seed_), sizeof(offset_));
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    auto state = at::empty({kStateSize}, at::TensorOptions().dtype(at::kByte));
    auto* bytes = state.data_ptr<uint8_t>();
    std::memcpy(bytes, &seed_, sizeof(seed_));
    std::memcpy(bytes + sizeof(seed_), &offset_, sizeof(offset_));
    return state.getIntrusivePtr();
  }
  // A CPU generator for one kernel's draws. Called with this generator's mutex held.
  at::Generator for_kernel() {
    // splitmix64 of (seed, offset): neighbouring offsets give unrelated streams.
    uint64_t z = seed_ + (offset_ + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    offset_ += 4;  // Philox generators advance in multiples of 4
    return at::make_generator<at::CPUGeneratorImpl>(z ^ (z >> 31));
  }
  static c10::DeviceType device_type() { return kMusa; }

 private:
  static constexpr int64_t kStateSize = 16;
  uint64_t seed_;
  uint64_t offset_ = 0;

  SimGenerator* clone_impl() const override {
    auto* g = new SimGenerator(device().index());
    g->seed_ = seed_;
    g->offset_ = offset_;
    return g;
  }
};

std::array<at::Generator, kMaxDevices> g_default_generators;
std::once_flag g_generators_once;

const at::Generator& default_generator(c10::DeviceIndex idx) {
  std::call_once(g_generators_once, [] {
    for (int i = 0; i < g_device_count; ++i) {
      g_default_generators[i] = at::make_generator<SimGenerator>(static_cast<c10::DeviceIndex>(i));
    }
  });
  if (idx < 0) idx = t_current_device;
  check_device(idx);
  return g_default_generators[idx];
}

at::Generator make_generator(c10::DeviceIndex idx) {
  if (idx >= 0) check_device(idx);
  return at::make_generator<SimGenerator>(idx < 0 ? t_current_device : idx);
}

// ---------------------------------------------------------------- hooks interface
struct SimHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return g_device_count > 0; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex idx) const override {
    return default_generator(idx);
  }
  at::Generator getNewGenerator(c10::DeviceIndex idx) const override { return make_generator(idx); }
  at::Device getDeviceFromPtr(void* data) const override {
    std::lock_guard<std::mutex> g(g_blocks_mutex);
    auto it = g_blocks.find(data);
    return c10::Device(kMusa, it == g_blocks.end() ? t_current_device : it->second.device);
  }
  bool isPinnedPtr(const void* data) const override { return is_pinned_ptr(data); }
  at::Allocator* getPinnedMemoryAllocator() const override { return &g_pinned_allocator; }
  bool hasPrimaryContext(c10::DeviceIndex idx) const override {
    return g_initialized.load() && idx >= 0 && idx < g_device_count;
  }
  void init() const override { g_initialized = true; }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(g_device_count);
  }
  void setCurrentDevice(c10::DeviceIndex d) const override {
    check_device(d);
    t_current_device = d;
  }
  c10::DeviceIndex getCurrentDevice() const override { return t_current_device; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    auto old = t_current_device;
    if (d >= 0) setCurrentDevice(d);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override {
    return exchangeDevice(d);
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    auto* impl = storage.unsafeGetStorageImpl();
    c10::DeviceIndex d = storage.device().index();
    auto fresh = allocator_for(d)->allocate(newsize);
    size_t keep = std::min(newsize, storage.nbytes());
    if (keep && storage.data()) std::memcpy(fresh.get(), storage.data(), keep);
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};

SimHooks* g_hooks = nullptr;

// ---------------------------------------------------------------- kernels
c10::DeviceIndex device_index_or_current(std::optional<c10::Device> device) {
  if (device && device->has_index()) return device->index();
  return t_current_device;
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> /*layout*/,
                               std::optional<at::Device> device, std::optional<bool> pin_memory,
                               std::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(!pin_memory.value_or(false), "Only dense CPU tensors can be pinned");
  auto d = device_index_or_current(device);
  constexpr c10::DispatchKeySet ks(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_generic(size, allocator_for(d), ks,
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout> /*layout*/,
                         std::optional<at::Device> device, std::optional<bool> /*pin_memory*/) {
  auto d = device_index_or_current(device);
  constexpr c10::DispatchKeySet ks(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_strided_generic(size, stride, allocator_for(d), ks,
                                           c10::dtype_or_default(dtype));
}

// A CPU tensor aliasing the same bytes (host memory backs every simulated device), with the same
// lazy conjugate / negative bits.
at::Tensor host_alias(const at::Tensor& t) {
  auto alias = at::from_blob(t.data_ptr(), t.sizes(), t.strides(),
                             t.options().device(c10::DeviceType::CPU));
  alias._set_conj(t.is_conj());
  alias._set_neg(t.is_neg());
  return alias;
}

// Every copy touching a musa tensor: the CPU copy on host aliases resolves the lazy bits,
// broadcasts and converts dtypes.
void host_copy(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  auto dst_h = dst.is_cpu() ? dst : host_alias(dst);
  auto src_h = src.is_cpu() ? src : host_alias(src);
  dst_h.copy_(src_h, non_blocking);
}

// A backend's own copy_ (as torch_musa has): torch's generic one sends PrivateUse1 copies through
// _copy_from, which the Conjugate/Negative fallbacks intercept to materialize the source by a
// clone, itself a copy_: a lazy conj() or _neg_view() of a musa tensor recursed until the stack
// overflowed.
at::Tensor& copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  host_copy(self, src, non_blocking);
  return self;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  if (self.numel() > 0) host_copy(dst, self, /*non_blocking=*/false);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  // The CPU fallback writes mutated arguments back from their host aliases (_to_cpu below):
  // when the kernel wrote in place, the bytes are there already.
  if (self.data_ptr() == dst.data_ptr() && self.sizes() == dst.sizes() &&
      self.strides() == dst.strides() && self.dtype() == dst.dtype()) {
    return dst;
  }
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

// What the CPU fallback runs CPU kernels on: host aliases of the musa tensors, not copies (host
// memory backs every simulated device, so a kernel reads its inputs and writes in-place and out=
// results where they are). Results the kernel allocates are still copied to the device.
// The alias's storage is resizable: a kernel that resizes an out= argument gets fresh CPU memory,
// and the fallback then resizes the musa tensor and copies the result into it.
at::Tensor fallback_alias(const at::Tensor& t) {
  const auto& musa = t.storage();
  c10::Storage storage(c10::Storage::use_byte_size_t(), musa.nbytes(),
                       c10::DataPtr(musa.mutable_data(), c10::Device(c10::DeviceType::CPU)),
                       c10::GetCPUAllocator(), /*resizable=*/true);
  // Built directly, not with empty() + set_(): two dispatcher calls per operand per op otherwise.
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  impl->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  return at::Tensor(std::move(impl));
}

std::vector<at::Tensor> to_cpu(at::TensorList tensors) {
  // Complex operators and lazy negative views get copies of all their tensors, as from torch's
  // own fallback: behind the conjugate fallback (dot of a conj() and its base) the CPU kernels
  // read wrong values through aliases.
  bool copy = false;
  for (const auto& t : tensors) {
    copy = copy || (t.defined() && (t.is_complex() || t.is_conj() || t.is_neg()));
  }
  std::vector<at::Tensor> out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) {
    if (!t.defined() || t.device().type() != kMusa) {
      out.push_back(t);
    } else {
      out.push_back(copy ? t.cpu() : fallback_alias(t));
    }
  }
  return out;
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  // Same shape: keep the strides (the fallback resizes strided views it writes back into).
  if (self.sizes() == size && !memory_format) return self;
  impl->set_sizes_contiguous(size);
  auto needed = at::detail::computeStorageNbytesContiguous(size, self.dtype().itemsize(),
                                                           impl->storage_offset());
  auto& storage = impl->unsafe_storage();
  if (storage.nbytes() < needed) {
    g_hooks->resizePrivateUse1Bytes(storage, needed);
  }
  if (memory_format && *memory_format != at::MemoryFormat::Preserve) {
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                        c10::IntArrayRef size, c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, source, storage_offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  std::optional<at::IntArrayRef> stride_opt =
      stride.data() != nullptr ? std::optional<at::IntArrayRef>(stride) : std::nullopt;
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size, stride_opt,
                               /*resize_storage=*/false);
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  int64_t n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage(self, std::move(source), 0, {n}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& src) {
  return set_storage(self, src.storage(), src.storage_offset(), src.sizes(), src.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, allocator_for(self.device().index()),
                       /*resizable=*/true);
  return set_storage(self, storage, 0, {0}, {});
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  return at::_local_scalar_dense(host_alias(self));
}

void record_stream(at::Tensor& /*self*/, c10::Stream /*s*/) {}

std::vector<at::Tensor> to_host(std::initializer_list<at::Tensor> ts) {
  std::vector<at::Tensor> out;
  for (auto& t : ts) out.push_back(t.defined() ? t.cpu() : t);
  return out;
}

at::Tensor to_device_of(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t.to(like.device()) : t;
}

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                                    c10::IntArrayRef padding, c10::IntArrayRef dilation,
                                    bool transposed, c10::IntArrayRef output_padding,
                                    int64_t groups) {
  std::optional<at::Tensor> bias_h;
  if (bias && bias->defined()) bias_h = bias->cpu();
  auto out = at::convolution(input.cpu(), weight.cpu(), bias_h, stride, padding, dilation,
                             transposed, output_padding, groups);
  return out.to(input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
    c10::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  std::vector<int64_t> bias_sizes{transposed ? weight.size(1) * groups : weight.size(0)};
  auto r = at::convolution_backward(grad_output.cpu(), input.cpu(), weight.cpu(), bias_sizes,
                                    stride, padding, dilation, transposed, output_padding, groups,
                                    output_mask);
  return {to_device_of(std::get<0>(r), input), to_device_of(std::get<1>(r), input),
          to_device_of(std::get<2>(r), input)};
}

// The fused LSTM cell RNN modules take on a non-CPU device; same maths as the CUDA kernel, with the
// activated gates kept as the workspace for backward.
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  auto gates = input_gates.cpu() + hidden_gates.cpu();
  if (input_bias && input_bias->defined()) gates = gates + input_bias->cpu();
  if (hidden_bias && hidden_bias->defined()) gates = gates + hidden_bias->cpu();
  auto chunks = gates.chunk(4, 1);
  auto i = chunks[0].sigmoid(), f = chunks[1].sigmoid(), g = chunks[2].tanh(),
       o = chunks[3].sigmoid();
  auto cy = f * cx.cpu() + i * g;
  auto hy = o * cy.tanh();
  auto workspace = at::cat({i, f, g, o}, 1);
  auto dev = input_gates.device();
  return {hy.to(dev), cy.to(dev), workspace.to(dev)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward_impl(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  auto dev = workspace.device();
  auto ws = workspace.cpu();
  auto chunks = ws.chunk(4, 1);
  auto i = chunks[0], f = chunks[1], g = chunks[2], o = chunks[3];
  auto cy_h = cy.cpu(), cx_h = cx.cpu();
  auto tanh_cy = cy_h.tanh();
  auto ghy = grad_hy && grad_hy->defined() ? grad_hy->cpu() : at::zeros_like(tanh_cy);
  auto gcy = grad_cy && grad_cy->defined() ? grad_cy->cpu() : at::zeros_like(tanh_cy);
  auto gc = gcy + ghy * o * (1 - tanh_cy * tanh_cy);
  auto gi = gc * g * i * (1 - i);
  auto gf = gc * cx_h * f * (1 - f);
  auto gg = gc * i * (1 - g * g);
  auto go = ghy * tanh_cy * o * (1 - o);
  auto grad_gates = at::cat({gi, gf, gg, go}, 1);
  auto grad_cx = gc * f;
  at::Tensor grad_bias;
  if (has_bias) grad_bias = grad_gates.sum(0, /*keepdim=*/false).to(dev);
  return {grad_gates.to(dev), grad_cx.to(dev), grad_bias};
}

// The common case of the fallback without at::native::cpu_fallback's generality (its _to_cpu and
// _copy_from_and_resize round trips through the dispatcher): plain tensor arguments, some on a
// musa device, and tensor returns that are new or the written arguments themselves. Returns
// false, touching nothing, for anything else (tensor lists, returned views, complex or lazily
// conjugated/negated operands), which the full fallback then runs.
bool lean_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  for (const auto& r : schema.returns()) {
    if (r.type()->kind() != c10::TypeKind::TensorType) return false;
    if (r.alias_info() != nullptr && !r.alias_info()->isWrite()) return false;  // a view
  }
  const auto& args = schema.arguments();
  const size_t n = args.size();
  const size_t base = stack->size() - n;
  c10::DeviceIndex device = -1;
  for (size_t i = 0; i < n; ++i) {
    const auto& iv = (*stack)[base + i];
    if (iv.isTensor()) {
      const auto& t = iv.toTensor();
      if (!t.defined() || t.device().type() != kMusa) continue;
      if (t.is_complex() || t.is_conj() || t.is_neg()) return false;
      if (device < 0) device = t.device().index();
    } else if (iv.isList()) {
      for (const auto& element : iv.toListRef()) {
        if (element.isTensor()) return false;
      }
    }
  }
  if (device < 0) return false;  // no musa operand: where would results go?

  c10::SmallVector<at::Tensor, 8> originals(n), aliases(n);
  for (size_t i = 0; i < n; ++i) {
    auto& iv = (*stack)[base + i];
    if (!iv.isTensor()) continue;
    const auto& t = iv.toTensor();
    if (!t.defined() || t.device().type() != kMusa) continue;
    originals[i] = t;
    aliases[i] = fallback_alias(t);
    iv = c10::IValue(aliases[i]);
  }
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);

  // Written arguments were written where they are, unless the kernel resized them (a resized
  // alias has fresh host memory): then the musa tensor is resized and gets the result.
  for (size_t i = 0; i < n; ++i) {
    const auto* info = args[i].alias_info();
    if (!originals[i].defined() || info == nullptr || !info->isWrite()) continue;
    copy_from_and_resize(aliases[i], originals[i]);
  }
  const size_t returns = schema.returns().size();
  for (size_t j = stack->size() - returns; j < stack->size(); ++j) {
    auto& iv = (*stack)[j];
    if (!iv.isTensor() || !iv.toTensor().defined()) continue;
    const auto& r = iv.toTensor();
    bool mapped = false;
    for (size_t i = 0; i < n && !mapped; ++i) {
      if (aliases[i].defined() && r.is_same(aliases[i])) {
        iv = c10::IValue(originals[i]);
        mapped = true;
      }
    }
    if (mapped || r.device().type() == kMusa) continue;
    // A result the CPU kernel allocated: onto the operands' device, strides kept.
    auto out = empty_strided(r.sizes(), r.strides(), r.scalar_type(), std::nullopt,
                             c10::Device(kMusa, device), std::nullopt);
    if (r.numel() > 0) fallback_alias(out).copy_(r);
    iv = c10::IValue(std::move(out));
  }
  return true;
}

// Boxed fallback: CPU kernels reject musa generators, so swap in the owned CPU generator (and use
// the device's default generator where the caller gave none, as a real backend would).
void sim_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t n = args.size();
  const size_t base = stack->size() - n;
  // Without an explicit generator, draw from the default generator of the tensors' device.
  c10::DeviceIndex gen_device = t_current_device;
  for (size_t i = 0; i < n; ++i) {
    const auto& iv = (*stack)[base + i];
    if (iv.isTensor() && iv.toTensor().defined() && iv.toTensor().device().type() == kMusa) {
      gen_device = iv.toTensor().device().index();
      break;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const auto& type = args[i].type();
    bool is_gen = type->kind() == c10::TypeKind::GeneratorType;
    if (!is_gen && type->kind() == c10::TypeKind::OptionalType) {
      is_gen = type->castRaw<c10::OptionalType>()->getElementType()->kind() ==
               c10::TypeKind::GeneratorType;
    }
    if (!is_gen) continue;
    auto& iv = (*stack)[base + i];
    at::Generator gen;
    if (iv.isGenerator() && iv.toGenerator().device().type() == kMusa) {
      gen = iv.toGenerator();
    } else if (iv.isNone()) {
      gen = default_generator(gen_device);
    }
    if (gen.defined()) {
      std::lock_guard<std::mutex> lock(gen.mutex());
      iv = c10::IValue(static_cast<SimGenerator*>(gen.unsafeGetGeneratorImpl())->for_kernel());
    }
  }
  // A device kernel is one operator to the profiler: the CPU ops the fallback runs for it
  // (copies, the CPU kernel) would show up nested under it, twice where the op names match.
  // (Turning recording off rebuilds the thread's callback set: only when someone records.)
  std::optional<at::DisableRecordFunctionGuard> no_profiling;
  if (at::hasCallbacks()) no_profiling.emplace();
  if (!lean_fallback(op, stack)) at::native::cpu_fallback(op, stack);
}

// native_dropout takes no generator argument: its CPU kernel, reached through the fallback, would
// draw from the CPU default generator. A device kernel draws from its device's default generator
// (torch.musa.manual_seed / set_rng_state govern dropout masks), so the mask is drawn here with
// bernoulli_ on the musa tensor, whose generator the fallback resolves. Same results otherwise.
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train) {
  if (input.numel() == 0) {
    return {input, at::empty_like(input)};
  }
  if (train.has_value() && !*train) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  const double p1m = 1. - p;
  const double scale = p1m == 0 ? 0. : 1. / p1m;
  auto mask = at::empty_like(input, input.options().dtype(at::kBool));
  mask.bernoulli_(p1m);
  return {input.mul(mask).mul_(scale), mask};
}

at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&,
                                       const std::optional<at::Tensor>&, int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
              "autocast.\nMany models use a sigmoid layer right before the binary cross entropy "
              "layer.\nIn this case, combine the two layers using "
              "torch.nn.functional.binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss."
              "  binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.");
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("copy_", copy_);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_to_cpu", to_cpu);
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("view", at::native::view);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("unfold", at::native::unfold);
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("view_as_complex", at::native::view_as_complex);
  m.impl("resize_", resize_);
  m.impl("set_.source_Storage_storage_offset", set_storage);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_", set_empty);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("record_stream", record_stream);
  m.impl("convolution_overrideable", convolution_overrideable);
  m.impl("convolution_backward_overrideable", convolution_backward_overrideable);
  m.impl("_thnn_fused_lstm_cell", fused_lstm_cell);
  m.impl("_thnn_fused_lstm_cell_backward_impl", fused_lstm_cell_backward_impl);
  m.impl("native_dropout", native_dropout);
}

// Ops whose composite kernel would call an out= variant with a wrongly shaped output: run the whole
// functional op through the fallback instead (as a real backend's own kernel would).
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mse_loss", torch::CppFunction::makeFromBoxedFunction<&sim_fallback>());
  // Their composite kernels call a DispatchStub for the output's device type, which only CPU has.
  for (const char* name : {"kaiser_window", "kaiser_window.periodic", "kaiser_window.beta"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&sim_fallback>());
  }
  // torch_musa has its own group-norm kernels; torch's composite one views the input and fails
  // on channels-last tensors (diffusers' UNets), which the CPU kernel handles.
  for (const char* name : {"native_group_norm", "native_group_norm_backward"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&sim_fallback>());
  }
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&sim_fallback>());
}

// ---------------------------------------------------------------- python bindings
void configure(int device_count, int64_t total_memory) {
  TORCH_CHECK(device_count >= 0 && device_count <= kMaxDevices, "device count must be in [0, ",
              kMaxDevices, "], got ", device_count);
  g_device_count = device_count;
  g_total_memory = total_memory;
  for (int i = 0; i < device_count; ++i) {
    if (!g_device_allocators[i]) g_device_allocators[i] = new SimAllocator(i);
  }
  c10::SetAllocator(kMusa, &g_current_allocator);
  if (!g_hooks) {
    g_hooks = new SimHooks();
    at::RegisterPrivateUse1HooksInterface(g_hooks);
  }
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

void reset_peak(int device) {
  check_device(device);
  for (auto* arr : {&g_stats[device].bytes, &g_stats[device].count}) {
    for (auto& st : *arr) st.peak.store(st.current.load());
  }
}

void reset_accumulated(int device) {
  check_device(device);
  auto& s = g_stats[device];
  for (auto* arr : {&s.bytes, &s.count}) {
    for (auto& st : *arr) {
      st.allocated.store(0);
      st.freed.store(0);
    }
  }
  s.num_ooms.store(0);
  s.num_device_alloc.store(0);
  s.num_device_free.store(0);
}

}  // namespace torchada_sim

// The autocast kernel macros name ATen types unqualified: they expect to expand in at::autocast.
namespace at::autocast {
TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define TORCHADA_SIM_LOWER(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(TORCHADA_SIM_LOWER)
  KERNEL_PRIVATEUSEONE(convolution_overrideable, lower_precision_fp)
#define TORCHADA_SIM_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(TORCHADA_SIM_FP32)
#define TORCHADA_SIM_FP32_OPT(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(TORCHADA_SIM_FP32_OPT)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
#define TORCHADA_SIM_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(TORCHADA_SIM_PROMOTE)
  m.impl("binary_cross_entropy", TORCH_FN(torchada_sim::binary_cross_entropy_banned));
}

// Ops outside the lists run unchanged under autocast (torch registers this only for in-tree keys).
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}
}  // namespace at::autocast

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace torchada_sim;
  m.def("_sim_configure", &configure);
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
  m.def("_musa_setStream", [](int64_t stream_id, int device_index, int /*device_type*/) {
    check_device(device_index);
    t_current_stream[device_index] = stream_id;
    t_current_device = static_cast<c10::DeviceIndex>(device_index);
  });
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
    return g_guard_impl.elapsedTime(reinterpret_cast<void*>(a), reinterpret_cast<void*>(b), -1);
  });
  m.def("_get_allow_tf32", [] { return g_allow_tf32; });
  m.def("_set_allow_tf32", [](bool v) { g_allow_tf32 = v; });
}
