/*
 * libmusart.so of the simulated MUSA SDK: the runtime API (musa*), backed by host memory.
 *
 * Error codes (musaError_t). The real numeric values are not public; the simulator's follow the
 * CUDA runtime's numbering, which MUSA mirrors by name:
 *   0   musaSuccess
 *   1   musaErrorInvalidValue              null output pointer, bad size or flags, unknown pointer
 *   2   musaErrorMemoryAllocation          host allocation failed or the device is full
 *   3   musaErrorInitializationError
 *   21  musaErrorInvalidMemcpyDirection    memcpy kind outside 0..4
 *   100 musaErrorNoDevice                  musaGetDeviceCount with no visible device
 *   101 musaErrorInvalidDevice             device ordinal out of range, peer access to itself
 *   400 musaErrorInvalidResourceHandle     null stream/event handle, elapsed time of an
 *                                          event that was never recorded
 *   704 musaErrorPeerAccessAlreadyEnabled
 *   801 musaErrorNotSupported              IPC memory handles (one process sees only its own heap)
 *   999 musaErrorUnknown
 * musaMemcpyKind: 0 HostToHost, 1 HostToDevice, 2 DeviceToHost, 3 DeviceToDevice, 4 Default.
 *
 * Streams and events are host-side objects; all work runs synchronously on the calling thread, so
 * the *Async calls have finished when they return. torch_musa's own streams and events
 * (Stream.musa_stream, Event.musa_event) are such objects too (sim_handles.h).
 * musaGetDeviceProperties fills the simulator's own `musaDeviceProp` below (the real struct's
 * layout is not public), so ctypes callers declare this layout; it is smaller than any real one,
 * so a caller's larger buffer is never overrun.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>

/* musaError_t, its codes and the handle types: the header extensions include, written once. */
#include "musa_runtime_api.h"
#include "musa_sim_sdk.h"
#include "sim_handles.h"


enum { musaMemcpyHostToHost, musaMemcpyHostToDevice, musaMemcpyDeviceToHost,
       musaMemcpyDeviceToDevice, musaMemcpyDefault };

typedef struct {
  char name[256];
  size_t totalGlobalMem;
  int major;
  int minor;
  int multiProcessorCount;
  int warpSize;
  int maxThreadsPerBlock;
  int isMultiGpuBoard;
  int integrated;
  int canMapHostMemory;
  int unifiedAddressing;
  int pciDeviceID;
} musaDeviceProp;

typedef struct {
  char reserved[64];
} musaIpcMemHandle_t;

/* Device allocations are kept in a list so musaFree can reject foreign pointers and
 * musaMemGetInfo can report what is in use, per device. */
typedef struct alloc_node {
  void* ptr;
  size_t size;
  int device;
  struct alloc_node* next;
} alloc_node;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static alloc_node* g_allocs = NULL;
static size_t g_used[SIM_MAX_DEVICES];
static unsigned g_peer[SIM_MAX_DEVICES]; /* bit p of g_peer[d]: d has enabled access to p */

static __thread int t_device = 0;
static __thread musaError_t t_last_error = musaSuccess;

static musaError_t fail(musaError_t err) {
  t_last_error = err;
  return err;
}

#define CHECK(cond, err) \
  do {                   \
    if (!(cond)) {       \
      return fail(err);  \
    }                    \
  } while (0)

static int valid_device(int d) { return d >= 0 && d < sim_device_count(); }

SIM_API const char* musaGetErrorString(musaError_t err) {
  switch (err) {
    case musaSuccess: return "no error";
    case musaErrorInvalidValue: return "invalid argument";
    case musaErrorMemoryAllocation: return "out of memory";
    case musaErrorInitializationError: return "initialization error";
    case musaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case musaErrorNoDevice: return "no MUSA-capable device is detected";
    case musaErrorInvalidDevice: return "invalid device ordinal";
    case musaErrorInvalidResourceHandle: return "invalid resource handle";
    case musaErrorPeerAccessAlreadyEnabled:
      return "peer access is already enabled";
    case musaErrorNotSupported: return "operation not supported";
    default: return "unrecognized error code";
  }
}

