"""torch_musa's own ``mm``/``bmm`` kernels with an ``out_dtype`` (csrc/aten/ops/Matmul.cpp of
2.9.1.post1, carried unchanged into 2.11.0.post2), defects included, registered for the musa
device where the release has them (``mm_out_dtype_defect`` in releases.json):

- ``mm.dtype`` / ``mm.dtype_out`` check the dtypes, then run the matmul with alpha 0 and beta 1
  and no bias, where only alpha counts: the result is all zeros;
- ``bmm.dtype`` / ``bmm.dtype_out`` pass beta and alpha in swapped order (0·A@B + 1·out): the
  result is the output buffer as it was, uninitialised memory for ``bmm.dtype``.
"""

from __future__ import annotations

from typing import Optional

import torch

_library: Optional["torch.library.Library"] = None


def _mm_check(a: torch.Tensor, b: torch.Tensor) -> None:
    # MmCheck of Matmul.cpp.
    if a.dtype != b.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, got {a.dtype} and {b.dtype}")
    if not ((a.dim() == 2 and b.dim() in (1, 2)) or (a.dim() == 3 and b.dim() == 3)):
        raise RuntimeError(
            f"mat1 and mat2 must be 2D x (2D or 1D), or 3D x 3D, got {a.dim()}D and {b.dim()}D"
        )
    if a.dim() == 2 and a.size(1) != b.size(0):
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied: ({a.size(0)}, {a.size(1)}) and "
            f"({b.size(0)}, ...)"
        )
    if a.dim() == 3:
        if a.size(0) != b.size(0):
            raise RuntimeError(
                f"batch dimensions must match for bmm, got {a.size(0)} and {b.size(0)}"
            )
        if a.size(2) != b.size(1):
            raise RuntimeError(
                "mat1 and mat2 shapes cannot be multiplied for bmm: "
                f"({a.size(0)}, {a.size(1)}, {a.size(2)}) and "
                f"({b.size(0)}, {b.size(1)}, {b.size(2)})"
            )


def _mm_dtype_out(self, mat2, out_dtype, out):
    if out_dtype != out.dtype:
        raise RuntimeError("out_dtype must be the same as the dtype of the provided out tensor")
    if not (
        out_dtype == self.dtype
        or (out_dtype == torch.float32 and self.dtype in (torch.float16, torch.bfloat16))
    ):
        raise RuntimeError("out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs")
    _mm_check(self, mat2)
    out.zero_()  # alpha 0: 0 * (self @ mat2)
    return out


def _mm_dtype(self, mat2, out_dtype):
    out = torch.empty((self.size(0), mat2.size(1)), dtype=out_dtype, device=self.device)
    return _mm_dtype_out(self, mat2, out_dtype, out)


def _bmm_dtype_out(self, mat2, out_dtype, out):
    _mm_check(self, mat2)
    if self.numel() == 0 or mat2.numel() == 0:
        out.zero_()
    return out  # 0 * (self @ mat2) + 1 * out


def _bmm_dtype(self, mat2, out_dtype):
    out = torch.empty(
        (self.size(0), self.size(1), mat2.size(2)), dtype=out_dtype, device=self.device
    )
    return _bmm_dtype_out(self, mat2, out_dtype, out)


def register(facts: dict) -> bool:
    """Register the release's ``out_dtype`` matmul kernels for PrivateUse1 where it has the
    defect and torch has the overloads (``aten::mm.dtype`` & co.); returns whether it did.

    Example::

        >>> register({"mm_out_dtype_defect": False})
        False
    """
    global _library
    if not facts["mm_out_dtype_defect"] or _library is not None:
        return False
    if not hasattr(torch.ops.aten.mm, "dtype") or not hasattr(torch.ops.aten.bmm, "dtype"):
        return False
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("mm.dtype", _mm_dtype, "PrivateUse1")
    lib.impl("mm.dtype_out", _mm_dtype_out, "PrivateUse1")
    lib.impl("bmm.dtype", _bmm_dtype, "PrivateUse1")
    lib.impl("bmm.dtype_out", _bmm_dtype_out, "PrivateUse1")
    _library = lib
    return True
