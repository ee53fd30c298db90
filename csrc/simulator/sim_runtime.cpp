// The simulated device's runtime: device state, the allocator with its statistics, pinned and
// unified CPU memory, the device guard with streams and timed events, and the profiler stubs.
// Plain c10 headers: nothing here needs Python or the operator library.

#include "sim_internal.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/ApproximateClock.h>
#include <c10/util/Exception.h>
#include <c10/util/flat_hash_map.h>
#include <torch/csrc/profiler/stubs/base.h>

#include "stubs/sim_handles.h"
#include "../torch_features.h"

#if TORCHADA_HAS_DEVICE_ALLOCATOR
#include <c10/core/CachingDeviceAllocator.h>
#endif

#include <time.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace torchada_sim {

constexpr size_t kSmallSize = 1 << 20;  // the caching allocator's small-pool boundary

int g_device_count = 0;
int64_t g_total_memory = 0;
std::atomic<bool> g_initialized{false};
bool g_in_bad_fork = false;
bool g_allow_tf32 = true;  // torch_musa's Context default

thread_local c10::DeviceIndex t_current_device = 0;

// ---------------------------------------------------------------- memory statistics
std::array<DeviceStats, kMaxDevices> g_stats;

struct BlockInfo {
  size_t size;
  c10::DeviceIndex device;
};
// Open addressing: no node allocation per block, as std::unordered_map has.
std::mutex g_blocks_mutex;
ska::flat_hash_map<void*, BlockInfo> g_blocks;

std::mutex& stats_mutex() { return g_blocks_mutex; }

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
  s.num_device_alloc.store(s.num_device_alloc.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
}