SIM_API musaError_t musaGetLastError(void) {
  musaError_t err = t_last_error;
  t_last_error = musaSuccess;
  return err;
}

SIM_API musaError_t musaPeekAtLastError(void) { return t_last_error; }

SIM_API musaError_t musaDriverGetVersion(int* version) {
  CHECK(version != NULL, musaErrorInvalidValue);
  *version = SIM_MUSA_VERSION;
  return musaSuccess;
}

SIM_API musaError_t musaRuntimeGetVersion(int* version) {
  CHECK(version != NULL, musaErrorInvalidValue);
  *version = SIM_MUSA_VERSION;
  return musaSuccess;
}

SIM_API musaError_t musaGetDeviceCount(int* count) {
  CHECK(count != NULL, musaErrorInvalidValue);
  *count = sim_device_count();
  return *count > 0 ? musaSuccess : fail(musaErrorNoDevice);
}

SIM_API musaError_t musaGetDevice(int* device) {
  CHECK(device != NULL, musaErrorInvalidValue);
  *device = t_device;
  return musaSuccess;
}

SIM_API musaError_t musaSetDevice(int device) {
  CHECK(valid_device(device), musaErrorInvalidDevice);
  t_device = device;
  return musaSuccess;
}

SIM_API musaError_t musaGetDeviceProperties(musaDeviceProp* prop, int device) {
  CHECK(prop != NULL, musaErrorInvalidValue);
  CHECK(valid_device(device), musaErrorInvalidDevice);
  const sim_board* b = sim_board_get();
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "%s", b->name);
  prop->totalGlobalMem = (size_t)b->total_memory;
  prop->major = b->major;
  prop->minor = b->minor;
  prop->multiProcessorCount = b->sm_count;
  prop->warpSize = 128; /* MUSA's warp width on these boards */
  prop->maxThreadsPerBlock = 1024;
  prop->canMapHostMemory = 1;
  prop->unifiedAddressing = 1;
  prop->pciDeviceID = device;
  return musaSuccess;
}

SIM_API musaError_t musaDeviceSynchronize(void) { return musaSuccess; }

/* Destroys what this process holds on the current device: its allocations and the peer access
 * it enabled (CUDA runtime clients call cudaDeviceReset when they tear down). */
SIM_API musaError_t musaDeviceReset(void) {
  pthread_mutex_lock(&g_lock);
  alloc_node** link = &g_allocs;
  while (*link != NULL) {
    alloc_node* node = *link;
    if (node->device == t_device) {
      *link = node->next;
      g_used[node->device] -= node->size;
      free(node->ptr);
      free(node);
    } else {
      link = &node->next;
    }
  }
  g_peer[t_device] = 0;
  pthread_mutex_unlock(&g_lock);
  return musaSuccess;
}

SIM_API musaError_t musaDeviceCanAccessPeer(int* can_access, int device, int peer) {
  CHECK(can_access != NULL, musaErrorInvalidValue);
  CHECK(valid_device(device) && valid_device(peer), musaErrorInvalidDevice);
  /* All simulated devices share the host's memory; a device is not its own peer. */
  *can_access = device != peer;
  return musaSuccess;
}

SIM_API musaError_t musaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  CHECK(flags == 0, musaErrorInvalidValue);
  CHECK(valid_device(peer) && peer != t_device, musaErrorInvalidDevice);
  pthread_mutex_lock(&g_lock);
  int already = (g_peer[t_device] >> peer) & 1u;
  g_peer[t_device] |= 1u << peer;
  pthread_mutex_unlock(&g_lock);
  return already ? fail(musaErrorPeerAccessAlreadyEnabled) : musaSuccess;
}

