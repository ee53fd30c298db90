"""Where the stable-ABI kit is: ``stable_include/``, headers written from the CUDA and MUSA APIs.

- ``cuda_runtime.h``, ``cuda_fp16.h``, ``cuda_bf16.h``, ``cuda_fp8.h``, ``cublas_v2.h``: include
  the MUSA SDK's header and give the CUDA names a CUDA-written header (one the porter does not
  reach: a third party's, a system one) uses; with no MUSA header found they are the next header
  of that name on the include path, so a CUDA build is unchanged.
- ``torch/csrc/stable/tensor.h``: torch's own where the installed torch has it
  (``#include_next``); on torches before 2.8, a ``torch::stable::Tensor`` over the C shim.
- ``torchada_stable_box.h``, to force-include: torch's ``torch/csrc/stable/library.h`` plus
  ``TORCH_BOX`` where that torch lacks it, and ``CUDA_VERSION`` 0 in a MUSA build that did not
  define it.

Every header that shares a name with one of torch's defers to torch's, so the directory may come
first on the include path without hiding a newer torch's header. Nothing is ever written into the
installed torch.
"""

from __future__ import annotations

import os

_HERE = os.path.dirname(os.path.abspath(__file__))
BOX_HEADER = "torchada_stable_box.h"


def include_dir() -> str:
    """The kit's include directory."""
    return os.path.join(_HERE, "stable_include")


def box_header() -> str:
    """The header to force-include in stable-ABI sources."""
    return os.path.join(include_dir(), BOX_HEADER)
