/*
 * libmtml.so.2 of the simulated Moore Threads driver: MTML, the management library a real driver
 * installs (what NVML is to an NVIDIA driver).
 *
 * It exports the mtml* functions that pymtml (mthreads-ml-py 2.4.3) binds, under their real names
 * and with their real signatures (read from pymtml's ctypes calls and checked against Moore
 * Threads' published mtml.h 2.2.0; docs/mtml_simulator.md lists them), and no other name.
 *
 * Return codes (MtmlReturn), as pymtml numbers them:
 *   0 SUCCESS, 1 DRIVER_NOT_LOADED, 2 DRIVER_FAILURE, 3 INVALID_ARGUMENT, 4 NOT_SUPPORTED,
 *   5 NO_PERMISSION, 6 INSUFFICIENT_SIZE, 7 NOT_FOUND, 8 INSUFFICIENT_MEMORY, 9 DRIVER_TOO_OLD,
 *   10 DRIVER_TOO_NEW, 11 TIMEOUT, 12 RESOURCE_IS_BUSY, 999 UNKNOWN.
 *
 * The simulated machine:
 *   - devices are the physical ones (TORCHADA_SIM_DEVICES, default 2) in their physical order: a
 *     management library ignores MUSA_VISIBLE_DEVICES, as NVML ignores CUDA_VISIBLE_DEVICES;
 *   - memory total is the board's (TORCHADA_SIM_BOARD); memory used is what the simulator's
 *     allocator holds on that device, read from the simulator's backend when this process has
 *     loaded it (its torchada_sim_memory_used), else 0;
 *   - the other readings are constant (the table below): no virtualization, no MPC, no MtLink,
 *     no display outputs, ECC off; the functions of those features answer NOT_SUPPORTED.
 *
 * Handles: one library, one system, and per device one device, GPU, memory and VPU object, so two
 * handles of the same resource compare equal, as MTML promises.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "musa_sim_sdk.h"

#define MTML_EXPORT __attribute__((visibility("default")))

typedef unsigned int MtmlReturn;
enum {
  MTML_SUCCESS = 0,
  MTML_ERROR_DRIVER_NOT_LOADED = 1,
  MTML_ERROR_DRIVER_FAILURE = 2,
  MTML_ERROR_INVALID_ARGUMENT = 3,
  MTML_ERROR_NOT_SUPPORTED = 4,
  MTML_ERROR_NO_PERMISSION = 5,
  MTML_ERROR_INSUFFICIENT_SIZE = 6,
  MTML_ERROR_NOT_FOUND = 7,
  MTML_ERROR_INSUFFICIENT_MEMORY = 8,
  MTML_ERROR_DRIVER_TOO_OLD = 9,
  MTML_ERROR_DRIVER_TOO_NEW = 10,
  MTML_ERROR_TIMEOUT = 11,
  MTML_ERROR_RESOURCE_IS_BUSY = 12,
  MTML_ERROR_UNKNOWN = 999,
};

/* ------------------------------------------------------------------ the constant readings */
#define SIM_LIBRARY_VERSION "2.2.0"
#define SIM_DRIVER_VERSION "3.1.0"
#define SIM_MTBIOS_VERSION "4.3.0"
#define SIM_GPU_UTIL 37          /* percent */
#define SIM_MEM_UTIL 21          /* percent of time memory was read or written */
#define SIM_TEMPERATURE 45       /* degrees C */
#define SIM_POWER_MW 152000      /* milliwatts */
#define SIM_GPU_CLOCK 1750       /* MHz */
#define SIM_GPU_MAX_CLOCK 2000   /* MHz */
#define SIM_MEM_CLOCK 1750       /* MHz */
#define SIM_MEM_MAX_CLOCK 1750   /* MHz */
#define SIM_VPU_CLOCK 900        /* MHz */
#define SIM_VPU_MAX_CLOCK 1000   /* MHz */
#define SIM_FAN_SPEED 30         /* percent */
#define SIM_FAN_RPM 1800
#define SIM_MEM_BUS_WIDTH 384    /* bits */
#define SIM_MEM_BANDWIDTH 768    /* GB/s */
#define SIM_MEM_SPEED 16000      /* Mbps */
#define SIM_MEM_TYPE 1           /* MTML_MEM_TYPE_GDDR6 */
#define SIM_MEM_VENDOR "Samsung"
#define SIM_SYSTEM_USED (256ULL << 20) /* bytes the driver keeps for itself */
#define SIM_ENCODE_CAPACITY 32
#define SIM_DECODE_CAPACITY 96
#define SIM_PCI_VENDOR 0x1ED5u   /* Moore Threads */
#define SIM_PCI_DEVICE 0x0327u

#define UUID_SIZE 48
#define NAME_SIZE 32
#define SBDF_SIZE 32
#define PATH_SIZE 64

/* ---------------------------------------------------------------- structures (pymtml's layout) */
typedef struct {
  char sbdf[SBDF_SIZE];
  unsigned int segment, bus, device, pciDeviceId, pciSubsystemId, busWidth;
  float pciMaxSpeed, pciCurSpeed;
  unsigned int pciMaxWidth, pciCurWidth, pciMaxGen, pciCurGen;
  int rsvd[6];
} MtmlPciInfo;

typedef struct {
  unsigned int virtCap : 1, virtRole : 3, mpcCap : 1, mpcType : 3, mtLinkCap : 1, rsvd : 23;
  unsigned int rsvd2;
} MtmlDeviceProperty;

typedef struct {
  unsigned int slotId;
  char slotName[32];
  unsigned int rsvd[4];
} MtmlPciSlotInfo;

typedef struct {
  unsigned int type, maxResWidth, maxResHeight;
  float maxRefreshRate;
  unsigned int rsvd[8];
} MtmlDispIntfSpec;

typedef struct {
  unsigned int util, period, encUtil, decUtil;
  int rsvd[2];
} MtmlCodecUtil;

typedef struct {
  unsigned int id, pid, hResolution, vResolution, frameRate, bitRate, latency, codecType;
  int rsvd[4];
} MtmlCodecSessionMetrics;