SIM_API musaError_t musaMalloc(void** ptr, size_t size) {
  CHECK(ptr != NULL, musaErrorInvalidValue);
  *ptr = NULL;
  if (size == 0) return musaSuccess; /* as CUDA: a null pointer, no error */
  const sim_board* b = sim_board_get();
  int device = t_device;
  /* Reserve first, so concurrent callers cannot overcommit the simulated device together. */
  pthread_mutex_lock(&g_lock);
  int fits = size <= b->total_memory - g_used[device];
  if (fits) g_used[device] += size;
  pthread_mutex_unlock(&g_lock);
  CHECK(fits, musaErrorMemoryAllocation);
  alloc_node* node = malloc(sizeof *node);
  void* mem = NULL;
  /* 256-byte alignment, what device allocators guarantee and vectorised kernels expect */
  if (node == NULL || posix_memalign(&mem, 256, size) != 0) {
    free(node);
    pthread_mutex_lock(&g_lock);
    g_used[device] -= size;
    pthread_mutex_unlock(&g_lock);
    return fail(musaErrorMemoryAllocation);
  }
  node->ptr = mem;
  node->size = size;
  node->device = device;
  pthread_mutex_lock(&g_lock);
  node->next = g_allocs;
  g_allocs = node;
  pthread_mutex_unlock(&g_lock);
  *ptr = mem;
  return musaSuccess;
}

SIM_API musaError_t musaFree(void* ptr) {
  if (ptr == NULL) return musaSuccess;
  pthread_mutex_lock(&g_lock);
  alloc_node** link = &g_allocs;
  while (*link != NULL && (*link)->ptr != ptr) link = &(*link)->next;
  alloc_node* node = *link;
  if (node != NULL) {
    *link = node->next;
    g_used[node->device] -= node->size;
  }
  pthread_mutex_unlock(&g_lock);
  CHECK(node != NULL, musaErrorInvalidValue);
  free(node->ptr);
  free(node);
  return musaSuccess;
}

SIM_API musaError_t musaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  CHECK(free_bytes != NULL && total_bytes != NULL, musaErrorInvalidValue);
  const sim_board* b = sim_board_get();
  pthread_mutex_lock(&g_lock);
  size_t used = g_used[t_device];
  pthread_mutex_unlock(&g_lock);
  *total_bytes = (size_t)b->total_memory;
  *free_bytes = (size_t)b->total_memory - used;
  return musaSuccess;
}

SIM_API musaError_t musaMemcpy(void* dst, const void* src, size_t count, int kind) {
  CHECK(kind >= musaMemcpyHostToHost && kind <= musaMemcpyDefault,
        musaErrorInvalidMemcpyDirection);
  if (count == 0) return musaSuccess;
  CHECK(dst != NULL && src != NULL, musaErrorInvalidValue);
  memmove(dst, src, count);
  return musaSuccess;
}

SIM_API musaError_t musaMemcpyAsync(void* dst, const void* src, size_t count, int kind,
                                    musaStream_t stream) {
  (void)stream; /* work is synchronous: done on return */
  return musaMemcpy(dst, src, count, kind);
}

SIM_API musaError_t musaMemset(void* ptr, int value, size_t count) {
  if (count == 0) return musaSuccess;
  CHECK(ptr != NULL, musaErrorInvalidValue);
  memset(ptr, value, count);
  return musaSuccess;
}

SIM_API musaError_t musaMemsetAsync(void* ptr, int value, size_t count, musaStream_t stream) {
  (void)stream;
  return musaMemset(ptr, value, count);
}

SIM_API musaError_t musaMallocHost(void** ptr, size_t size) {
  CHECK(ptr != NULL, musaErrorInvalidValue);
  *ptr = NULL;
  if (size == 0) return musaSuccess;
  CHECK(posix_memalign(ptr, 256, size) == 0, musaErrorMemoryAllocation);
  return musaSuccess;
}

SIM_API musaError_t musaFreeHost(void* ptr) {
  free(ptr);
  return musaSuccess;
}

SIM_API musaError_t musaHostRegister(void* ptr, size_t size, unsigned int flags) {
  (void)flags; /* host memory is all the simulated device ever reads: nothing to pin */
  CHECK(ptr != NULL && size > 0, musaErrorInvalidValue);
  return musaSuccess;
}

SIM_API musaError_t musaHostUnregister(void* ptr) {
  CHECK(ptr != NULL, musaErrorInvalidValue);
  return musaSuccess;
}

/* Streams, events and graphs are tagged host records (the tag leads each struct): made and freed
 * here, so a handle of the wrong kind, or one already destroyed, is refused. */
