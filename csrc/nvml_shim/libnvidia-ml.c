// libnvidia-ml.so: NVIDIA's management library (NVML) names, answered from Moore Threads' MTML.
//
// Programs that bind NVML with ctypes themselves (vLLM's vendored pynvml.py, nvidia-ml-py's
// pynvml) load "libnvidia-ml.so.1"; with torchada on MUSA, ctypes loads this library instead
// (torchada/tables/libraries.json, row "nvidia-ml"). Each NVML function below is written over the
// MTML C API (libmtml.so.2, libmtml.so on older installs), whose signatures differ: an NVML device
// handle is an MTML device handle, MTML's sub-handles (memory, GPU, VPU) are taken and freed per
// call, and MTML's return codes are translated to NVML's. Struct layouts are NVML's.
//
// torchada_nvml_bind(mtml, driver) names the MTML library and the MUSA driver to open (the paths
// ctypes would load); without it, nvmlInit opens libmtml.so.2 or libmtml.so from the loader's path.

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef void* nvmlDevice_t;

// NVML's return codes (nvml.h), the ones this library gives.
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999,
};

// NVML's structures.
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
#define NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;

enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum { NVML_TEMPERATURE_GPU = 0 };

// MTML's C API, as its Python bindings (pymtml) call it: opaque handles, int return codes.
typedef int (*mtml_init_t)(void**);
typedef int (*mtml_handle_t)(void*);
typedef int (*mtml_count_t)(void*, unsigned int*);
typedef int (*mtml_by_index_t)(void*, unsigned int, void**);
typedef int (*mtml_by_name_t)(void*, const char*, void**);
typedef int (*mtml_sub_t)(void*, void**);
typedef int (*mtml_uint_t)(void*, unsigned int*);
typedef int (*mtml_u64_t)(void*, unsigned long long*);
typedef int (*mtml_string_t)(void*, char*, unsigned int);
typedef const char* (*mtml_error_string_t)(int);
typedef int (*musa_driver_version_t)(int*);

// MTML's own numbering of its return codes, and NVML's code for each.
static nvmlReturn_t from_mtml(int ret) {
  switch (ret) {
    case 0: return NVML_SUCCESS;
    case 1: return NVML_ERROR_DRIVER_NOT_LOADED;
    case 3: return NVML_ERROR_INVALID_ARGUMENT;
    case 4: return NVML_ERROR_NOT_SUPPORTED;
    case 5: return NVML_ERROR_NO_PERMISSION;
    case 6: return NVML_ERROR_INSUFFICIENT_SIZE;
    case 7: return NVML_ERROR_NOT_FOUND;
    case 8: return NVML_ERROR_MEMORY;
    case 11: return NVML_ERROR_TIMEOUT;
    case 12: return NVML_ERROR_IN_USE;
    case 666: return NVML_ERROR_UNINITIALIZED;
    case 667: return NVML_ERROR_FUNCTION_NOT_FOUND;
    case 669: return NVML_ERROR_GPU_IS_LOST;
    case 670: return NVML_ERROR_LIBRARY_NOT_FOUND;
    default: return NVML_ERROR_UNKNOWN;
  }
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char mtml_path[4096];
static char driver_path[4096];
static void* mtml;      // the dlopen handle of libmtml
static void* library;   // MTML's library handle (mtmlLibraryInit)
static int init_count;  // nvmlInit calls not yet matched by nvmlShutdown

__attribute__((visibility("default"))) int torchada_nvml_bind(const char* mtml_lib,
                                                              const char* driver_lib) {
  pthread_mutex_lock(&lock);
  if (mtml_lib) snprintf(mtml_path, sizeof mtml_path, "%s", mtml_lib);
  if (driver_lib) snprintf(driver_path, sizeof driver_path, "%s", driver_lib);
  pthread_mutex_unlock(&lock);
  return 0;
}

static void* mtml_fn(const char* name) { return mtml ? dlsym(mtml, name) : NULL; }

#define MTML_CALL(type, name, ...)                             \
  do {                                                         \
    type fn_ = (type)mtml_fn(name);                            \
    if (fn_ == NULL) return NVML_ERROR_FUNCTION_NOT_FOUND;     \
    int ret_ = fn_(__VA_ARGS__);                               \
    if (ret_ != 0) return from_mtml(ret_);                     \
  } while (0)

#define NEED_INIT()                                          \
  do {                                                       \
    if (library == NULL) return NVML_ERROR_UNINITIALIZED;    \
  } while (0)

nvmlReturn_t nvmlInit_v2(void) {
  pthread_mutex_lock(&lock);
  nvmlReturn_t result = NVML_SUCCESS;
  if (mtml == NULL) {
    const char* names[] = {mtml_path[0] ? mtml_path : NULL, "libmtml.so.2", "libmtml.so"};
    for (int i = 0; i < 3 && mtml == NULL; ++i)
      if (names[i]) mtml = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  }
  if (mtml == NULL) {
    result = NVML_ERROR_LIBRARY_NOT_FOUND;
  } else if (library == NULL) {
    mtml_init_t fn = (mtml_init_t)mtml_fn("mtmlLibraryInit");
    result = fn ? from_mtml(fn(&library)) : NVML_ERROR_FUNCTION_NOT_FOUND;
    if (result != NVML_SUCCESS) library = NULL;
  }
  if (result == NVML_SUCCESS) ++init_count;
  pthread_mutex_unlock(&lock);
  return result;
}

nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  (void)flags;
  return nvmlInit_v2();
}

