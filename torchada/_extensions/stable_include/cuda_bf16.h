// cuda_bf16.h, from torchada's stable-ABI kit (stable_compat_include_dir()).
// With the MUSA SDK's <musa_bf16.h> on the include path: that header, and the CUDA names a
// CUDA-written header uses spelled as MUSA's (the same renames as torchada's porter).
// Without it: the next <cuda_bf16.h> on the include path (CUDA's own): a CUDA build is unchanged.
#pragma once
#if __has_include(<musa_bf16.h>)
#include <musa_bf16.h>
#ifndef __nv_bfloat16
#define __nv_bfloat16 __mt_bfloat16
#endif
#ifndef __nv_bfloat162
#define __nv_bfloat162 __mt_bfloat162
#endif
#ifndef __nv_bfloat16_raw
#define __nv_bfloat16_raw __mt_bfloat16_raw
#endif
#ifndef __nv_bfloat162_raw
#define __nv_bfloat162_raw __mt_bfloat162_raw
#endif
#ifndef nv_bfloat16
#define nv_bfloat16 mt_bfloat16
#endif
#ifndef nv_bfloat162
#define nv_bfloat162 mt_bfloat162
#endif
#elif defined(__has_include_next)
#if __has_include_next(<cuda_bf16.h>)
#include_next <cuda_bf16.h>
#else
#error "cuda_bf16.h (torchada's stable-ABI kit): neither the MUSA SDK's musa_bf16.h nor CUDA's cuda_bf16.h is on the include path; add $MUSA_HOME/include (or torch_musa's include_paths()) to the include directories"
#endif
#else
#include_next <cuda_bf16.h>
#endif
