/*
 * libmusa.so of the simulated MUSA SDK: the driver API (mu*), backed by host memory.
 *
 * Result codes (MUresult); the real values are not public, these follow the CUDA driver's
 * numbering, which MUSA mirrors by name:
 *   0   MUSA_SUCCESS
 *   1   MUSA_ERROR_INVALID_VALUE       null output pointer, flags != 0, unknown attribute/pointer
 *   2   MUSA_ERROR_OUT_OF_MEMORY
 *   3   MUSA_ERROR_NOT_INITIALIZED     before muInit (all but muGetErrorString, muDriverGetVersion)
 *   100 MUSA_ERROR_NO_DEVICE           muInit with no visible device
 *   101 MUSA_ERROR_INVALID_DEVICE      device ordinal out of range
 *
 * Device attributes answered by muDeviceGetAttribute (MUdevice_attribute, CUDA's numbering):
 *   1 MAX_THREADS_PER_BLOCK, 10 WARP_SIZE, 16 MULTIPROCESSOR_COUNT, 19 CAN_MAP_HOST_MEMORY,
 *   41 UNIFIED_ADDRESSING, 75 COMPUTE_CAPABILITY_MAJOR, 76 COMPUTE_CAPABILITY_MINOR.
 * The simulator has no contexts: muCtxGetCurrent reports none (a null context) after muInit.
 */
#include <pthread.h>
#include <stdio.h>

#include "musa_sim_sdk.h"

typedef int MUresult;
typedef int MUdevice;
typedef void* MUcontext;
typedef unsigned long long MUdeviceptr;

enum {
  MUSA_SUCCESS = 0,
  MUSA_ERROR_INVALID_VALUE = 1,
  MUSA_ERROR_OUT_OF_MEMORY = 2,
  MUSA_ERROR_NOT_INITIALIZED = 3,
  MUSA_ERROR_NO_DEVICE = 100,
  MUSA_ERROR_INVALID_DEVICE = 101,
};

enum {
  MU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  MU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  MU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  MU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
  MU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
  MU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  MU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

typedef struct alloc_node {
  void* ptr;
  struct alloc_node* next;
} alloc_node;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static alloc_node* g_allocs = NULL;
static int g_initialized = 0;

#define REQUIRE_INIT()                                      \
  do {                                                      \
    if (!__atomic_load_n(&g_initialized, __ATOMIC_ACQUIRE)) \
      return MUSA_ERROR_NOT_INITIALIZED;                    \
  } while (0)

SIM_API MUresult muGetErrorString(MUresult error, const char** str) {
  if (str == NULL) return MUSA_ERROR_INVALID_VALUE;
  switch (error) {
    case MUSA_SUCCESS: *str = "no error"; break;
    case MUSA_ERROR_INVALID_VALUE: *str = "invalid argument"; break;
    case MUSA_ERROR_OUT_OF_MEMORY: *str = "out of memory"; break;
    case MUSA_ERROR_NOT_INITIALIZED: *str = "initialization error"; break;
    case MUSA_ERROR_NO_DEVICE: *str = "no MUSA-capable device is detected"; break;
    case MUSA_ERROR_INVALID_DEVICE: *str = "invalid device ordinal"; break;
    default:
      *str = NULL;
      return MUSA_ERROR_INVALID_VALUE;
  }
  return MUSA_SUCCESS;
}

SIM_API MUresult muInit(unsigned int flags) {
  if (flags != 0) return MUSA_ERROR_INVALID_VALUE;
  if (sim_device_count() == 0) return MUSA_ERROR_NO_DEVICE;
  __atomic_store_n(&g_initialized, 1, __ATOMIC_RELEASE);
  return MUSA_SUCCESS;
}

SIM_API MUresult muDriverGetVersion(int* version) {
  if (version == NULL) return MUSA_ERROR_INVALID_VALUE;
  *version = SIM_MUSA_VERSION;
  return MUSA_SUCCESS;
}

SIM_API MUresult muDeviceGetCount(int* count) {
  REQUIRE_INIT();
  if (count == NULL) return MUSA_ERROR_INVALID_VALUE;
  *count = sim_device_count();
  return MUSA_SUCCESS;
}

SIM_API MUresult muDeviceGet(MUdevice* device, int ordinal) {
  REQUIRE_INIT();
  if (device == NULL) return MUSA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= sim_device_count()) return MUSA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return MUSA_SUCCESS;
}

