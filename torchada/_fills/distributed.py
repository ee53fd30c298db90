"""torch.distributed on MUSA: backend "nccl" in every spelling means MCCL.

``dist.get_backend()`` reports the truth ("mccl"), as ``device.type`` reports "musa": code that
compares it with "nccl" should use :func:`torchada.is_nccl_backend` or accept both.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import torch.distributed as _dist
import torch.distributed.device_mesh as _device_mesh
from torch.distributed import distributed_c10d as _c10d

_init_process_group = _c10d.init_process_group
_new_group = _c10d.new_group
_new_subgroups = _c10d.new_subgroups
_init_device_mesh = _device_mesh.init_device_mesh


def translate_backend(backend: Any) -> Any:
    """``"nccl"`` -> ``"mccl"``; ``"cpu:gloo,cuda:nccl"`` -> ``"cpu:gloo,musa:mccl"``."""
    if not isinstance(backend, str):
        return backend
    if ":" not in backend:
        return "mccl" if backend.lower() == "nccl" else backend
    parts = []
    for item in backend.split(","):
        device, _, name = item.partition(":")
        device = "musa" if device.strip().lower() == "cuda" else device
        name = "mccl" if name.strip().lower() == "nccl" else name
        parts.append(f"{device}:{name}")
    return ",".join(parts)


def translate_device(device: Any) -> Any:
    if isinstance(device, int) and not isinstance(device, bool):
        return torch.device("musa", device)
    if isinstance(device, str) and device.split(":")[0] == "cuda":
        device = torch.device(device)
    if isinstance(device, torch.device) and device.type == "cuda":
        return (
            torch.device("musa", device.index)
            if device.index is not None
            else torch.device("musa", torch.musa.current_device())
        )
    return device


@functools.wraps(_init_process_group)
def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
    if "device_id" in kwargs and kwargs["device_id"] is not None:
        kwargs["device_id"] = translate_device(kwargs["device_id"])
    return _init_process_group(translate_backend(backend), *args, **kwargs)


@functools.wraps(_new_group)
def new_group(*args: Any, **kwargs: Any) -> Any:
    if "backend" in kwargs:
        kwargs["backend"] = translate_backend(kwargs["backend"])
    elif len(args) >= 3:
        args = (*args[:2], translate_backend(args[2]), *args[3:])
    return _new_group(*args, **kwargs)


@functools.wraps(_new_subgroups)
def new_subgroups(*args: Any, **kwargs: Any) -> Any:
    if "backend" in kwargs:
        kwargs["backend"] = translate_backend(kwargs["backend"])
    elif len(args) >= 3:
        args = (*args[:2], translate_backend(args[2]), *args[3:])
    return _new_subgroups(*args, **kwargs)


@functools.wraps(_init_device_mesh)
def init_device_mesh(device_type: str, *args: Any, **kwargs: Any) -> Any:
    if isinstance(device_type, str) and device_type.lower() == "cuda":
        device_type = "musa"
    return _init_device_mesh(device_type, *args, **kwargs)


def is_nccl_available() -> bool:
    return bool(getattr(_dist, "is_mccl_available", lambda: False)())


def is_nccl_backend(name: Any) -> bool:
    """True for "nccl" and for what it becomes on MUSA ("mccl")."""
    return str(name).lower() in ("nccl", "mccl")


def install(patcher: Any) -> None:
    """Make device "cuda" default to MCCL wherever torch picks a backend by device type."""
    mapping = _dist.Backend.default_device_backend_map
    old = mapping.get("cuda")
    mapping["cuda"] = "mccl"

    def restore() -> None:
        if old is None:
            mapping.pop("cuda", None)
        else:
            mapping["cuda"] = old

    patcher.on_undo(restore)
