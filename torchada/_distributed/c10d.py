"""torch.distributed on MUSA: backend "nccl" in every spelling means MCCL.

What ``dist.get_backend()`` then answers is :mod:`.backend_name`'s: CUDA's name ("nccl").

A group of a backend that has nothing for the MUSA device (``new_group(backend="gloo")``, a CPU
group) is created while the default group is bound to a device
(``init_process_group(..., device_id=...)``): torch binds the new group to that device too and
asks the group for its backend there, which on CUDA is gloo's CUDA support and on MUSA does not
exist ("No backend type associated with device type musa"). Such a group is created unbound
instead; it serves CPU tensors, as a gloo group does on MUSA anyway.
"""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING, Any, Dict, Iterator

import torch
import torch.distributed as _dist
import torch.distributed.device_mesh as _device_mesh
from torch.distributed import distributed_c10d as _c10d

from .._core.arguments import rewriting
from .._core.torch_features import left_out
from .._devices import rule
from .._devices.rule import musa_device_type

if TYPE_CHECKING:
    from .._core.patcher import Patcher

_init_process_group = _c10d.init_process_group
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
        device = musa_device_type(device.strip())
        name = "mccl" if name.strip().lower() == "nccl" else name
        parts.append(f"{device}:{name}")
    return ",".join(parts)


def translate_device(device: Any) -> Any:
    """``device_id`` of ``init_process_group``: an int or a CUDA device is the musa device of that
    index (the current one when none is given, as torch needs an index there)."""
    if isinstance(device, int) and not isinstance(device, bool):
        return rule.musa(device)
    dev = rule.cuda_to_musa(device)
    if dev is None:
        return device
    return dev if dev.index is not None else rule.musa(torch.musa.current_device())


@functools.wraps(_init_process_group)
def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
    if "device_id" in kwargs and kwargs["device_id"] is not None:
        kwargs["device_id"] = translate_device(kwargs["device_id"])
    return _init_process_group(translate_backend(backend), *args, **kwargs)


def _serves(backend: Any, device_type: str) -> bool:
    try:
        return device_type in _c10d.BackendConfig(backend).get_device_backend_map()
    except (ValueError, RuntimeError, AssertionError):
        return True  # torch judges the backend string itself


@contextlib.contextmanager
def _unbound_unless_served(backend: Any) -> Iterator[None]:
    """Create a group of ``backend`` without the default group's bound device when that backend
    has nothing for the device (see the module docstring)."""
    default = _c10d._world.default_pg if _dist.is_available() else None
    bound = getattr(default, "bound_device_id", None)
    if not isinstance(backend, str) or bound is None or _serves(backend, bound.type):
        yield
        return
    default.bound_device_id = None
    try:
        yield
    finally:
        default.bound_device_id = bound


def _group_factory(original: Any) -> Any:
    """``original`` (a torch function creating groups) with its ``backend`` and ``device_id``
    arguments translated, however they are passed, and the bound-device rule of the module
    docstring applied."""

    def translate(arguments: Dict[str, Any]) -> Any:
        backend = arguments.get("backend")
        if "backend" in arguments:
            arguments["backend"] = backend = translate_backend(backend)
        if arguments.get("device_id") is not None:
            arguments["device_id"] = translate_device(arguments["device_id"])
        return _unbound_unless_served(backend)

    return rewriting(original, translate)


new_group = _group_factory(_c10d.new_group)
new_subgroups = _group_factory(_c10d.new_subgroups)
new_subgroups_by_enumeration = _group_factory(_c10d.new_subgroups_by_enumeration)


#: c10d methods that take a device, as their first argument after ``self`` or by keyword
#: (``allocate_tensor(size, *, dtype, device)``). torch's own NCCL paths pass
#: ``torch.device("cuda")`` to them (``_set_pg_timeout``, ``_add_ephemeral_timeout_for_all_pgs``,
#: ``_get_process_group_uid``), after finding "cuda" among a group's device types (where
#: torchada's device identity finds musa), and CUDA programs pass their own devices.
#: ``_register_backend`` is left alone: torch registers gloo for "cuda" from gloo's own
#: capabilities, and gloo cannot serve musa tensors.
C10D_DEVICE_METHODS = {
    "ProcessGroup": ("_get_backend", "_start_coalescing", "_end_coalescing"),
    "Backend": ("eager_connect_single_device", "supports_tensor_alloc", "allocate_tensor"),
}


def _devices_as_musa(method: Any) -> Any:
    # musa_spec leaves everything but a CUDA device as it is (sizes, dtypes, musa devices).
    @functools.wraps(method)
    def with_cuda_device(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args:
            args = (rule.musa_spec(args[0]),) + args[1:]
        # by keyword: pybind names it device, device_type or arg0
        kwargs = {k: rule.musa_spec(v) for k, v in kwargs.items()}
        return method(self, *args, **kwargs)

    return with_cuda_device


def install(patcher: Patcher) -> None:
    """Make the c10d methods that take a device, and ``ProcessGroup.bound_device_id``, read a
    CUDA device as the musa one, and DeviceMesh's groups get MCCL for "cuda:nccl"; ``patcher``
    undoes it.

    Example::

        >>> import torch.distributed as dist
        >>> dist.group.WORLD._get_backend(torch.device("cuda"))  # on MUSA  # doctest: +SKIP
        <torch.distributed.ProcessGroupMCCL object at 0x...>
    """
    if not _dist.is_available():
        return
    c10d = torch._C._distributed_c10d
    for class_name, methods in C10D_DEVICE_METHODS.items():
        cls = getattr(c10d, class_name)
        for name in methods:
            method = getattr(cls, name, None)
            if method is None:  # torch 2.7 has no supports_tensor_alloc / allocate_tensor
                left_out(f"CUDA devices in {class_name}.{name}", f"{class_name}.{name}")
                continue
            patcher.set_attr(cls, name, _devices_as_musa(method))
    # DeviceMesh creates its groups with the new_group it imported, not dist.new_group: torch 2.7
    # asks it for "cpu:gloo,cuda:nccl" for a 1-D mesh over a gloo world where CUDA is available.
    from .._cuda.redirect import original_module

    mesh_module = original_module("torch.distributed.device_mesh")
    if vars(mesh_module).get("new_group") is _c10d.new_group:
        patcher.set_attr(mesh_module, "new_group", new_group)
    bound = vars(c10d.ProcessGroup)["bound_device_id"]
    patcher.set_attr(
        c10d.ProcessGroup,
        "bound_device_id",
        property(bound.fget, lambda pg, device: bound.fset(pg, rule.musa_spec(device))),
    )


@functools.wraps(_init_device_mesh)
def init_device_mesh(device_type: str, *args: Any, **kwargs: Any) -> Any:
    return _init_device_mesh(musa_device_type(device_type), *args, **kwargs)


def is_nccl_available() -> bool:
    return bool(getattr(_dist, "is_mccl_available", lambda: False)())


def get_original_init_process_group() -> Any:
    """torch's own ``torch.distributed.init_process_group``, as it was before torchada: the
    published torchada's helper for code that must bypass the backend translation. None where
    torchada is not on (nothing was replaced there).

    Example::

        >>> import torchada
        >>> torchada.get_original_init_process_group()  # on MUSA  # doctest: +SKIP
        <function init_process_group at 0x...>
    """
    from .._activation import is_enabled

    return _init_process_group if is_enabled() else None