static void* tagged_new(size_t size, unsigned tag) {
  unsigned* record = calloc(1, size);
  if (record != NULL) *record = tag;
  return record;
}

static int tagged_free(void* handle, unsigned tag) {
  unsigned* record = handle;
  if (record == NULL || *record != tag) return 0;
  *record = 0;
  free(record);
  return 1;
}

SIM_API musaError_t musaStreamCreate(musaStream_t* stream) {
  CHECK(stream != NULL, musaErrorInvalidValue);
  sim_stream* s = tagged_new(sizeof *s, SIM_STREAM_TAG);
  CHECK(s != NULL, musaErrorMemoryAllocation);
  s->device = t_device;
  *stream = (musaStream_t)s;
  return musaSuccess;
}

SIM_API musaError_t musaStreamDestroy(musaStream_t stream) {
  CHECK(tagged_free(stream, SIM_STREAM_TAG), musaErrorInvalidResourceHandle);
  return musaSuccess;
}

SIM_API musaError_t musaStreamSynchronize(musaStream_t stream) {
  sim_stream* s = (sim_stream*)stream;
  /* NULL is the legacy default stream */
  CHECK(s == NULL || s->tag == SIM_STREAM_TAG, musaErrorInvalidResourceHandle);
  return musaSuccess;
}

SIM_API musaError_t musaEventCreate(musaEvent_t* event) {
  CHECK(event != NULL, musaErrorInvalidValue);
  sim_event* e = calloc(1, sizeof *e);
  CHECK(e != NULL, musaErrorMemoryAllocation);
  e->tag = SIM_EVENT_TAG;
  *event = (musaEvent_t)e;
  return musaSuccess;
}

static sim_event* as_event(musaEvent_t event) {
  sim_event* e = (sim_event*)event;
  return e != NULL && e->tag == SIM_EVENT_TAG ? e : NULL;
}

SIM_API musaError_t musaEventRecord(musaEvent_t event, musaStream_t stream) {
  (void)stream;
  sim_event* e = as_event(event);
  CHECK(e != NULL, musaErrorInvalidResourceHandle);
  clock_gettime(CLOCK_MONOTONIC, &e->when);
  e->recorded = 1;
  return musaSuccess;
}

SIM_API musaError_t musaEventSynchronize(musaEvent_t event) {
  CHECK(as_event(event) != NULL, musaErrorInvalidResourceHandle);
  return musaSuccess;
}

SIM_API musaError_t musaEventElapsedTime(float* ms, musaEvent_t start, musaEvent_t end) {
  CHECK(ms != NULL, musaErrorInvalidValue);
  sim_event* a = as_event(start);
  sim_event* b = as_event(end);
  CHECK(a != NULL && b != NULL && a->recorded && b->recorded, musaErrorInvalidResourceHandle);
  double sec = (double)(b->when.tv_sec - a->when.tv_sec) +
               (double)(b->when.tv_nsec - a->when.tv_nsec) * 1e-9;
  *ms = (float)(sec * 1e3);
  return musaSuccess;
}

SIM_API musaError_t musaEventDestroy(musaEvent_t event) {
  sim_event* e = as_event(event);
  CHECK(e != NULL, musaErrorInvalidResourceHandle);
  e->tag = 0;
  free(e);
  return musaSuccess;
}

SIM_API musaError_t musaIpcGetMemHandle(musaIpcMemHandle_t* handle, void* dev_ptr) {
  (void)handle;
  (void)dev_ptr;
  return fail(musaErrorNotSupported);
}

SIM_API musaError_t musaIpcOpenMemHandle(void** dev_ptr, musaIpcMemHandle_t handle,
                                         unsigned int flags) {
  (void)handle;
  (void)flags;
  if (dev_ptr != NULL) *dev_ptr = NULL;
  return fail(musaErrorNotSupported);
}

SIM_API musaError_t musaIpcCloseMemHandle(void* dev_ptr) {
  (void)dev_ptr;
  return fail(musaErrorNotSupported);
}

