"""``torch.nn.parallel.comm`` as torch_musa's build of torch has it, and the C functions behind it.

torch_musa's C module defines ``_broadcast``, ``_broadcast_coalesced``, ``_scatter`` and
``_gather`` (``csrc/core/PythonComm.cpp``), and torch_musa's patch of ``torch/nn/parallel/comm.py``
calls them where stock torch calls ``torch._C``'s CUDA-only ones: that is how ``nn.DataParallel``
runs on musa devices. The patch also names ``_broadcast_out``, ``_scatter_out`` and
``_gather_out`` on ``torch_musa._MUSAC``, which torch_musa does not define: the ``out=`` forms
fail there with AttributeError, and do here too. The simulator runs on an unpatched torch, so the
simulated torch_musa installs the same at import. Device memory is host memory here, so a copy
between devices is ``Tensor.to``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Optional

import torch

from . import support

# torch._C's names in comm.py -> what torch_musa's patched comm.py calls on torch_musa._MUSAC.
_PATCHED = (
    "_broadcast",
    "_broadcast_out",
    "_broadcast_coalesced",
    "_scatter",
    "_scatter_out",
    "_gather",
    "_gather_out",
)
_FUNCTIONS = ("broadcast", "broadcast_coalesced", "scatter", "gather")


def _musa(index: int) -> torch.device:
    return torch.device("musa", index)


def _check_on_device(tensor: torch.Tensor, what: str) -> None:
    if tensor.device.type != "musa":
        raise RuntimeError(f"{what}: expected a MUSA tensor, but got a tensor on {tensor.device}")


def broadcast(tensor: torch.Tensor, devices: Sequence[int]) -> list[torch.Tensor]:
    """``_MUSAC._broadcast``: ``tensor`` on each of ``devices``; its own device gets it itself.
    torch_musa's comm is torch's CUDA comm ported: a CPU source is copied to every device, and a
    device source must be on ``devices[0]``."""
    if tensor.device.type == "musa" and devices and tensor.get_device() != devices[0]:
        raise RuntimeError("device of broadcasted tensor must appear as the first on devices list")
    return [tensor if d == tensor.get_device() else tensor.to(_musa(d)) for d in devices]


def broadcast_coalesced(
    tensors: Sequence[torch.Tensor], devices: Sequence[int], buffer_size: int
) -> list[list[torch.Tensor]]:
    """``_MUSAC._broadcast_coalesced``: the tensors (all on ``devices[0]``) on every device."""
    if not devices:
        raise RuntimeError("broadcast_coalesced: expected at least one device")
    for t in tensors:
        _check_on_device(t, "broadcast_coalesced")
        if t.get_device() != devices[0]:
            raise RuntimeError(
                f"broadcast_coalesced: all tensors must be on devices[0] (musa:{devices[0]}), "
                f"but got one on {t.device}"
            )
    # buffer_size only groups the copies on hardware; the results are the same.
    return [list(tensors)] + [[t.to(_musa(d)) for t in tensors] for d in devices[1:]]


def scatter(
    tensor: torch.Tensor,
    devices: Sequence[int],
    chunk_sizes: Optional[Sequence[int]],
    dim: int,
    streams: Optional[Sequence[object]],
) -> list[torch.Tensor]:
    """``_MUSAC._scatter``: chunks of ``tensor`` along ``dim``, chunk i on ``devices[i]``."""
    if not devices:
        raise RuntimeError("Expected at least one device to scatter to")
    if chunk_sizes is not None:
        if len(chunk_sizes) != len(devices):
            raise RuntimeError(
                "Expected devices and chunk_sizes to be of same length, but got "
                f"len(devices) = {len(devices)} and len(chunk_sizes) = {len(chunk_sizes)}"
            )
        chunks = tensor.split(list(chunk_sizes), dim)
    else:
        chunks = tensor.chunk(len(devices), dim)
    # On hardware each copy is queued on streams[i]; simulated streams run work at once.
    return [chunk.to(_musa(d)) for chunk, d in zip(chunks, devices)]


def gather(
    tensors: Sequence[torch.Tensor], dim: int, destination_index: Optional[int]
) -> torch.Tensor:
    """``_MUSAC._gather``: ``tensors`` concatenated along ``dim`` on the destination (-1: CPU;
    None: the current device)."""
    if not tensors:
        # torch_musa's comm is torch's CUDA comm ported; these words name no device.
        raise RuntimeError("Expected at least one tensor to gather from")
    for t in tensors:
        _check_on_device(t, "gather")
    if destination_index == -1:
        device = torch.device("cpu")
    else:
        index = torch.musa.current_device() if destination_index is None else destination_index
        device = _musa(index)
    return torch.cat([t.to(device) for t in tensors], dim)


class _CommC:
    """``torch._C`` as torch_musa's patched comm.py reaches it: the comm entry points are
    ``torch_musa._MUSAC``'s, everything else is torch's."""

    def __getattr__(self, name: str) -> object:
        if name in _PATCHED:
            found = getattr(sys.modules["torch_musa._MUSAC"], name, None)
            if found is None:
                raise AttributeError(f"module 'torch_musa._MUSAC' has no attribute {name!r}")
            return found
        return getattr(torch._C, name)


class _TorchForComm:
    """The ``torch`` that comm.py's functions see: torch itself, with ``_C`` as above."""

    _C = _CommC()

    def __getattr__(self, name: str) -> object:
        return getattr(torch, name)


def add_entry_points(ext: object) -> None:
    """Give the simulated C module torch_musa's comm entry points."""
    for fn in (broadcast, broadcast_coalesced, scatter, gather):
        setattr(ext, f"_{fn.__name__}", fn)


def install() -> None:
    """Patch ``torch.nn.parallel.comm`` (and ``torch.cuda.comm``, which re-exports it) as
    torch_musa's build of torch has it."""
    import torch.cuda.comm as cuda_comm
    import torch.nn.parallel.comm as comm

    shim = _TorchForComm()
    for name in _FUNCTIONS:
        patched = support.with_globals(getattr(comm, name), torch=shim)
        setattr(comm, name, patched)
        setattr(cuda_comm, name, patched)
