// cuda_fp16.h, from torchada's stable-ABI kit (stable_compat_include_dir()).
// With the MUSA SDK's <musa_fp16.h> on the include path: that header, and the CUDA names a
// CUDA-written header uses spelled as MUSA's (the same renames as torchada's porter).
// Without it: the next <cuda_fp16.h> on the include path (CUDA's own): a CUDA build is unchanged.
#pragma once
#if __has_include(<musa_fp16.h>)
#include <musa_fp16.h>
#elif defined(__has_include_next)
#if __has_include_next(<cuda_fp16.h>)
#include_next <cuda_fp16.h>
#else
#error "cuda_fp16.h (torchada's stable-ABI kit): neither the MUSA SDK's musa_fp16.h nor CUDA's cuda_fp16.h is on the include path; add $MUSA_HOME/include (or torch_musa's include_paths()) to the include directories"
#endif
#else
#include_next <cuda_fp16.h>
#endif