void record_free(c10::DeviceIndex d, size_t n) {
  auto& s = g_stats[d];
  int pool = n < kSmallSize ? 1 : 2;
  s.bytes[0].sub(n);
  s.bytes[pool].sub(n);
  s.count[0].sub(1);
  s.count[pool].sub(1);
  s.num_device_free.store(s.num_device_free.load(std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
}

void sim_free(void* ptr) {
  if (ptr == nullptr) return;
  {
    std::lock_guard<std::mutex> g(g_blocks_mutex);
    auto it = g_blocks.find(ptr);
    if (it != g_blocks.end()) {
      if (it->second.size) record_free(it->second.device, it->second.size);
      g_blocks.erase(it);
    }
  }
  std::free(ptr);
}

// c10's format_size, as the caching allocators word sizes in their messages.
std::string format_size(uint64_t size) {
  std::ostringstream os;
  os.precision(2);
  os << std::fixed;
  if (size <= 1024) {
    os << size << " bytes";
  } else if (size <= 1048576) {
    os << (static_cast<double>(size) / 1024.0) << " KiB";
  } else if (size <= 1073741824ULL) {
    os << (static_cast<double>(size) / 1048576.0) << " MiB";
  } else {
    os << (static_cast<double>(size) / 1073741824.0) << " GiB";
  }
  return os.str();
}

void* sim_malloc(size_t n, c10::DeviceIndex d) {
  check_device(d);
  auto& s = g_stats[d];
  int64_t limit = static_cast<int64_t>(static_cast<double>(g_total_memory) * s.fraction);
  if (s.bytes[0].current.load() + static_cast<int64_t>(n) > limit) {
    s.num_ooms.fetch_add(1);
    // torch_musa's caching allocator words it so (MUSACachingAllocator.cpp); the simulator caches
    // nothing, so all it holds is allocated.
    const int64_t used = s.bytes[0].current.load();
    const std::string allowed =
        s.fraction < 1.0 ? format_size(static_cast<uint64_t>(limit)) + " allowed; " : "";
    TORCH_CHECK_WITH(OutOfMemoryError, false, "MUSA out of memory. Tried to allocate ",
                     format_size(n), ". GPU ", static_cast<int>(d), " has a total capacity of ",
                     format_size(g_total_memory), " of which ",
                     format_size(g_total_memory > used ? g_total_memory - used : 0), " is free. ",
                     allowed, "Of the allocated memory ", format_size(used),
                     " is allocated by PyTorch, and 0 bytes is reserved by PyTorch but "
                     "unallocated. If reserved but unallocated memory is large try setting "
                     "PYTORCH_MUSA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
                     "See documentation for Memory Management  "
                     "(https://pytorch.org/docs/stable/notes/musa.html#environment-variables)");
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
    record_alloc(d, n);
  }
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

void install_allocators(int device_count) {
  for (int i = 0; i < device_count; ++i) {
    if (!g_device_allocators[i]) g_device_allocators[i] = new SimAllocator(i);
  }
  c10::SetAllocator(kMusa, &g_current_allocator);
}

void reset_peak_stats(c10::DeviceIndex device) {
  check_device(device);
  std::lock_guard<std::mutex> lock(stats_mutex());
  for (auto* arr : {&g_stats[device].bytes, &g_stats[device].count}) {
    for (auto& st : *arr) st.peak.store(st.current.load());
  }
}

void reset_accumulated_stats(c10::DeviceIndex device) {
  check_device(device);
  std::lock_guard<std::mutex> lock(stats_mutex());
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

#if TORCHADA_HAS_DEVICE_ALLOCATOR
// torch_musa 2.11.0.post2's MUSAAllocator as torch sees it: a c10::DeviceAllocator whose
// statistics and memory info torch.accelerator reads. Allocation is the same allocator's.
struct SimDeviceAllocator final : c10::DeviceAllocator {
  c10::DataPtr allocate(size_t n) override { return g_current_allocator.allocate(n); }
  c10::DeleterFnPtr raw_deleter() const override { return &sim_free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {}  // nothing is cached
  void recordStream(const c10::DataPtr& /*ptr*/, c10::Stream /*stream*/) override {}

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex d) override {
    check_device(d);
    c10::CachingDeviceAllocator::DeviceStats out;
    auto& s = g_stats[d];
    auto fill = [](c10::CachingDeviceAllocator::StatArray& to, const std::array<Stat, 3>& from) {
      for (size_t i = 0; i < 3; ++i) {
        to[i].current = from[i].current.load();
        to[i].peak = from[i].peak.load();
        to[i].allocated = from[i].allocated.load();
        to[i].freed = from[i].freed.load();
      }
    };
    // Nothing is cached: what is reserved, active and requested is what is allocated.
    for (auto* bytes : {&out.allocated_bytes, &out.reserved_bytes, &out.active_bytes,
                        &out.requested_bytes}) {
      fill(*bytes, s.bytes);
    }
    for (auto* count : {&out.allocation, &out.segment, &out.active}) fill(*count, s.count);
    out.num_ooms = s.num_ooms.load();
    out.num_device_alloc = s.num_device_alloc.load();
    out.num_device_free = s.num_device_free.load();
    return out;
  }
  void resetAccumulatedStats(c10::DeviceIndex d) override { reset_accumulated_stats(d); }
  void resetPeakStats(c10::DeviceIndex d) override { reset_peak_stats(d); }
#if TORCHADA_HAS_DEVICE_MEMORY_INFO
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex d) override {
    check_device(d);
    const auto& s = g_stats[d];
    const int64_t limit = static_cast<int64_t>(static_cast<double>(g_total_memory) * s.fraction);
    const int64_t used = s.bytes[0].current.load();
    return {static_cast<size_t>(limit > used ? limit - used : 0),
            static_cast<size_t>(g_total_memory)};
  }
#endif
};
#endif

bool use_device_allocator() {
#if TORCHADA_HAS_DEVICE_ALLOCATOR
  static SimDeviceAllocator allocator;
  c10::SetAllocator(kMusa, &allocator);
  return true;
#else
  return false;
#endif
}

c10::Allocator* allocator_for(c10::DeviceIndex d) {
  check_device(d);
  return g_device_allocators[d];
}

c10::DeviceIndex device_of_block(void* p, c10::DeviceIndex otherwise) {
  std::lock_guard<std::mutex> g(g_blocks_mutex);
  auto it = g_blocks.find(p);
  return it == g_blocks.end() ? otherwise : it->second.device;
}

// Host memory whose blocks are remembered, so that what kind of memory a pointer is can be asked:
// pinned memory (is_pinned()) and unified CPU memory (below) are both plain host memory otherwise.
struct HostBlocks {
  std::mutex mutex;
  std::unordered_set<void*> blocks;
  bool contains(const void* p) {
    std::lock_guard<std::mutex> g(mutex);
    return blocks.count(const_cast<void*>(p)) > 0;
  }
};
HostBlocks g_pinned, g_unified;

// The deleter is a plain function per set: c10's DataPtr takes no state with it.
template <HostBlocks& set>
void host_free(void* p) {
  {
    std::lock_guard<std::mutex> g(set.mutex);
    set.blocks.erase(p);
  }
  std::free(p);
}

template <HostBlocks& set>
struct HostAllocator : c10::Allocator {
  explicit HostAllocator(const char* what) : what_(what) {}
  c10::DataPtr allocate(size_t n) override {
    void* p = nullptr;
    if (posix_memalign(&p, 64, n == 0 ? 1 : n) != 0) {
      TORCH_CHECK_WITH(OutOfMemoryError, false, what_, " allocation of ", n, " bytes failed");
    }
    {
      std::lock_guard<std::mutex> g(set.mutex);
      set.blocks.insert(p);
    }
    return {p, p, &host_free<set>, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &host_free<set>; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

 private:
  const char* what_;
};

HostAllocator<g_pinned> g_pinned_allocator("pinned host");

c10::Allocator* pinned_allocator() { return &g_pinned_allocator; }

bool is_pinned_ptr(const void* p) { return g_pinned.contains(p); }

// ---------------------------------------------------------------- unified CPU memory
// torch_musa's unified CPU allocator (PYTORCH_MUSA_ALLOC_CONF=cpu:unified, or inside
// use_unified_cpu_allocator()) gives CPU tensors managed memory (musaMallocManaged), which a storage
// may then turn into device memory in place (edit_device). Simulated devices run on host memory,
// so what is kept is which memory is managed: only managed, pinned or device memory may become a
// device storage, and a managed allocation needs a device, as the runtime call does.
struct UnifiedCPUAllocator final : HostAllocator<g_unified> {
  UnifiedCPUAllocator() : HostAllocator<g_unified>("managed") {}
  c10::DataPtr allocate(size_t n) override {
    TORCH_CHECK(g_device_count > 0,
                "MUSA error: no MUSA-capable device is detected (error code 100) from "
                "musaMallocManaged(&ptr, size, musaMemAttachGlobal)");
    return HostAllocator<g_unified>::allocate(n);
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

bool is_unified_ptr(const void* p) { return g_unified.contains(p); }

bool is_device_ptr(const void* p) {
  std::lock_guard<std::mutex> g(g_blocks_mutex);
  return g_blocks.count(const_cast<void*>(p)) > 0;
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
#if TORCHADA_HAS_STREAM_NATIVE_HANDLE
  void* getStreamNativeHandle(const c10::Stream s) const override {
    return stream_native_handle(s.device_index(), s.id());
  }
#endif
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

double elapsed_time(void* event1, void* event2) {
  return g_guard_impl.elapsedTime(event1, event2, -1);
}

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

}  // namespace torchada_sim

// The simulated driver's management library (stubs/libmtml.c) reads a device's bytes in use
// here, as a real libmtml asks the kernel driver: the one C name the backend exports for it. The
// index is torch's (a visible device); -1 for one out of range.
extern "C" __attribute__((visibility("default"))) long long torchada_sim_memory_used(int device) {
  if (device < 0 || device >= torchada_sim::g_device_count) return -1;
  return static_cast<long long>(torchada_sim::g_stats[device].bytes[0].current.load());
}
