"""ATen kernels that torch_musa lacks or gets wrong, served in Python on the MUSA key.

``torch.mm``/``torch.bmm`` with ``out_dtype=`` (``aten::mm.dtype``, ``aten::bmm.dtype`` and their
``out=`` forms) have no MUSA kernel in torch_musa 2.7.1, so CUDA code that asks for fp32 results
from fp16/bf16 matrices stops with NotImplementedError. From 2.9.1 torch_musa registers them, wrong:
``mm`` returns zeros and ``bmm`` the output buffer as it was allocated (``Matmul.cpp``). Releases
listed with ``mm_out_dtype`` in ``torchada/tables/torch_musa_releases.json`` get torchada's kernels
in place of theirs; any other release's own kernel is left alone (and costs nothing). The fill
follows CUDA's contract: ``out_dtype`` equal to the inputs' dtype is the plain product; fp16/bf16
inputs with ``out_dtype=torch.float32`` are multiplied with fp32 accumulation (inputs widened to
fp32, exactly representable) and the result is fp32; anything else is refused as CUDA refuses
it. A kernel that torch_musa itself registers is left alone unless its release has the defect.
The kernels call the plain products, so they work inside CUDA-graph capture as outside it.
"""

from __future__ import annotations

import inspect
import logging
import warnings
from typing import TYPE_CHECKING, Callable, Optional

import torch

from .._core.musa_release import has_defect, release
from .._core.torch_features import has_operator, left_out

if TYPE_CHECKING:
    from .._core.patcher import Patcher

logger = logging.getLogger("torchada")

_KEY = "PrivateUse1"
_WIDENED = (torch.float16, torch.bfloat16)


def _check(op: str, a: torch.Tensor, out_dtype: torch.dtype) -> bool:
    """Whether the product must be widened; raises for what CUDA refuses."""
    if out_dtype == a.dtype:
        return False
    if out_dtype == torch.float32 and a.dtype in _WIDENED:
        return True
    raise RuntimeError(
        f"torch.{op}(..., out_dtype={out_dtype}) with {a.dtype} inputs: out_dtype must be the "
        "inputs' dtype, or torch.float32 for float16/bfloat16 inputs (as on CUDA)"
    )


def _product(op: str, plain: Callable) -> Callable:
    def with_dtype(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
        if _check(op, a, out_dtype):
            return plain(a.to(torch.float32), b.to(torch.float32))
        return plain(a, b)

    def with_dtype_out(
        a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype, *, out: torch.Tensor
    ) -> torch.Tensor:
        if out.dtype != out_dtype:
            raise RuntimeError(
                f"torch.{op}(..., out_dtype={out_dtype}, out=...): out has dtype {out.dtype}; "
                f"give an out tensor of dtype {out_dtype}"
            )
        result = with_dtype(a, b, out_dtype)
        out.resize_(result.shape)
        return out.copy_(result)

    return with_dtype, with_dtype_out


def _has_kernel(name: str) -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(name, _KEY)


def install(patcher: Patcher) -> Optional[torch.library.Library]:
    """Register the fills missing on the MUSA key; ``patcher`` undoes them."""
    missing = []
    defective = has_defect("mm_out_dtype")
    for op in ("mm", "bmm"):
        for overload in ("dtype", "dtype_out"):
            name = f"aten::{op}.{overload}"
            if not has_operator(name):  # torch 2.7: no out_dtype, on CUDA either
                left_out(f"torch.{op} out_dtype fill", name)
            elif defective or not _has_kernel(name):
                missing.append((op, overload))
    if not missing:
        return None
    library = torch.library.Library("aten", "IMPL")
    # A release whose defective kernel came from Python (torch.library) is replaced too: torch
    # refuses a second Python kernel for the same key unless told to override (torch 2.8+).
    takes = "allow_override" in inspect.signature(library.impl).parameters
    override = {"allow_override": True} if takes else {}
    kernels = {op: _product(op, getattr(torch, op)) for op in ("mm", "bmm")}
    with warnings.catch_warnings():
        # "Overriding a previously registered kernel": replacing the defective one is the point.
        warnings.filterwarnings("ignore", message="(?s).*previously registered kernel")
        for op, overload in missing:
            library.impl(f"{op}.{overload}", kernels[op][overload == "dtype_out"], _KEY, **override)
    patcher.on_undo(library._destroy)
    what = ", ".join(f"{o}.{v}" for o, v in missing)
    if defective:
        logger.info(
            "torchada: torch_musa %s computes mm/bmm with out_dtype wrong; torchada serves %s",
            release(),
            what,
        )
    else:
        logger.debug("torchada: filled %s on MUSA", what)
    return library
