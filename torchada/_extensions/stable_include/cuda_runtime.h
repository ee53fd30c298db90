// cuda_runtime.h, from torchada's stable-ABI kit (stable_compat_include_dir()).
// With the MUSA SDK's <musa_runtime.h> on the include path: that header, and the CUDA names a
// CUDA-written header uses spelled as MUSA's (the same renames as torchada's porter).
// Without it: the next <cuda_runtime.h> on the include path (CUDA's own): a CUDA build is
// unchanged.
#pragma once
#if __has_include(<musa_runtime.h>)
#include <musa_runtime.h>
#ifndef cudaStream_t
#define cudaStream_t musaStream_t
#endif
#ifndef cudaEvent_t
#define cudaEvent_t musaEvent_t
#endif
#ifndef cudaError_t
#define cudaError_t musaError_t
#endif
#ifndef cudaSuccess
#define cudaSuccess musaSuccess
#endif
#ifndef cudaGetLastError
#define cudaGetLastError musaGetLastError
#endif
#ifndef cudaPeekAtLastError
#define cudaPeekAtLastError musaPeekAtLastError
#endif
#ifndef cudaGetErrorString
#define cudaGetErrorString musaGetErrorString
#endif
#ifndef cudaGetDeviceCount
#define cudaGetDeviceCount musaGetDeviceCount
#endif
#ifndef cudaGetDevice
#define cudaGetDevice musaGetDevice
#endif
#ifndef cudaSetDevice
#define cudaSetDevice musaSetDevice
#endif
#ifndef cudaDeviceSynchronize
#define cudaDeviceSynchronize musaDeviceSynchronize
#endif
#ifndef cudaStreamSynchronize
#define cudaStreamSynchronize musaStreamSynchronize
#endif
#ifndef cudaStreamWaitEvent
#define cudaStreamWaitEvent musaStreamWaitEvent
#endif
#ifndef cudaEventCreate
#define cudaEventCreate musaEventCreate
#endif
#ifndef cudaEventRecord
#define cudaEventRecord musaEventRecord
#endif
#ifndef cudaMalloc
#define cudaMalloc musaMalloc
#endif
#ifndef cudaFree
#define cudaFree musaFree
#endif
#ifndef cudaMemcpy
#define cudaMemcpy musaMemcpy
#endif
#ifndef cudaMemcpyAsync
#define cudaMemcpyAsync musaMemcpyAsync
#endif
#ifndef cudaMemsetAsync
#define cudaMemsetAsync musaMemsetAsync
#endif
#ifndef cudaMemcpyKind
#define cudaMemcpyKind musaMemcpyKind
#endif
#ifndef cudaMemcpyHostToDevice
#define cudaMemcpyHostToDevice musaMemcpyHostToDevice
#endif
#ifndef cudaMemcpyDeviceToHost
#define cudaMemcpyDeviceToHost musaMemcpyDeviceToHost
#endif
#ifndef cudaMemcpyDeviceToDevice
#define cudaMemcpyDeviceToDevice musaMemcpyDeviceToDevice
#endif
#ifndef cudaDeviceProp
#define cudaDeviceProp musaDeviceProp
#endif
#ifndef cudaGetDeviceProperties
#define cudaGetDeviceProperties musaGetDeviceProperties
#endif
#ifndef cudaDeviceGetAttribute
#define cudaDeviceGetAttribute musaDeviceGetAttribute
#endif
#ifndef cudaDevAttrMultiProcessorCount
#define cudaDevAttrMultiProcessorCount musaDevAttrMultiProcessorCount
#endif
#ifndef cudaFuncSetAttribute
#define cudaFuncSetAttribute musaFuncSetAttribute
#endif
#ifndef cudaFuncAttributeMaxDynamicSharedMemorySize
#define cudaFuncAttributeMaxDynamicSharedMemorySize musaFuncAttributeMaxDynamicSharedMemorySize
#endif
#elif defined(__has_include_next)
#if __has_include_next(<cuda_runtime.h>)
#include_next <cuda_runtime.h>
#else
#error "cuda_runtime.h (torchada's stable-ABI kit): neither the MUSA SDK's musa_runtime.h nor CUDA's cuda_runtime.h is on the include path; add $MUSA_HOME/include (or torch_musa's include_paths()) to the include directories"
#endif
#else
#include_next <cuda_runtime.h>
#endif
