// cublas_v2.h, from torchada's stable-ABI kit (stable_compat_include_dir()).
// With the MUSA SDK's <mublas.h> on the include path: that header, and the CUDA names a
// CUDA-written header uses spelled as MUSA's (the same renames as torchada's porter).
// Without it: the next <cublas_v2.h> on the include path (CUDA's own): a CUDA build is unchanged.
#pragma once
#if __has_include(<mublas.h>)
#include <mublas.h>
#ifndef cublasHandle_t
#define cublasHandle_t mublasHandle_t
#endif
#ifndef cublasStatus_t
#define cublasStatus_t mublasStatus_t
#endif
#ifndef CUBLAS_STATUS_SUCCESS
#define CUBLAS_STATUS_SUCCESS MUBLAS_STATUS_SUCCESS
#endif
#ifndef cublasCreate
#define cublasCreate mublasCreate
#endif
#ifndef cublasDestroy
#define cublasDestroy mublasDestroy
#endif
#ifndef cublasSetStream
#define cublasSetStream mublasSetStream
#endif
#ifndef CUBLAS_OP_N
#define CUBLAS_OP_N MUBLAS_OP_N
#endif
#ifndef CUBLAS_OP_T
#define CUBLAS_OP_T MUBLAS_OP_T
#endif
#ifndef cublasGemmEx
#define cublasGemmEx mublasGemmEx
#endif
#elif defined(__has_include_next)
#if __has_include_next(<cublas_v2.h>)
#include_next <cublas_v2.h>
#else
#error "cublas_v2.h (torchada's stable-ABI kit): neither the MUSA SDK's mublas.h nor CUDA's cublas_v2.h is on the include path; add $MUSA_HOME/include (or torch_musa's include_paths()) to the include directories"
#endif
#else
#include_next <cublas_v2.h>
#endif
