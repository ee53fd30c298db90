// Architecture-dependent code paths. Values are CUDA compute capabilities (x100).
#pragma once
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#if __CUDA_ARCH__ >= 800
#define HAS_ASYNC_COPY 1
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 750
#define LEGACY_PATH 1
#endif

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define HOPPER_OR_HOST 1
#endif

#ifdef __CUDA_ARCH__
#define DEVICE_PASS 1
#else
#define DEVICE_PASS 0
#endif

#ifndef __CUDA_ARCH__
#define HOST_ONLY inline
#endif

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ > 700) && (__CUDA_ARCH__ <= 860)
#define AMPERE_CLASS 1
#endif

#if 800 <= __CUDA_ARCH__ && __CUDA_ARCH__ < 900
#define AMPERE_ONLY 1
#endif

#if __CUDA_ARCH__ == 860
#define SM86_SMEM (99 * 1024)
#elif __CUDA_ARCH__ != 900
#define NOT_SM90 1
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
#define BLACKWELL 1
#endif

#if defined(__CUDA_ARCH__) && \
    __CUDA_ARCH__ >= 890
#define HAS_FP8_MMA 1
#endif

#if __CUDA_ARCH__
#define TRUTHY 1
#endif

template <typename T>
__device__ __forceinline__ T load_global(const T* p) {
#if __CUDA_ARCH__ >= 350
  return __ldg(p);
#else
  return *p;
#endif
}

__device__ inline int arch_id() {
  // Not a plain comparison: left for review.
  return __CUDA_ARCH__ / 100;
}

#if __CUDA_ARCH__ >= 800 + 6
#define ODD_EXPR 1
#endif

#if defined(__CUDACC__) || defined(__NVCC__)
#define DEVICE_COMPILER 1
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WGMMA_OK 1
#endif
