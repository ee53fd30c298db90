// What the simulator's translation units share: device state, memory statistics and the entry
// points one part calls in another. sim_runtime.cpp holds the device state, allocators, streams,
// events and profiler stubs; sim_kernels.cpp the generators, hooks and operator registrations;
// sim_mccl.cpp the MCCL process group; musa_sim.cpp the Python module. Only the last two include
// Python and pybind11.

#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

namespace at {
struct Generator;  // declared only: the runtime does without ATen's tensor headers
}  // namespace at

namespace torchada_sim {

constexpr int kMaxDevices = 16;
constexpr c10::DeviceType kMusa = c10::DeviceType::PrivateUse1;

// ---------------------------------------------------------------- device state (sim_runtime.cpp)
extern int g_device_count;
extern int64_t g_total_memory;
extern std::atomic<bool> g_initialized;
extern bool g_in_bad_fork;
extern bool g_allow_tf32;

extern thread_local c10::DeviceIndex t_current_device;
extern thread_local std::array<c10::StreamId, kMaxDevices> t_current_stream;

void check_device(c10::DeviceIndex d);

// A stream's handle for the runtime (MUSAStream::stream()): NULL for the default stream, the
// backend's record for its own streams, the id itself for an external stream.
void* stream_native_handle(c10::DeviceIndex idx, c10::StreamId id);

// ---------------------------------------------------------------- memory (sim_runtime.cpp)
// Index 0: all, 1: small pool, 2: large pool. Written only with stats_mutex() held (the allocator
// holds it anyway for its block table), so updates are plain loads and stores, not atomic
// read-modify-writes; the atomics let readers go without the lock.
struct Stat {
  std::atomic<int64_t> current{0}, peak{0}, allocated{0}, freed{0};
  void add(int64_t n) {
    const int64_t now = current.load(std::memory_order_relaxed) + n;
    current.store(now, std::memory_order_relaxed);
    allocated.store(allocated.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    if (now > peak.load(std::memory_order_relaxed)) peak.store(now, std::memory_order_relaxed);
  }
  void sub(int64_t n) {
    current.store(current.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
    freed.store(freed.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

struct DeviceStats {
  std::array<Stat, 3> bytes;   // allocated == reserved == active == requested here: no caching
  std::array<Stat, 3> count;   // number of live blocks
  std::atomic<int64_t> num_ooms{0};
  std::atomic<int64_t> num_device_alloc{0}, num_device_free{0};
  double fraction = 1.0;
};

extern std::array<DeviceStats, kMaxDevices> g_stats;
// Held to change g_stats (resets included).
std::mutex& stats_mutex();

void reset_peak_stats(c10::DeviceIndex d);
void reset_accumulated_stats(c10::DeviceIndex d);

// Makes the allocators of devices [0, device_count) and the musa allocator torch looks up.
void install_allocators(int device_count);
// Makes the musa allocator torch looks up a c10::DeviceAllocator (torch_musa 2.11.0.post2's,
// which torch.accelerator's memory functions work with); false where torch has no such class.
bool use_device_allocator();
c10::Allocator* allocator_for(c10::DeviceIndex d);
// The device whose allocator made `p`, or `otherwise` for memory it did not make.
c10::DeviceIndex device_of_block(void* p, c10::DeviceIndex otherwise);
bool is_device_ptr(const void* p);

c10::Allocator* pinned_allocator();
bool is_pinned_ptr(const void* p);

void register_unified_cpu_allocator();
void reset_unified_cpu_allocator();
bool is_unified_ptr(const void* p);

// ---------------------------------------------------------------- events (sim_runtime.cpp)
// Milliseconds between two events of the device guard (torch.Event.elapsed_time).
double elapsed_time(void* event1, void* event2);

// ---------------------------------------------------------------- sim_kernels.cpp
const at::Generator& default_generator(c10::DeviceIndex idx);
// Registers the PrivateUse1 hooks interface, once.
void register_hooks();

// ---------------------------------------------------------------- sim_mccl.cpp
// torch_musa's registerProcessGroupMCCL: torch.distributed.ProcessGroupMCCL and the "mccl" backend.
void register_process_group_mccl();

}  // namespace torchada_sim