typedef struct {
  unsigned int level;
  int rsvd[2];
} MtmlLogLevelConfig;

typedef struct {
  unsigned int level;
  char file[200];
  unsigned int size;
  int rsvd[2];
} MtmlLogFileConfig;

typedef struct {
  unsigned int level;
  void (*callback)(const char*, unsigned int);
  int rsvd[2];
} MtmlLogCallbackConfig;

typedef struct {
  MtmlLogLevelConfig consoleConfig;
  MtmlLogLevelConfig systemConfig;
  MtmlLogFileConfig fileConfig;
  MtmlLogCallbackConfig callbackConfig;
  int rsvd[8];
} MtmlLogConfiguration;

typedef struct {
  unsigned int sbeCount, dbeCount;
} MtmlPageRetirementCount;

typedef struct {
  unsigned long long timestamps, address;
  unsigned int rsvd[10];
} MtmlPageRetirement;

/* Opaque to callers. */
#define LIB_TAG 0x4d544c42u
#define SYS_TAG 0x4d545359u
#define DEV_TAG 0x4d544456u
#define GPU_TAG 0x4d544750u
#define MEM_TAG 0x4d544d45u
#define VPU_TAG 0x4d545650u

typedef struct MtmlLibrary {
  unsigned tag;
} MtmlLibrary;
typedef struct MtmlSystem {
  unsigned tag;
} MtmlSystem;
typedef struct MtmlDevice {
  unsigned tag;
  unsigned index;
} MtmlDevice;
typedef struct MtmlGpu {
  unsigned tag;
  unsigned index;
} MtmlGpu;
typedef struct MtmlMemory {
  unsigned tag;
  unsigned index;
} MtmlMemory;
typedef struct MtmlVpu {
  unsigned tag;
  unsigned index;
} MtmlVpu;

static MtmlLibrary g_library = {LIB_TAG};
static MtmlSystem g_system = {SYS_TAG};
static MtmlDevice g_devices[SIM_MAX_DEVICES];
static MtmlGpu g_gpus[SIM_MAX_DEVICES];
static MtmlMemory g_memories[SIM_MAX_DEVICES];
static MtmlVpu g_vpus[SIM_MAX_DEVICES];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_inits = 0; /* mtmlLibraryInit calls not yet shut down */
static MtmlLogConfiguration g_log;

static void make_handles(void) {
  for (unsigned i = 0; i < SIM_MAX_DEVICES; ++i) {
    g_devices[i] = (MtmlDevice){DEV_TAG, i};
    g_gpus[i] = (MtmlGpu){GPU_TAG, i};
    g_memories[i] = (MtmlMemory){MEM_TAG, i};
    g_vpus[i] = (MtmlVpu){VPU_TAG, i};
  }
}

static int library_ok(const MtmlLibrary* lib) {
  pthread_mutex_lock(&g_lock);
  int live = g_inits > 0;
  pthread_mutex_unlock(&g_lock);
  return lib == &g_library && live;
}

static int device_ok(const MtmlDevice* d) {
  return d != NULL && d->tag == DEV_TAG && (int)d->index < sim_physical_devices();
}
static int gpu_ok(const MtmlGpu* g) {
  return g != NULL && g->tag == GPU_TAG && (int)g->index < sim_physical_devices();
}
static int mem_ok(const MtmlMemory* m) {
  return m != NULL && m->tag == MEM_TAG && (int)m->index < sim_physical_devices();
}
static int vpu_ok(const MtmlVpu* v) {
  return v != NULL && v->tag == VPU_TAG && (int)v->index < sim_physical_devices();
}

#define CHECK(cond, err) \
  do {                   \
    if (!(cond)) return (err); \
  } while (0)

static MtmlReturn put_string(char* out, unsigned int length, const char* value) {
  CHECK(out != NULL, MTML_ERROR_INVALID_ARGUMENT);
  size_t n = strlen(value);
  CHECK(length > n, MTML_ERROR_INSUFFICIENT_SIZE);
  memcpy(out, value, n + 1);
  return MTML_SUCCESS;
}

static MtmlReturn put_uint(unsigned int* out, unsigned int value) {
  CHECK(out != NULL, MTML_ERROR_INVALID_ARGUMENT);
  *out = value;
  return MTML_SUCCESS;
}

static void device_uuid(unsigned index, char* out, size_t size) {
  snprintf(out, size, "5d4e3c2b-1a09-4f8e-9d7c-%012llx", 0x6b5a49380000ULL + index);
}

static void device_sbdf(unsigned index, char* out, size_t size) {
  snprintf(out, size, "0000:%02x:00.0", 0x3b + 0x10 * index);
}

/* ------------------------------------------------------------------ memory used, per device */
typedef long long (*used_getter)(int);

static int find_backend(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  const char* name = info->dlpi_name;
  const char* base = name ? strrchr(name, '/') : NULL;
  base = base ? base + 1 : name;
  if (base != NULL && strncmp(base, "torchada_musa_sim", 17) == 0) {
    *(const char**)data = name;
    return 1;
  }
  return 0;
}

/* The simulator's backend (a torch extension, loaded with RTLD_LOCAL) once this process has
 * loaded it; found again on each miss, since it may load after this library. */
static used_getter backend_getter(void) {
  static used_getter cached = NULL;
  used_getter found = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
  if (found != NULL) return found;
  found = (used_getter)dlsym(RTLD_DEFAULT, "torchada_sim_memory_used");
  if (found == NULL) {
    const char* path = NULL;
    dl_iterate_phdr(find_backend, &path);
    if (path != NULL) {
      void* handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
      if (handle != NULL) found = (used_getter)dlsym(handle, "torchada_sim_memory_used");
    }
  }
  if (found != NULL) __atomic_store_n(&cached, found, __ATOMIC_RELEASE);
  return found;
}