nvmlReturn_t nvmlShutdown(void) {
  pthread_mutex_lock(&lock);
  nvmlReturn_t result = NVML_SUCCESS;
  if (init_count == 0) {
    result = NVML_ERROR_UNINITIALIZED;
  } else if (--init_count == 0) {
    mtml_handle_t fn = (mtml_handle_t)mtml_fn("mtmlLibraryShutDown");
    if (fn) result = from_mtml(fn(library));
    library = NULL;
  }
  pthread_mutex_unlock(&lock);
  return result;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Version Mismatch";
    default: return "Unknown Error";
  }
}

static nvmlReturn_t copy_string(const char* from, char* to, unsigned int length) {
  if (to == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  size_t n = strlen(from);
  if (n + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(to, from, n + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  NEED_INIT();
  void* system = NULL;
  char buffer[128] = {0};
  MTML_CALL(mtml_sub_t, "mtmlLibraryInitSystem", library, &system);
  mtml_string_t get = (mtml_string_t)mtml_fn("mtmlSystemGetDriverVersion");
  int ret = get ? get(system, buffer, sizeof buffer) : -1;
  mtml_handle_t release = (mtml_handle_t)mtml_fn("mtmlLibraryFreeSystem");
  if (release) release(system);
  if (ret != 0) return ret < 0 ? NVML_ERROR_FUNCTION_NOT_FOUND : from_mtml(ret);
  return copy_string(buffer, version, length);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  NEED_INIT();
  char buffer[64] = {0};
  MTML_CALL(mtml_string_t, "mtmlLibraryGetVersion", library, buffer, sizeof buffer);
  return copy_string(buffer, version, length);
}

// NVML's "CUDA driver version" is the driver API's version: on MUSA, the MUSA driver's (as the
// CUDA runtime names forwarded by torchada answer cudaDriverGetVersion).
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  if (version == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const char* names[] = {driver_path[0] ? driver_path : NULL, "libmusa.so", "libmusa.so.1"};
  void* driver = NULL;
  for (int i = 0; i < 3 && driver == NULL; ++i)
    if (names[i]) driver = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (driver == NULL) return NVML_ERROR_LIBRARY_NOT_FOUND;
  musa_driver_version_t fn = (musa_driver_version_t)dlsym(driver, "muDriverGetVersion");
  nvmlReturn_t result = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (fn) result = fn(version) == 0 ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
  dlclose(driver);
  return result;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return nvmlSystemGetCudaDriverVersion(version);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  NEED_INIT();
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  MTML_CALL(mtml_count_t, "mtmlLibraryCountDevice", library, count);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) { return nvmlDeviceGetCount_v2(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  NEED_INIT();
  if (device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int count = 0;
  MTML_CALL(mtml_count_t, "mtmlLibraryCountDevice", library, &count);
  if (index >= count) return NVML_ERROR_INVALID_ARGUMENT;
  MTML_CALL(mtml_by_index_t, "mtmlLibraryInitDeviceByIndex", library, index, device);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  NEED_INIT();
  if (uuid == NULL || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  MTML_CALL(mtml_by_name_t, "mtmlLibraryInitDeviceByUuid", library, uuid, device);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_t* device) {
  NEED_INIT();
  if (bus_id == NULL || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  MTML_CALL(mtml_by_name_t, "mtmlLibraryInitDeviceByPciSbdf", library, bus_id, device);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* bus_id, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByPciBusId_v2(bus_id, device);
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  NEED_INIT();
  if (device == NULL || index == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  MTML_CALL(mtml_uint_t, "mtmlDeviceGetIndex", device, index);
  return NVML_SUCCESS;
}

static nvmlReturn_t device_string(const char* fn, nvmlDevice_t device, char* out, unsigned int n) {
  NEED_INIT();
  if (device == NULL || out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  char buffer[128] = {0};
  MTML_CALL(mtml_string_t, fn, device, buffer, sizeof buffer);
  return copy_string(buffer, out, n);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return device_string("mtmlDeviceGetName", device, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return device_string("mtmlDeviceGetUUID", device, uuid, length);
}

// Reads (total, used) of a device's memory through an MTML memory handle taken for the call.
static nvmlReturn_t memory_readings(nvmlDevice_t device, unsigned long long* total,
                                    unsigned long long* used) {
  NEED_INIT();
  if (device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  void* memory = NULL;
  MTML_CALL(mtml_sub_t, "mtmlDeviceInitMemory", device, &memory);
  mtml_u64_t get_total = (mtml_u64_t)mtml_fn("mtmlMemoryGetTotal");
  mtml_u64_t get_used = (mtml_u64_t)mtml_fn("mtmlMemoryGetUsed");
  int ret = (get_total && get_used) ? get_total(memory, total) : -1;
  if (ret == 0) ret = get_used(memory, used);
  mtml_handle_t release = (mtml_handle_t)mtml_fn("mtmlDeviceFreeMemory");
  if (release) release(memory);
  if (ret != 0) return ret < 0 ? NVML_ERROR_FUNCTION_NOT_FOUND : from_mtml(ret);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* info) {
  if (info == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned long long total = 0, used = 0;
  nvmlReturn_t result = memory_readings(device, &total, &used);
  if (result != NVML_SUCCESS) return result;
  info->total = total;
  info->used = used;
  info->free = total > used ? total - used : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* info) {
  if (info == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (info->version != NVML_MEMORY_V2_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  unsigned long long total = 0, used = 0;
  nvmlReturn_t result = memory_readings(device, &total, &used);
  if (result != NVML_SUCCESS) return result;
  info->total = total;
  info->reserved = 0;  // MTML reports no memory the driver holds back
  info->used = used;
  info->free = total > used ? total - used : 0;
  return NVML_SUCCESS;
}

// One unsigned reading of an MTML sub-handle (GPU, memory or VPU) of `device`.
static nvmlReturn_t sub_reading(nvmlDevice_t device, const char* init, const char* get,
                                const char* release, unsigned int* value) {
  NEED_INIT();
  if (device == NULL || value == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  void* sub = NULL;
  MTML_CALL(mtml_sub_t, init, device, &sub);
  mtml_uint_t fn = (mtml_uint_t)mtml_fn(get);
  int ret = fn ? fn(sub, value) : -1;
  mtml_handle_t free_fn = (mtml_handle_t)mtml_fn(release);
  if (free_fn) free_fn(sub);
  if (ret != 0) return ret < 0 ? NVML_ERROR_FUNCTION_NOT_FOUND : from_mtml(ret);
  return NVML_SUCCESS;
}

#define GPU_READING(device, get, value) \
  sub_reading(device, "mtmlDeviceInitGpu", get, "mtmlDeviceFreeGpu", value)
#define MEMORY_READING(device, get, value) \
  sub_reading(device, "mtmlDeviceInitMemory", get, "mtmlDeviceFreeMemory", value)
#define VPU_READING(device, get, value) \
  sub_reading(device, "mtmlDeviceInitVpu", get, "mtmlDeviceFreeVpu", value)

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* rates) {
  if (rates == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int gpu = 0, memory = 0;
  nvmlReturn_t result = GPU_READING(device, "mtmlGpuGetUtilization", &gpu);
  if (result == NVML_SUCCESS) result = MEMORY_READING(device, "mtmlMemoryGetUtilization", &memory);
  if (result != NVML_SUCCESS) return result;
  rates->gpu = gpu;
  rates->memory = memory;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned int* celsius) {
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return GPU_READING(device, "mtmlGpuGetTemperature", celsius);
}

// Milliwatts, as NVML and MTML both count power.
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* milliwatts) {
  NEED_INIT();
  if (device == NULL || milliwatts == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  MTML_CALL(mtml_uint_t, "mtmlDeviceGetPowerUsage", device, milliwatts);
  return NVML_SUCCESS;
}

static nvmlReturn_t clock_reading(nvmlDevice_t device, int type, int max, unsigned int* mhz) {
  switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
      return GPU_READING(device, max ? "mtmlGpuGetMaxClock" : "mtmlGpuGetClock", mhz);
    case NVML_CLOCK_MEM:
      return MEMORY_READING(device, max ? "mtmlMemoryGetMaxClock" : "mtmlMemoryGetClock", mhz);
    case NVML_CLOCK_VIDEO:
      return VPU_READING(device, max ? "mtmlVpuGetMaxClock" : "mtmlVpuGetClock", mhz);
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int* mhz) {
  return clock_reading(device, type, 0, mhz);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type, unsigned int* mhz) {
  return clock_reading(device, type, 1, mhz);
}

// MTML lists no processes per device: NVML's answer for a reading a device cannot give (an empty
// list would say that no process uses it).
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                     void* infos) {
  (void)infos;
  NEED_INIT();
  if (device == NULL || count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* count,
                                                     void* infos) {
  return nvmlDeviceGetComputeRunningProcesses_v3(device, count, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* count,
                                                  void* infos) {
  return nvmlDeviceGetComputeRunningProcesses_v3(device, count, infos);
}
