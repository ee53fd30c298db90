// cuda_fp8.h, from torchada's stable-ABI kit (stable_compat_include_dir()).
// With the MUSA SDK's <musa_fp8.h> on the include path: that header, and the CUDA names a
// CUDA-written header uses spelled as MUSA's (the same renames as torchada's porter).
// Without it: the next <cuda_fp8.h> on the include path (CUDA's own): a CUDA build is unchanged.
#pragma once
#if __has_include(<musa_fp8.h>)
#include <musa_fp8.h>
#ifndef __nv_fp8_e4m3
#define __nv_fp8_e4m3 __mt_fp8_e4m3
#endif
#ifndef __nv_fp8_e5m2
#define __nv_fp8_e5m2 __mt_fp8_e5m2
#endif
#ifndef __nv_fp8x2_e4m3
#define __nv_fp8x2_e4m3 __mt_fp8x2_e4m3
#endif
#ifndef __nv_fp8x2_e5m2
#define __nv_fp8x2_e5m2 __mt_fp8x2_e5m2
#endif
#ifndef __nv_fp8x4_e4m3
#define __nv_fp8x4_e4m3 __mt_fp8x4_e4m3
#endif
#ifndef __nv_fp8_storage_t
#define __nv_fp8_storage_t __mt_fp8_storage_t
#endif
#elif defined(__has_include_next)
#if __has_include_next(<cuda_fp8.h>)
#include_next <cuda_fp8.h>
#else
#error "cuda_fp8.h (torchada's stable-ABI kit): neither the MUSA SDK's musa_fp8.h nor CUDA's cuda_fp8.h is on the include path; add $MUSA_HOME/include (or torch_musa's include_paths()) to the include directories"
#endif
#else
#include_next <cuda_fp8.h>
#endif