/* torch's index of physical device `physical` under MUSA_VISIBLE_DEVICES, or -1 if hidden. */
static int visible_index(unsigned physical) {
  const char* vis = getenv("MUSA_VISIBLE_DEVICES");
  if (vis == NULL) return (int)physical;
  int seen[SIM_MAX_DEVICES] = {0};
  int count = 0;
  int total = sim_physical_devices();
  const char* p = vis;
  for (;;) {
    while (isspace((unsigned char)*p)) ++p;
    char* end = NULL;
    long idx = strtol(p, &end, 10);
    if (end == p) break;
    while (isspace((unsigned char)*end)) ++end;
    if (*end != ',' && *end != '\0') break;
    if (idx < 0 || idx >= total || seen[idx]) break;
    seen[idx] = 1;
    if (idx == (long)physical) return count;
    ++count;
    if (*end == '\0') break;
    p = end + 1;
  }
  return -1;
}

static unsigned long long memory_used(unsigned physical) {
  used_getter get = backend_getter();
  int index = visible_index(physical);
  if (get == NULL || index < 0) return 0;
  long long used = get(index);
  return used > 0 ? (unsigned long long)used : 0;
}

/* ------------------------------------------------------------------ library */
MTML_EXPORT MtmlReturn mtmlLibraryInit(MtmlLibrary** lib) {
  CHECK(lib != NULL, MTML_ERROR_INVALID_ARGUMENT);
  pthread_mutex_lock(&g_lock);
  if (g_inits++ == 0) make_handles();
  pthread_mutex_unlock(&g_lock);
  *lib = &g_library;
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlLibraryShutDown(MtmlLibrary* lib) {
  CHECK(library_ok(lib), MTML_ERROR_INVALID_ARGUMENT);
  pthread_mutex_lock(&g_lock);
  --g_inits;
  pthread_mutex_unlock(&g_lock);
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlLibraryGetVersion(const MtmlLibrary* lib, char* version,
                                             unsigned int length) {
  CHECK(library_ok(lib), MTML_ERROR_INVALID_ARGUMENT);
  return put_string(version, length, SIM_LIBRARY_VERSION);
}

MTML_EXPORT MtmlReturn mtmlLibraryInitSystem(const MtmlLibrary* lib, MtmlSystem** sys) {
  CHECK(library_ok(lib) && sys != NULL, MTML_ERROR_INVALID_ARGUMENT);
  *sys = &g_system;
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlLibraryFreeSystem(MtmlSystem* sys) {
  CHECK(sys == &g_system, MTML_ERROR_INVALID_ARGUMENT);
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlLibraryCountDevice(const MtmlLibrary* lib, unsigned int* count) {
  CHECK(library_ok(lib), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(count, (unsigned)sim_physical_devices());
}

MTML_EXPORT MtmlReturn mtmlLibraryInitDeviceByIndex(const MtmlLibrary* lib, unsigned int index,
                                                    MtmlDevice** dev) {
  CHECK(library_ok(lib) && dev != NULL, MTML_ERROR_INVALID_ARGUMENT);
  CHECK((int)index < sim_physical_devices(), MTML_ERROR_INVALID_ARGUMENT);
  *dev = &g_devices[index];
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlLibraryInitDeviceByUuid(const MtmlLibrary* lib, const char* uuid,
                                                   MtmlDevice** dev) {
  CHECK(library_ok(lib) && uuid != NULL && dev != NULL, MTML_ERROR_INVALID_ARGUMENT);
  char mine[UUID_SIZE];
  for (int i = 0; i < sim_physical_devices(); ++i) {
    device_uuid((unsigned)i, mine, sizeof mine);
    if (strcmp(mine, uuid) == 0) {
      *dev = &g_devices[i];
      return MTML_SUCCESS;
    }
  }
  return MTML_ERROR_NOT_FOUND;
}

MTML_EXPORT MtmlReturn mtmlLibraryInitDeviceByPciSbdf(const MtmlLibrary* lib, const char* pciSbdf,
                                                      MtmlDevice** dev) {
  CHECK(library_ok(lib) && pciSbdf != NULL && dev != NULL, MTML_ERROR_INVALID_ARGUMENT);
  char mine[SBDF_SIZE];
  for (int i = 0; i < sim_physical_devices(); ++i) {
    device_sbdf((unsigned)i, mine, sizeof mine);
    if (strcasecmp(mine, pciSbdf) == 0) {
      *dev = &g_devices[i];
      return MTML_SUCCESS;
    }
  }
  return MTML_ERROR_NOT_FOUND;
}

MTML_EXPORT MtmlReturn mtmlLibrarySetMpcConfigurationInBatch(const MtmlLibrary* lib,
                                                             unsigned int count,
                                                             MtmlDevice** devices,
                                                             unsigned int* mpcConfigIds) {
  (void)count, (void)devices, (void)mpcConfigIds;
  CHECK(library_ok(lib), MTML_ERROR_INVALID_ARGUMENT);
  return MTML_ERROR_NOT_SUPPORTED;
}

MTML_EXPORT MtmlReturn mtmlLibraryFreeDevice(MtmlDevice* dev) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlSystemGetDriverVersion(const MtmlSystem* sys, char* version,
                                                  unsigned int length) {
  CHECK(sys == &g_system, MTML_ERROR_INVALID_ARGUMENT);
  return put_string(version, length, SIM_DRIVER_VERSION);
}

MTML_EXPORT const char* mtmlErrorString(MtmlReturn result) {
  switch (result) {
    case MTML_SUCCESS: return "Success";
    case MTML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case MTML_ERROR_DRIVER_FAILURE: return "Driver Failure";
    case MTML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case MTML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case MTML_ERROR_NO_PERMISSION: return "No Permission";
    case MTML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case MTML_ERROR_NOT_FOUND: return "Not Found";
    case MTML_ERROR_INSUFFICIENT_MEMORY: return "Insufficient Memory";
    case MTML_ERROR_DRIVER_TOO_OLD: return "Driver Too Old";
    case MTML_ERROR_DRIVER_TOO_NEW: return "Driver Too New";
    case MTML_ERROR_TIMEOUT: return "Timeout";
    case MTML_ERROR_RESOURCE_IS_BUSY: return "Resource Is Busy";
    default: return "Unknown Error";
  }
}

/* ------------------------------------------------------------------ device: sub-objects */
MTML_EXPORT MtmlReturn mtmlDeviceInitGpu(const MtmlDevice* dev, MtmlGpu** gpu) {
  CHECK(device_ok(dev) && gpu != NULL, MTML_ERROR_INVALID_ARGUMENT);
  *gpu = &g_gpus[dev->index];
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlDeviceFreeGpu(MtmlGpu* gpu) {
  CHECK(gpu_ok(gpu), MTML_ERROR_INVALID_ARGUMENT);
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlDeviceInitMemory(const MtmlDevice* dev, MtmlMemory** mem) {
  CHECK(device_ok(dev) && mem != NULL, MTML_ERROR_INVALID_ARGUMENT);
  *mem = &g_memories[dev->index];
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlDeviceFreeMemory(MtmlMemory* mem) {
  CHECK(mem_ok(mem), MTML_ERROR_INVALID_ARGUMENT);
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlDeviceInitVpu(const MtmlDevice* dev, MtmlVpu** vpu) {
  CHECK(device_ok(dev) && vpu != NULL, MTML_ERROR_INVALID_ARGUMENT);
  *vpu = &g_vpus[dev->index];
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlDeviceFreeVpu(MtmlVpu* vpu) {
  CHECK(vpu_ok(vpu), MTML_ERROR_INVALID_ARGUMENT);
  return MTML_SUCCESS;
}

/* ------------------------------------------------------------------ device: identity */
MTML_EXPORT MtmlReturn mtmlDeviceGetIndex(const MtmlDevice* dev, unsigned int* index) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(index, dev->index);
}

MTML_EXPORT MtmlReturn mtmlDeviceGetUUID(const MtmlDevice* dev, char* uuid, unsigned int length) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  char mine[UUID_SIZE];
  device_uuid(dev->index, mine, sizeof mine);
  return put_string(uuid, length, mine);
}

MTML_EXPORT MtmlReturn mtmlDeviceGetBrand(const MtmlDevice* dev, unsigned int* type) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(type, 0); /* MTML_BRAND_MTT */
}

MTML_EXPORT MtmlReturn mtmlDeviceGetName(const MtmlDevice* dev, char* name, unsigned int length) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  return put_string(name, length, sim_board_get()->name);
}

MTML_EXPORT MtmlReturn mtmlDeviceGetPciInfo(const MtmlDevice* dev, MtmlPciInfo* pci) {
  CHECK(device_ok(dev) && pci != NULL, MTML_ERROR_INVALID_ARGUMENT);
  memset(pci, 0, sizeof *pci);
  device_sbdf(dev->index, pci->sbdf, sizeof pci->sbdf);
  pci->bus = 0x3b + 0x10 * dev->index;
  pci->pciDeviceId = (SIM_PCI_DEVICE << 16) | SIM_PCI_VENDOR;
  pci->pciSubsystemId = (SIM_PCI_DEVICE << 16) | SIM_PCI_VENDOR;
  pci->busWidth = 16;
  pci->pciMaxSpeed = pci->pciCurSpeed = 32.0f; /* GT/s */
  pci->pciMaxWidth = pci->pciCurWidth = 16;
  pci->pciMaxGen = pci->pciCurGen = 5;
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlDeviceGetPowerUsage(const MtmlDevice* dev, unsigned int* power) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(power, SIM_POWER_MW);
}

static MtmlReturn device_path(const MtmlDevice* dev, char* path, unsigned int length,
                              const char* format, unsigned base) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  char mine[PATH_SIZE];
  snprintf(mine, sizeof mine, format, base + dev->index);
  return put_string(path, length, mine);
}

MTML_EXPORT MtmlReturn mtmlDeviceGetGpuPath(const MtmlDevice* dev, char* path,
                                            unsigned int length) {
  return device_path(dev, path, length, "/dev/mtgpu.%u", 0);
}

MTML_EXPORT MtmlReturn mtmlDeviceGetPrimaryPath(const MtmlDevice* dev, char* path,
                                                unsigned int length) {
  return device_path(dev, path, length, "/dev/dri/card%u", 1);
}

MTML_EXPORT MtmlReturn mtmlDeviceGetRenderPath(const MtmlDevice* dev, char* path,
                                               unsigned int length) {
  return device_path(dev, path, length, "/dev/dri/renderD%u", 128);
}

MTML_EXPORT MtmlReturn mtmlDeviceGetVbiosVersion(const MtmlDevice* dev, char* version,
                                                 unsigned int length) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  return put_string(version, length, SIM_MTBIOS_VERSION);
}

MTML_EXPORT MtmlReturn mtmlDeviceGetMtBiosVersion(const MtmlDevice* dev, char* version,
                                                  unsigned int length) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  return put_string(version, length, SIM_MTBIOS_VERSION);
}

MTML_EXPORT MtmlReturn mtmlDeviceGetProperty(const MtmlDevice* dev, MtmlDeviceProperty* prop) {
  CHECK(device_ok(dev) && prop != NULL, MTML_ERROR_INVALID_ARGUMENT);
  memset(prop, 0, sizeof *prop); /* no virtualization, no MPC, no MtLink */
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlDeviceCountFan(const MtmlDevice* dev, unsigned int* count) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(count, 1);
}

MTML_EXPORT MtmlReturn mtmlDeviceGetFanSpeed(const MtmlDevice* dev, unsigned int index,
                                             unsigned int* speed) {
  CHECK(device_ok(dev) && index < 1, MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(speed, SIM_FAN_SPEED);
}

MTML_EXPORT MtmlReturn mtmlDeviceGetFanRpm(const MtmlDevice* dev, unsigned int fanIndex,
                                           unsigned int* fanRpm) {
  CHECK(device_ok(dev) && fanIndex < 1, MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(fanRpm, SIM_FAN_RPM);
}

MTML_EXPORT MtmlReturn mtmlDeviceGetPcieSlotInfo(const MtmlDevice* dev, MtmlPciSlotInfo* slot) {
  CHECK(device_ok(dev) && slot != NULL, MTML_ERROR_INVALID_ARGUMENT);
  memset(slot, 0, sizeof *slot);
  slot->slotId = dev->index;
  snprintf(slot->slotName, sizeof slot->slotName, "PCIe Slot %u", dev->index);
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlDeviceCountDisplayInterface(const MtmlDevice* dev,
                                                       unsigned int* count) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(count, 0); /* a data-centre board: no display outputs */
}

MTML_EXPORT MtmlReturn mtmlDeviceGetDisplayInterfaceSpec(const MtmlDevice* dev,
                                                         unsigned int intfIndex,
                                                         MtmlDispIntfSpec* spec) {
  (void)intfIndex, (void)spec;
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  return MTML_ERROR_INVALID_ARGUMENT; /* no interface has any index */
}

MTML_EXPORT MtmlReturn mtmlDeviceGetSerialNumber(const MtmlDevice* dev, unsigned int length,
                                                 char* serialNumber) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  char mine[64];
  snprintf(mine, sizeof mine, "MTSIM%08u", 1000 + dev->index);
  return put_string(serialNumber, length, mine);
}

MTML_EXPORT MtmlReturn mtmlDeviceCountGpuCores(const MtmlDevice* dev, unsigned int* numCores) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(numCores, (unsigned)sim_board_get()->sm_count * 128u);
}

MTML_EXPORT MtmlReturn mtmlDeviceReset(const MtmlDevice* dev) {
  CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT);
  return MTML_ERROR_NO_PERMISSION; /* resetting needs root and an idle device */
}

/* ------------------------------------------------------------------ device: virtualization */
#define DEVICE_ONLY_UNSUPPORTED(dev)                \
  do {                                              \
    CHECK(device_ok(dev), MTML_ERROR_INVALID_ARGUMENT); \
    return MTML_ERROR_NOT_SUPPORTED;                \
  } while (0)

MTML_EXPORT MtmlReturn mtmlDeviceCountSupportedVirtTypes(const MtmlDevice* dev,
                                                         unsigned int* count) {
  (void)count;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetSupportedVirtTypes(const MtmlDevice* dev, void* types,
                                                       unsigned int count) {
  (void)types, (void)count;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceCountAvailVirtTypes(const MtmlDevice* dev, unsigned int* count) {
  (void)count;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetAvailVirtTypes(const MtmlDevice* dev, void* types,
                                                   unsigned int count) {
  (void)types, (void)count;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceCountAvailVirtDevices(const MtmlDevice* dev, const void* type,
                                                       unsigned int* count) {
  (void)type, (void)count;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceCountActiveVirtDevices(const MtmlDevice* dev,
                                                        unsigned int* count) {
  (void)count;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetActiveVirtDeviceUuids(const MtmlDevice* dev, char* uuids,
                                                          unsigned int entryLength,
                                                          unsigned int entryCount) {
  (void)uuids, (void)entryLength, (void)entryCount;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceCountMaxVirtDevices(const MtmlDevice* dev, const void* type,
                                                     unsigned int* virtDevicesCount) {
  (void)type, (void)virtDevicesCount;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceInitVirtDevice(const MtmlDevice* dev, const char* uuid,
                                                MtmlDevice** virtDev) {
  (void)uuid, (void)virtDev;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceFreeVirtDevice(MtmlDevice* virtDev) {
  (void)virtDev;
  return MTML_ERROR_INVALID_ARGUMENT; /* no virtual device was ever handed out */
}
MTML_EXPORT MtmlReturn mtmlDeviceGetVirtType(const MtmlDevice* virtDev, void* type) {
  (void)type;
  DEVICE_ONLY_UNSUPPORTED(virtDev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetPhyDeviceUuid(const MtmlDevice* virtDev, char* uuid,
                                                  unsigned int length) {
  (void)uuid, (void)length;
  DEVICE_ONLY_UNSUPPORTED(virtDev);
}

/* ------------------------------------------------------------------ device: topology */
#define TOPOLOGY_INTERNAL 0
#define TOPOLOGY_HOSTBRIDGE 3
#define TOPOLOGY_SYSTEM 5

MTML_EXPORT MtmlReturn mtmlDeviceGetTopologyLevel(const MtmlDevice* dev1, const MtmlDevice* dev2,
                                                  unsigned int* level) {
  CHECK(device_ok(dev1) && device_ok(dev2), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(level, dev1 == dev2 ? TOPOLOGY_INTERNAL : TOPOLOGY_HOSTBRIDGE);
}

/* The other devices at `level` from `dev`: all of them sit behind one host bridge. */
static unsigned peers_at(const MtmlDevice* dev, unsigned level, MtmlDevice** out, unsigned room) {
  if (level != TOPOLOGY_HOSTBRIDGE) return 0;
  unsigned n = 0;
  for (int i = 0; i < sim_physical_devices(); ++i) {
    if ((unsigned)i == dev->index) continue;
    if (out != NULL && n < room) out[n] = &g_devices[i];
    ++n;
  }
  return n;
}

MTML_EXPORT MtmlReturn mtmlDeviceCountDeviceByTopologyLevel(const MtmlDevice* dev,
                                                            unsigned int level,
                                                            unsigned int* count) {
  CHECK(device_ok(dev) && level <= TOPOLOGY_SYSTEM, MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(count, peers_at(dev, level, NULL, 0));
}

MTML_EXPORT MtmlReturn mtmlDeviceGetDeviceByTopologyLevel(const MtmlDevice* dev,
                                                          unsigned int level, unsigned int count,
                                                          MtmlDevice** deviceArray) {
  CHECK(device_ok(dev) && level <= TOPOLOGY_SYSTEM && deviceArray != NULL,
        MTML_ERROR_INVALID_ARGUMENT);
  CHECK(count >= peers_at(dev, level, NULL, 0), MTML_ERROR_INSUFFICIENT_SIZE);
  peers_at(dev, level, deviceArray, count);
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlDeviceGetP2PStatus(const MtmlDevice* dev1, const MtmlDevice* dev2,
                                              unsigned int p2pCap, unsigned int* p2pStatus) {
  CHECK(device_ok(dev1) && device_ok(dev2) && p2pCap <= 1, MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(p2pStatus, 0); /* MTML_P2P_STATUS_OK: the simulator's peers share memory */
}

/* ------------------------------------------------------------------ GPU */
MTML_EXPORT MtmlReturn mtmlGpuGetUtilization(const MtmlGpu* gpu, unsigned int* utilization) {
  CHECK(gpu_ok(gpu), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(utilization, SIM_GPU_UTIL);
}

MTML_EXPORT MtmlReturn mtmlGpuGetTemperature(const MtmlGpu* gpu, int* temp) {
  CHECK(gpu_ok(gpu) && temp != NULL, MTML_ERROR_INVALID_ARGUMENT);
  *temp = SIM_TEMPERATURE;
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlGpuGetClock(const MtmlGpu* gpu, unsigned int* clockMhz) {
  CHECK(gpu_ok(gpu), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(clockMhz, SIM_GPU_CLOCK);
}

MTML_EXPORT MtmlReturn mtmlGpuGetMaxClock(const MtmlGpu* gpu, unsigned int* clockMhz) {
  CHECK(gpu_ok(gpu), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(clockMhz, SIM_GPU_MAX_CLOCK);
}

MTML_EXPORT MtmlReturn mtmlGpuGetEngineUtilization(const MtmlGpu* gpu, unsigned int engine,
                                                   unsigned int* utilization) {
  CHECK(gpu_ok(gpu) && engine < 4, MTML_ERROR_INVALID_ARGUMENT);
  /* MTML_GPU_ENGINE_COMPUTE (3) carries the load; geometry, 2D and 3D are idle */
  return put_uint(utilization, engine == 3 ? SIM_GPU_UTIL : 0);
}

/* ------------------------------------------------------------------ memory */
MTML_EXPORT MtmlReturn mtmlMemoryGetTotal(const MtmlMemory* mem, unsigned long long* total) {
  CHECK(mem_ok(mem) && total != NULL, MTML_ERROR_INVALID_ARGUMENT);
  *total = (unsigned long long)sim_board_get()->total_memory;
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlMemoryGetUsed(const MtmlMemory* mem, unsigned long long* used) {
  CHECK(mem_ok(mem) && used != NULL, MTML_ERROR_INVALID_ARGUMENT);
  *used = memory_used(mem->index);
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlMemoryGetUsedSystem(const MtmlMemory* mem, unsigned long long* used) {
  CHECK(mem_ok(mem) && used != NULL, MTML_ERROR_INVALID_ARGUMENT);
  *used = SIM_SYSTEM_USED;
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlMemoryGetUtilization(const MtmlMemory* mem,
                                                unsigned int* utilization) {
  CHECK(mem_ok(mem), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(utilization, SIM_MEM_UTIL);
}

MTML_EXPORT MtmlReturn mtmlMemoryGetClock(const MtmlMemory* mem, unsigned int* clockMhz) {
  CHECK(mem_ok(mem), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(clockMhz, SIM_MEM_CLOCK);
}

MTML_EXPORT MtmlReturn mtmlMemoryGetMaxClock(const MtmlMemory* mem, unsigned int* clockMhz) {
  CHECK(mem_ok(mem), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(clockMhz, SIM_MEM_MAX_CLOCK);
}

MTML_EXPORT MtmlReturn mtmlMemoryGetBusWidth(const MtmlMemory* mem, unsigned int* busWidth) {
  CHECK(mem_ok(mem), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(busWidth, SIM_MEM_BUS_WIDTH);
}

MTML_EXPORT MtmlReturn mtmlMemoryGetBandwidth(const MtmlMemory* mem, unsigned int* bandwidth) {
  CHECK(mem_ok(mem), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(bandwidth, SIM_MEM_BANDWIDTH);
}

MTML_EXPORT MtmlReturn mtmlMemoryGetSpeed(const MtmlMemory* mem, unsigned int* speed) {
  CHECK(mem_ok(mem), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(speed, SIM_MEM_SPEED);
}

MTML_EXPORT MtmlReturn mtmlMemoryGetVendor(const MtmlMemory* mem, unsigned int length,
                                           char* vendor) {
  CHECK(mem_ok(mem), MTML_ERROR_INVALID_ARGUMENT);
  return put_string(vendor, length, SIM_MEM_VENDOR);
}

MTML_EXPORT MtmlReturn mtmlMemoryGetType(const MtmlMemory* mem, unsigned int* type) {
  CHECK(mem_ok(mem), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(type, SIM_MEM_TYPE);
}

MTML_EXPORT MtmlReturn mtmlMemoryGetEccMode(const MtmlMemory* mem, unsigned int* currentMode,
                                            unsigned int* pendingMode) {
  CHECK(mem_ok(mem) && currentMode != NULL && pendingMode != NULL, MTML_ERROR_INVALID_ARGUMENT);
  *currentMode = *pendingMode = 0; /* MTML_MEMORY_ECC_DISABLE */
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlMemoryGetRetiredPagesCount(const MtmlMemory* mem,
                                                      MtmlPageRetirementCount* count) {
  CHECK(mem_ok(mem) && count != NULL, MTML_ERROR_INVALID_ARGUMENT);
  count->sbeCount = count->dbeCount = 0;
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlMemoryGetRetiredPages(const MtmlMemory* mem, unsigned int cause,
                                                 unsigned int count,
                                                 MtmlPageRetirement* pageRetirements) {
  CHECK(mem_ok(mem) && cause < 2, MTML_ERROR_INVALID_ARGUMENT);
  if (count > 0 && pageRetirements != NULL)
    memset(pageRetirements, 0, (size_t)count * sizeof *pageRetirements);
  return MTML_SUCCESS; /* no page was ever retired */
}

MTML_EXPORT MtmlReturn mtmlMemoryGetRetiredPagesPendingStatus(const MtmlMemory* mem,
                                                              unsigned int* isPending) {
  CHECK(mem_ok(mem), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(isPending, 0);
}

MTML_EXPORT MtmlReturn mtmlMemoryGetEccErrorCounter(const MtmlMemory* mem, unsigned int errorType,
                                                    unsigned int counterType,
                                                    unsigned int locationType,
                                                    unsigned long long* eccCounts) {
  (void)locationType;
  CHECK(mem_ok(mem) && errorType < 2 && counterType < 2 && eccCounts != NULL,
        MTML_ERROR_INVALID_ARGUMENT);
  *eccCounts = 0;
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlMemoryClearEccErrorCounts(const MtmlMemory* mem,
                                                     unsigned int counterType) {
  CHECK(mem_ok(mem) && counterType < 2, MTML_ERROR_INVALID_ARGUMENT);
  return MTML_ERROR_NO_PERMISSION; /* clearing needs root */
}

/* ------------------------------------------------------------------ VPU */
MTML_EXPORT MtmlReturn mtmlVpuGetUtilization(const MtmlVpu* vpu, MtmlCodecUtil* utilization) {
  CHECK(vpu_ok(vpu) && utilization != NULL, MTML_ERROR_INVALID_ARGUMENT);
  memset(utilization, 0, sizeof *utilization);
  utilization->period = 1000000; /* microseconds sampled */
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlVpuGetClock(const MtmlVpu* vpu, unsigned int* clockMhz) {
  CHECK(vpu_ok(vpu), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(clockMhz, SIM_VPU_CLOCK);
}

MTML_EXPORT MtmlReturn mtmlVpuGetMaxClock(const MtmlVpu* vpu, unsigned int* clockMhz) {
  CHECK(vpu_ok(vpu), MTML_ERROR_INVALID_ARGUMENT);
  return put_uint(clockMhz, SIM_VPU_MAX_CLOCK);
}

MTML_EXPORT MtmlReturn mtmlVpuGetCodecCapacity(const MtmlVpu* vpu, unsigned int* encodeCapacity,
                                               unsigned int* decodeCapacity) {
  CHECK(vpu_ok(vpu) && encodeCapacity != NULL && decodeCapacity != NULL,
        MTML_ERROR_INVALID_ARGUMENT);
  *encodeCapacity = SIM_ENCODE_CAPACITY;
  *decodeCapacity = SIM_DECODE_CAPACITY;
  return MTML_SUCCESS;
}

static MtmlReturn idle_sessions(const MtmlVpu* vpu, int* states, unsigned int length,
                                unsigned capacity) {
  CHECK(vpu_ok(vpu) && states != NULL, MTML_ERROR_INVALID_ARGUMENT);
  CHECK(length >= capacity, MTML_ERROR_INSUFFICIENT_SIZE);
  for (unsigned i = 0; i < length; ++i) states[i] = 0; /* MTML_CODEC_SESSION_STATE_IDLE */
  return MTML_SUCCESS;
}

static MtmlReturn idle_metrics(const MtmlVpu* vpu, unsigned sessionId, unsigned capacity,
                               MtmlCodecSessionMetrics* metrics) {
  CHECK(vpu_ok(vpu) && metrics != NULL && sessionId < capacity, MTML_ERROR_INVALID_ARGUMENT);
  memset(metrics, 0, sizeof *metrics);
  metrics->id = sessionId;
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlVpuGetEncoderSessionStates(const MtmlVpu* vpu, int* states,
                                                      unsigned int length) {
  return idle_sessions(vpu, states, length, SIM_ENCODE_CAPACITY);
}

MTML_EXPORT MtmlReturn mtmlVpuGetEncoderSessionMetrics(const MtmlVpu* vpu, unsigned int sessionId,
                                                       MtmlCodecSessionMetrics* metrics) {
  return idle_metrics(vpu, sessionId, SIM_ENCODE_CAPACITY, metrics);
}

MTML_EXPORT MtmlReturn mtmlVpuGetDecoderSessionStates(const MtmlVpu* vpu, int* states,
                                                      unsigned int length) {
  return idle_sessions(vpu, states, length, SIM_DECODE_CAPACITY);
}

MTML_EXPORT MtmlReturn mtmlVpuGetDecoderSessionMetrics(const MtmlVpu* vpu, unsigned int sessionId,
                                                       MtmlCodecSessionMetrics* metrics) {
  return idle_metrics(vpu, sessionId, SIM_DECODE_CAPACITY, metrics);
}

/* ------------------------------------------------------------------ logging */
MTML_EXPORT MtmlReturn mtmlLogSetConfiguration(const MtmlLogConfiguration* configuration) {
  CHECK(configuration != NULL, MTML_ERROR_INVALID_ARGUMENT);
  pthread_mutex_lock(&g_lock);
  g_log = *configuration;
  pthread_mutex_unlock(&g_lock);
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlLogGetConfiguration(MtmlLogConfiguration* configuration) {
  CHECK(configuration != NULL, MTML_ERROR_INVALID_ARGUMENT);
  pthread_mutex_lock(&g_lock);
  *configuration = g_log;
  pthread_mutex_unlock(&g_lock);
  return MTML_SUCCESS;
}

/* ------------------------------------------------------------------ MPC (not on this board) */
MTML_EXPORT MtmlReturn mtmlDeviceSetMpcMode(const MtmlDevice* dev, unsigned int mode) {
  (void)mode;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMpcMode(const MtmlDevice* dev, unsigned int* currentMode) {
  (void)currentMode;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceCountSupportedMpcProfiles(const MtmlDevice* dev,
                                                           unsigned int* count) {
  (void)count;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetSupportedMpcProfiles(const MtmlDevice* dev,
                                                         unsigned int count, void* info) {
  (void)count, (void)info;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceCountSupportedMpcConfigurations(const MtmlDevice* dev,
                                                                 unsigned int* count) {
  (void)count;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetSupportedMpcConfigurations(const MtmlDevice* dev,
                                                               unsigned int count, void* info) {
  (void)count, (void)info;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMpcConfiguration(const MtmlDevice* dev, void* config) {
  (void)config;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMpcConfigurationByName(const MtmlDevice* dev,
                                                           const char* configName, void* config) {
  (void)configName, (void)config;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceSetMpcConfiguration(const MtmlDevice* dev, unsigned int id) {
  (void)id;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceCountMpcInstancesByProfileId(const MtmlDevice* dev,
                                                              unsigned int profileId,
                                                              unsigned int* count) {
  (void)profileId, (void)count;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMpcInstancesByProfileId(const MtmlDevice* dev,
                                                            unsigned int profileId,
                                                            unsigned int count,
                                                            MtmlDevice** mpcInstance) {
  (void)profileId, (void)count, (void)mpcInstance;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceCountMpcInstances(const MtmlDevice* dev, unsigned int* count) {
  (void)count;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMpcInstances(const MtmlDevice* dev, unsigned int count,
                                                 MtmlDevice** mpcInstance) {
  (void)count, (void)mpcInstance;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMpcInstanceByIndex(const MtmlDevice* dev, unsigned int index,
                                                       MtmlDevice** mpcInstance) {
  (void)index, (void)mpcInstance;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMpcParentDevice(const MtmlDevice* mpcInstance,
                                                    MtmlDevice** parentDevice) {
  (void)parentDevice;
  DEVICE_ONLY_UNSUPPORTED(mpcInstance);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMpcProfileInfo(const MtmlDevice* mpcInstance, void* info) {
  (void)info;
  DEVICE_ONLY_UNSUPPORTED(mpcInstance);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMpcInstanceIndex(const MtmlDevice* mpcInstance,
                                                     unsigned int* index) {
  (void)index;
  DEVICE_ONLY_UNSUPPORTED(mpcInstance);
}

/* ------------------------------------------------------------------ MtLink (not on this board) */
MTML_EXPORT MtmlReturn mtmlDeviceGetMtLinkSpec(const MtmlDevice* dev, void* spec) {
  (void)spec;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMtLinkState(const MtmlDevice* dev, unsigned int linkId,
                                                unsigned int* state) {
  (void)linkId, (void)state;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMtLinkCapStatus(const MtmlDevice* dev, unsigned int linkId,
                                                    unsigned int capability,
                                                    unsigned int* status) {
  (void)linkId, (void)capability, (void)status;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMtLinkRemoteDevice(const MtmlDevice* dev, unsigned int linkId,
                                                       MtmlDevice** remoteDevice) {
  (void)linkId, (void)remoteDevice;
  DEVICE_ONLY_UNSUPPORTED(dev);
}
MTML_EXPORT MtmlReturn mtmlDeviceCountMtLinkShortestPaths(const MtmlDevice* localDevice,
                                                          const MtmlDevice* remoteDevice,
                                                          unsigned int* pathCount,
                                                          unsigned int* pathLength) {
  (void)pathCount, (void)pathLength;
  CHECK(device_ok(remoteDevice), MTML_ERROR_INVALID_ARGUMENT);
  DEVICE_ONLY_UNSUPPORTED(localDevice);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMtLinkShortestPaths(const MtmlDevice* localDevice,
                                                        const MtmlDevice* remoteDevice,
                                                        unsigned int pathCount,
                                                        unsigned int pathLength,
                                                        MtmlDevice** paths) {
  (void)pathCount, (void)pathLength, (void)paths;
  CHECK(device_ok(remoteDevice), MTML_ERROR_INVALID_ARGUMENT);
  DEVICE_ONLY_UNSUPPORTED(localDevice);
}
MTML_EXPORT MtmlReturn mtmlDeviceCountMtLinkLayouts(const MtmlDevice* localDevice,
                                                    const MtmlDevice* remoteDevice,
                                                    unsigned int* linkCount) {
  (void)linkCount;
  CHECK(device_ok(remoteDevice), MTML_ERROR_INVALID_ARGUMENT);
  DEVICE_ONLY_UNSUPPORTED(localDevice);
}
MTML_EXPORT MtmlReturn mtmlDeviceGetMtLinkLayouts(const MtmlDevice* localDevice,
                                                  const MtmlDevice* remoteDevice,
                                                  unsigned int linkCount, void* layouts) {
  (void)linkCount, (void)layouts;
  CHECK(device_ok(remoteDevice), MTML_ERROR_INVALID_ARGUMENT);
  DEVICE_ONLY_UNSUPPORTED(localDevice);
}

/* ------------------------------------------------------------------ affinity */
#define LONG_BITS (8 * sizeof(unsigned long))

MTML_EXPORT MtmlReturn mtmlDeviceGetMemoryAffinityWithinNode(const MtmlDevice* dev,
                                                             unsigned int nodeSetSize,
                                                             unsigned long* nodeSet) {
  CHECK(device_ok(dev) && nodeSet != NULL && nodeSetSize > 0, MTML_ERROR_INVALID_ARGUMENT);
  memset(nodeSet, 0, nodeSetSize * sizeof *nodeSet);
  nodeSet[0] = 1; /* NUMA node 0 */
  return MTML_SUCCESS;
}

MTML_EXPORT MtmlReturn mtmlDeviceGetCpuAffinityWithinNode(const MtmlDevice* dev,
                                                          unsigned int cpuSetSize,
                                                          unsigned long* cpuSet) {
  CHECK(device_ok(dev) && cpuSet != NULL && cpuSetSize > 0, MTML_ERROR_INVALID_ARGUMENT);
  memset(cpuSet, 0, cpuSetSize * sizeof *cpuSet);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  for (long c = 0; c < cpus && (size_t)c < cpuSetSize * LONG_BITS; ++c)
    cpuSet[c / LONG_BITS] |= 1UL << (c % LONG_BITS);
  return MTML_SUCCESS;
}
