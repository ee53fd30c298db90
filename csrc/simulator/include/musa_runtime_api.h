/*
 * The MUSA runtime API, as far as the torchada simulator implements it (its libmusart.so).
 *
 * Only calls whose simulated behaviour means what it means on hardware are declared:
 *   - errors: musaGetLastError, musaPeekAtLastError, musaGetErrorString;
 *   - versions and device count, musaDeviceSynchronize.
 * Left out on purpose, so that code using them fails to compile instead of misbehaving:
 *   - stream and event calls: the streams torch_musa hands out (c10::musa::MUSAStream::stream())
 *     are the simulated backend's handles, not libmusart objects;
 *   - musaGetDevice/musaSetDevice: libmusart keeps its own current device, which does not follow
 *     torch's (c10::musa::MUSAGuard); use c10::musa::current_device()/set_device() instead.
 * Error values follow the simulated libmusart (CUDA's numbering, which MUSA mirrors by name).
 * Calls resolve against libmusart.so: torchada links it when ported code uses the runtime.
 */
#ifndef TORCHADA_SIM_MUSA_RUNTIME_API_H
#define TORCHADA_SIM_MUSA_RUNTIME_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum musaError {
  musaSuccess = 0,
  musaErrorInvalidValue = 1,
  musaErrorMemoryAllocation = 2,
  musaErrorInitializationError = 3,
  musaErrorInvalidMemcpyDirection = 21,
  musaErrorNoDevice = 100,
  musaErrorInvalidDevice = 101,
  musaErrorInvalidResourceHandle = 400,
  musaErrorPeerAccessAlreadyEnabled = 704,
  musaErrorNotSupported = 801,
  musaErrorUnknown = 999
} musaError_t;

/* Opaque handles, as in the MUSA SDK. */
typedef struct MUstream_st* musaStream_t;
typedef struct MUevent_st* musaEvent_t;
typedef struct MUgraph_st* musaGraph_t;
typedef struct MUgraphExec_st* musaGraphExec_t;

musaError_t musaGetLastError(void);
musaError_t musaPeekAtLastError(void);
const char* musaGetErrorString(musaError_t error);

musaError_t musaDriverGetVersion(int* version);
musaError_t musaRuntimeGetVersion(int* version);
musaError_t musaGetDeviceCount(int* count);
musaError_t musaDeviceSynchronize(void);
musaError_t musaDeviceReset(void);

#ifdef __cplusplus
}
#endif

#endif /* TORCHADA_SIM_MUSA_RUNTIME_API_H */
