"""The compute capability CUDA code is told on MUSA.

CUDA code reads ``torch.cuda.get_device_capability()`` (or ``get_device_properties().major``) to
decide what the GPU can do: bf16 at 8.0, fp16 at major 7 (DeepSpeed refuses fp16 below it),
grouped GEMM at major 8. torch_musa answers the MUSA architecture (2.2 on an S4000), which every
such gate reads as a pre-Volta GPU. Here those functions answer the CUDA capability whose
features the board has, from ``tables/cuda_capability.json``; ``get_arch_list()`` names those
capabilities (``sm_80``). Where the number picks NVIDIA-only machine code (Triton's NVIDIA target,
torch's TMA gates), the caller is a ``capability`` row of ``tables/nvidia_callers.json`` and gets
MUSA's own numbers; the caller is read from the calling frames as for ``is_available()``.
``TORCHADA_CUDA_CAPABILITY=musa`` keeps MUSA's own numbers everywhere (the published adapter's
answer).
"""

from __future__ import annotations

import functools
import sys
from types import FrameType
from typing import Any, Callable, List, Mapping, Optional, Tuple

from .._core import tables as _tables
from .._core.env import choice
from .._core.warn import warn_once
from .available import nvidia_caller

Capability = Tuple[int, int]
SWITCH = "TORCHADA_CUDA_CAPABILITY"


def answers_for_cuda(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether CUDA code is told the CUDA capability (the default) rather than MUSA's own
    numbers (``TORCHADA_CUDA_CAPABILITY=musa``), in ``environ`` (default: this process's).

    Example::

        >>> answers_for_cuda({"TORCHADA_CUDA_CAPABILITY": "musa"})
        False
        >>> answers_for_cuda({})
        True
    """
    return choice(SWITCH, environ) != "musa"


@functools.lru_cache(maxsize=None)
def cuda_capability(musa: Capability) -> Capability:
    """The CUDA capability of MUSA architecture ``musa`` (torch_musa's ``(major, minor)``):
    its row of ``tables/cuda_capability.json``, or the newest row below it (torch_musa's own
    gates treat a newer architecture as having the older one's features). Older than every row:
    MUSA's own numbers, said once.

    Example::

        >>> cuda_capability((2, 2))
        (8, 0)
        >>> cuda_capability((3, 1))
        (9, 0)
    """
    musa = (int(musa[0]), int(musa[1]))
    below = [row for row in _tables.load("cuda_capability").architectures if row.musa <= musa]
    if not below:
        warn_once(
            f"cuda-capability:{musa}",
            f"MUSA architecture {musa[0]}.{musa[1]} is older than every row of "
            "torchada/tables/cuda_capability.json: CUDA code is told MUSA's own capability "
            f"{musa[0]}.{musa[1]}, which its gates read as a pre-Volta GPU",
        )
        return musa
    return below[-1].cuda


def cuda_arch_list(musa_arches: List[str]) -> List[str]:
    """torch_musa's architecture list (``["21", "22"]``) as CUDA's (``["sm_70", "sm_80"]``),
    each by :func:`cuda_capability`; an entry that is not a MUSA architecture stays as it is.

    Example::

        >>> cuda_arch_list(["21", "22", "31"])
        ['sm_70', 'sm_80', 'sm_90']
    """
    out: List[str] = []
    for arch in musa_arches:
        text = str(arch)
        name = text
        if text.isdigit() and len(text) >= 2:
            major, minor = cuda_capability((int(text[:-1]), int(text[-1])))
            name = f"sm_{major}{minor}"
        if name not in out:
            out.append(name)
    return out


def _asks_for_musa(frame: Optional[FrameType]) -> bool:
    # torchada's own frames (the device-argument wrapper, the usage record) are not the caller.
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("torchada."):
        frame = frame.f_back
    return nvidia_caller(frame, "capability") is not None


class CudaDeviceProperties:
    """torch_musa's device properties, with ``major``/``minor`` the CUDA capability; every other
    field is torch_musa's.

    Example::

        >>> import torch, torchada  # doctest: +SKIP
        >>> p = torch.cuda.get_device_properties(0)  # on an MTT S4000  # doctest: +SKIP
        >>> (p.name, p.major, p.minor)  # doctest: +SKIP
        ('MTT S4000', 8, 0)
    """

    __slots__ = ("_musa", "major", "minor")

    def __init__(self, musa: Any, capability: Capability) -> None:
        self._musa = musa
        self.major, self.minor = capability

    def __getattr__(self, name: str) -> Any:
        if name == "_musa":  # not set yet (copy.copy makes the object without __init__)
            raise AttributeError(name)
        return getattr(self._musa, name)

    def __dir__(self) -> List[str]:
        return sorted(set(dir(self._musa)) | {"major", "minor"})

    def __repr__(self) -> str:
        p = self._musa
        return (
            f"_CudaDeviceProperties(name='{p.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={p.total_memory // (1024 * 1024)}MB, "
            f"multi_processor_count={p.multi_processor_count})"
        )


def _served(name: str, answer: Callable[[Any], Any]) -> Callable:
    """torch.cuda's ``name`` over torch_musa's: its result through ``answer``, except inside the
    ``capability`` callers of nvidia_callers.json (and with TORCHADA_CUDA_CAPABILITY=musa)."""
    import torch_musa

    from .redirect import original_module

    musa_function = getattr(torch_musa, name)
    if not answers_for_cuda():
        return musa_function
    getframe = sys._getframe
    wraps = functools.wraps(getattr(original_module("torch.cuda"), name))

    if name == "get_arch_list":

        def served() -> Any:
            result = musa_function()
            return result if _asks_for_musa(getframe(1)) else answer(result)

    else:  # torch.cuda lets the device be left out; torch_musa's get_device_properties not

        def served(device: Any = None) -> Any:  # type: ignore[misc]
            result = musa_function(device)
            return result if _asks_for_musa(getframe(1)) else answer(result)

    served = wraps(served)
    served.__torchada_musa__ = musa_function  # type: ignore[attr-defined]
    return served


def served_get_device_capability() -> Callable:
    """``torch.cuda.get_device_capability`` as torchada serves it (its row in torch_cuda.json).

    Example::

        >>> import torch, torchada  # doctest: +SKIP
        >>> torch.cuda.get_device_capability()  # on an MTT S4000  # doctest: +SKIP
        (8, 0)
    """
    return _served("get_device_capability", cuda_capability)


def served_get_device_properties() -> Callable:
    """``torch.cuda.get_device_properties``: :class:`CudaDeviceProperties` over torch_musa's.

    Example::

        >>> import torch, torchada  # doctest: +SKIP
        >>> torch.cuda.get_device_properties(0).major  # on an MTT S4000  # doctest: +SKIP
        8
    """

    def view(props: Any) -> CudaDeviceProperties:
        return CudaDeviceProperties(props, cuda_capability((props.major, props.minor)))

    return _served("get_device_properties", view)


def served_get_arch_list() -> Callable:
    """``torch.cuda.get_arch_list``: the CUDA names of torch_musa's architectures.

    Example::

        >>> import torch, torchada  # doctest: +SKIP
        >>> torch.cuda.get_arch_list()  # doctest: +SKIP
        ['sm_70', 'sm_80', 'sm_90']
    """
    return _served("get_arch_list", cuda_arch_list)