/* Graphs. torch_musa's MUSAGraph (simulated in the backend, sim_graph.cpp) gets its musaGraph_t
 * from the end of a stream capture and instantiates it with musaGraphInstantiate; reset() and its
 * destructor call musaGraphExecDestroy and musaGraphDestroy. The driver allows about 2048 live
 * executables per process: past that, musaGraphInstantiate fails. Here the limit is
 * TORCHADA_SIM_GRAPH_EXEC_LIMIT (default 2048; the Python simulator validates it), read once,
 * and the failure is musaErrorMemoryAllocation. A graph records no nodes here (the backend keeps
 * what was captured); the handles are tagged so a launch of a destroyed executable fails as
 * musaErrorInvalidResourceHandle. */
#define SIM_GRAPH_TAG 0x47525048u
#define SIM_GRAPH_EXEC_TAG 0x47455845u
#define SIM_DEFAULT_GRAPH_EXEC_LIMIT 2048

typedef struct MUgraph_st* musaGraph_t;
typedef struct MUgraphExec_st* musaGraphExec_t;
typedef struct {
  unsigned tag;
} sim_graph;
typedef struct {
  unsigned tag;
  sim_graph* graph;
} sim_graph_exec;

static long g_live_graph_execs = 0;

static long graph_exec_limit(void) {
  static long limit = 0;
  if (limit == 0) {
    const char* env = getenv("TORCHADA_SIM_GRAPH_EXEC_LIMIT");
    long v = env != NULL && *env ? strtol(env, NULL, 10) : 0;
    limit = v > 0 ? v : SIM_DEFAULT_GRAPH_EXEC_LIMIT;
  }
  return limit;
}

SIM_API musaError_t musaGraphCreate(musaGraph_t* graph, unsigned int flags) {
  CHECK(graph != NULL && flags == 0, musaErrorInvalidValue);
  sim_graph* g = tagged_new(sizeof *g, SIM_GRAPH_TAG);
  CHECK(g != NULL, musaErrorMemoryAllocation);
  *graph = (musaGraph_t)g;
  return musaSuccess;
}

SIM_API musaError_t musaGraphDestroy(musaGraph_t graph) {
  CHECK(tagged_free(graph, SIM_GRAPH_TAG), musaErrorInvalidValue);
  return musaSuccess;
}

/* The five-argument form torch_musa 2.7.1 calls (MUSAGraph.cpp: musaGraphInstantiate(&graph_exec_,
 * graph_, NULL, NULL, 0)). */
SIM_API musaError_t musaGraphInstantiate(musaGraphExec_t* exec, musaGraph_t graph, void* error_node,
                                         char* log, size_t log_size) {
  (void)error_node;
  (void)log;
  (void)log_size;
  sim_graph* g = (sim_graph*)graph;
  CHECK(exec != NULL && g != NULL && g->tag == SIM_GRAPH_TAG, musaErrorInvalidValue);
  pthread_mutex_lock(&g_lock);
  int full = g_live_graph_execs >= graph_exec_limit();
  if (!full) g_live_graph_execs++;
  pthread_mutex_unlock(&g_lock);
  CHECK(!full, musaErrorMemoryAllocation);
  sim_graph_exec* x = tagged_new(sizeof *x, SIM_GRAPH_EXEC_TAG);
  if (x == NULL) {
    pthread_mutex_lock(&g_lock);
    g_live_graph_execs--;
    pthread_mutex_unlock(&g_lock);
    return fail(musaErrorMemoryAllocation);
  }
  x->graph = g;
  *exec = (musaGraphExec_t)x;
  return musaSuccess;
}

SIM_API musaError_t musaGraphExecDestroy(musaGraphExec_t exec) {
  CHECK(tagged_free(exec, SIM_GRAPH_EXEC_TAG), musaErrorInvalidValue);
  pthread_mutex_lock(&g_lock);
  g_live_graph_execs--;
  pthread_mutex_unlock(&g_lock);
  return musaSuccess;
}

SIM_API musaError_t musaGraphLaunch(musaGraphExec_t exec, musaStream_t stream) {
  (void)stream;
  sim_graph_exec* x = (sim_graph_exec*)exec;
  CHECK(x != NULL && x->tag == SIM_GRAPH_EXEC_TAG, musaErrorInvalidResourceHandle);
  return musaSuccess;
}
