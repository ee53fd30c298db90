// Build-wide settings of an expert-parallel communication library, included by every kernel.
#pragma once

#define NUM_MAX_PEERS 8
#define NUM_MAX_FIFO_SLOTS 32768
#define NUM_WORKSPACE_BYTES (32 * 1024 * 1024)

// Let editors that do not run the device compiler index the device code.
#ifdef __CLION_IDE__
#define __CUDA_ARCH__ 900  // NOLINT(*-reserved-identifier)
#define __CUDACC_RDC__     // NOLINT(*-reserved-identifier)
__host__ __device__ __forceinline__ void host_device_printf(const char* format, ...) {
  asm volatile("trap;");
}
#define printf host_device_printf
#endif

// torch's build hides the half/bfloat16 operators; the kernels here need them back.
#ifdef __CUDA_NO_HALF_CONVERSIONS__
#undef __CUDA_NO_HALF_CONVERSIONS__
#endif
#ifdef __CUDA_NO_HALF_OPERATORS__
#undef __CUDA_NO_HALF_OPERATORS__
#endif
#ifdef __CUDA_NO_HALF2_OPERATORS__
#undef __CUDA_NO_HALF2_OPERATORS__
#endif
#ifdef __CUDA_NO_BFLOAT16_CONVERSIONS__
#undef __CUDA_NO_BFLOAT16_CONVERSIONS__
#endif
#ifdef __CUDA_NO_BFLOAT162_OPERATORS__
#undef __CUDA_NO_BFLOAT162_OPERATORS__
#endif

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#if defined(__CUDACC_RDC__) && !defined(EP_SINGLE_TU)
#define EP_DEVICE_LINKED 1
#else
#define EP_DEVICE_LINKED 0
#endif

#ifndef CUDA_CHECK
#define CUDA_CHECK(cmd)                                                         \
  do {                                                                          \
    cudaError_t e = (cmd);                                                      \
    if (e != cudaSuccess) {                                                     \
      throw std::runtime_error(std::string("CUDA error: ") + cudaGetErrorString(e)); \
    }                                                                           \
  } while (0)
#endif

#define SETUP_LAUNCH_CONFIG(num_sms, num_threads, stream)                  \
  cudaLaunchConfig_t cfg = {(num_sms), (num_threads), 0, stream, nullptr, 0}; \
  cudaLaunchAttribute attr[2];                                             \
  attr[0].id = cudaLaunchAttributeCooperative;                             \
  attr[0].val.cooperative = 1;                                             \
  attr[1].id = cudaLaunchAttributeClusterDimension;                        \
  attr[1].val.clusterDim.x = (num_sms % 2 == 0 ? 2 : 1);                   \
  attr[1].val.clusterDim.y = 1;                                            \
  attr[1].val.clusterDim.z = 1;                                            \
  cfg.attrs = attr;                                                        \
  cfg.numAttrs = 2

#define LAUNCH_KERNEL(config, kernel, ...) CUDA_CHECK(cudaLaunchKernelEx(config, kernel, ##__VA_ARGS__))