SIM_API MUresult muDeviceGetName(char* name, int len, MUdevice device) {
  REQUIRE_INIT();
  if (name == NULL || len <= 0) return MUSA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= sim_device_count()) return MUSA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "%s", sim_board_get()->name);
  return MUSA_SUCCESS;
}

SIM_API MUresult muDeviceGetAttribute(int* value, int attribute, MUdevice device) {
  REQUIRE_INIT();
  if (value == NULL) return MUSA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= sim_device_count()) return MUSA_ERROR_INVALID_DEVICE;
  const sim_board* b = sim_board_get();
  switch (attribute) {
    case MU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case MU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 128; break;
    case MU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = b->sm_count; break;
    case MU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *value = 1; break;
    case MU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    case MU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = b->major; break;
    case MU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = b->minor; break;
    default: return MUSA_ERROR_INVALID_VALUE;
  }
  return MUSA_SUCCESS;
}

SIM_API MUresult muCtxGetCurrent(MUcontext* ctx) {
  REQUIRE_INIT();
  if (ctx == NULL) return MUSA_ERROR_INVALID_VALUE;
  *ctx = NULL;
  return MUSA_SUCCESS;
}

SIM_API MUresult muMemAlloc(MUdeviceptr* dptr, size_t size) {
  REQUIRE_INIT();
  if (dptr == NULL || size == 0) return MUSA_ERROR_INVALID_VALUE;
  alloc_node* node = malloc(sizeof *node);
  void* mem = NULL;
  if (node == NULL || posix_memalign(&mem, 256, size) != 0) {
    free(node);
    return MUSA_ERROR_OUT_OF_MEMORY;
  }
  node->ptr = mem;
  pthread_mutex_lock(&g_lock);
  node->next = g_allocs;
  g_allocs = node;
  pthread_mutex_unlock(&g_lock);
  *dptr = (MUdeviceptr)(uintptr_t)mem;
  return MUSA_SUCCESS;
}

SIM_API MUresult muMemFree(MUdeviceptr dptr) {
  REQUIRE_INIT();
  void* ptr = (void*)(uintptr_t)dptr;
  pthread_mutex_lock(&g_lock);
  alloc_node** link = &g_allocs;
  while (*link != NULL && (*link)->ptr != ptr) link = &(*link)->next;
  alloc_node* node = *link;
  if (node != NULL) *link = node->next;
  pthread_mutex_unlock(&g_lock);
  if (node == NULL) return MUSA_ERROR_INVALID_VALUE;
  free(node->ptr);
  free(node);
  return MUSA_SUCCESS;
}

SIM_API MUresult muMemcpyHtoD(MUdeviceptr dst, const void* src, size_t count) {
  REQUIRE_INIT();
  if (count == 0) return MUSA_SUCCESS;
  if (dst == 0 || src == NULL) return MUSA_ERROR_INVALID_VALUE;
  memmove((void*)(uintptr_t)dst, src, count);
  return MUSA_SUCCESS;
}

SIM_API MUresult muMemcpyDtoH(void* dst, MUdeviceptr src, size_t count) {
  REQUIRE_INIT();
  if (count == 0) return MUSA_SUCCESS;
  if (dst == NULL || src == 0) return MUSA_ERROR_INVALID_VALUE;
  memmove(dst, (const void*)(uintptr_t)src, count);
  return MUSA_SUCCESS;
}
