"""``fully_shard`` (FSDP2) on a mesh that is not MUSA takes PyTorch's own path.

torch_musa replaces ``torch.distributed.fsdp.fully_shard`` with a wrapper
(``torch_musa/distributed/_composable/fsdp/patch.py``, ``functools.wraps`` over torch's function)
whose first call queries the MUSA architecture and then replaces FSDP2's internals process-wide:
``FSDPCommContext.lazy_init`` (2.7.1: "FSDP requires MUSA for streams" without MUSA; 2.11.0.post2:
MUSA streams whatever the device), ``FSDPParamGroup.wait_for_unshard`` and ``post_backward``;
up to 2.9.1.post1 also ``FSDPState._init_shared_state`` (which calls ``lazy_init()`` without the
state's device) and ``FSDPState._pre_forward``. None of that is keyed on the mesh, so a CPU/gloo
mesh (tests, CPU offload set-ups) breaks.

Where the installed torch_musa has such a wrapper, torchada puts a dispatcher in its place:
a mesh whose device type is the MUSA backend goes to torch_musa's wrapper; any other mesh to
torch's own ``fully_shard``. After torch_musa's internals are in place, the methods it replaced
answer as torch's own for a non-MUSA device (torchada keeps torch's methods from before the first
call). Without a wrapper (a torch_musa that leaves ``fully_shard`` alone) torchada installs
nothing.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple

import torch

if TYPE_CHECKING:
    from .._core.patcher import Patcher

logger = logging.getLogger("torchada")

# torch's FSDP2 methods torch_musa replaces at its first fully_shard call, and how each finds
# the device it runs for: (module, class, method).
_REPLACED: Tuple[Tuple[str, str, str], ...] = (
    ("torch.distributed.fsdp._fully_shard._fsdp_param_group", "FSDPCommContext", "lazy_init"),
    ("torch.distributed.fsdp._fully_shard._fsdp_param_group", "FSDPParamGroup", "wait_for_unshard"),
    ("torch.distributed.fsdp._fully_shard._fsdp_param_group", "FSDPParamGroup", "post_backward"),
    # Up to 2.9.1.post1: its _init_shared_state calls lazy_init() with no device, so a CPU state
    # must not reach it (lazy_init alone cannot tell that state's device).
    ("torch.distributed.fsdp._fully_shard._fsdp_state", "FSDPState", "_init_shared_state"),
    ("torch.distributed.fsdp._fully_shard._fsdp_state", "FSDPState", "_pre_forward"),
)


def musa_wrapper() -> Optional[Tuple[Callable, Callable]]:
    """(torch_musa's fully_shard wrapper, torch's own fully_shard) where the installed
    torch_musa wraps it, else None.

    Example::

        >>> musa_wrapper() is None  # doctest: +SKIP
        False
    """
    if _installed:
        return _installed[0]
    fsdp = _fsdp()
    if fsdp is None:
        return None
    current = getattr(fsdp, "fully_shard", None)
    own = getattr(current, "__wrapped__", None)
    code = getattr(current, "__code__", None)
    if own is None or code is None or "torch_musa" not in code.co_filename:
        return None
    return current, own


def _fsdp() -> Any:
    # torch_musa wraps fully_shard while it imports, so a wrapper exists only where the module
    # is loaded already: importing it here would load FSDP2 (and its torch.ops namespaces) into
    # every program for nothing.
    return sys.modules.get("torch.distributed.fsdp")


def _is_musa(device: Any) -> bool:
    backend = torch._C._get_privateuse1_backend_name()
    kind = getattr(device, "type", device)
    return kind == backend


def _mesh_device_type(args: Tuple[Any, ...], kwargs: Dict[str, Any], signature: Any) -> Any:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None  # let the real function report the bad call
    mesh = bound.arguments.get("mesh")
    return None if mesh is None else mesh.device_type


def _dispatcher(musa_fully_shard: Callable, own: Callable) -> Callable:
    signature = inspect.signature(own)

    @functools.wraps(own)
    def fully_shard(*args: Any, **kwargs: Any) -> Any:
        kind = _mesh_device_type(args, kwargs, signature)
        # No mesh: torch makes one for the current accelerator, which is MUSA here.
        if kind is None or _is_musa(kind):
            result = musa_fully_shard(*args, **kwargs)
            _guard_replaced()
            return result
        return own(*args, **kwargs)

    return fully_shard


# torch's methods as they were before torch_musa's first call: (class, name) -> function.
_torch_methods: Dict[Tuple[Any, str], Callable] = {}
_patcher: Optional["Patcher"] = None
_installed: list = []  # the (wrapper, torch's own) torchada routes around, while it does


def _device_of(name: str, self: Any, args: Tuple[Any, ...]) -> Any:
    if name == "lazy_init":
        return args[0] if args else None  # torch_musa's: (self, device) from 2.11; 2.7: (self)
    if name in ("_init_shared_state", "_pre_forward"):
        return getattr(self, "_device", None)  # an FSDPState
    return getattr(self, "device", None)


def _guard_replaced() -> None:
    """After torch_musa's internals are in place: its methods serve MUSA devices only."""
    if _patcher is None:
        return
    for (cls, name), torch_method in _torch_methods.items():
        current = cls.__dict__.get(name)
        if current is torch_method or getattr(current, "_torchada_guard", False):
            continue

        def guarded(
            self: Any,
            *args: Any,
            _musa: Any = current,
            _torch: Any = torch_method,
            _name: str = name,
            **kwargs: Any,
        ) -> Any:
            device = _device_of(_name, self, args)
            chosen = _torch if device is not None and not _is_musa(device) else _musa
            return chosen(self, *args, **kwargs)

        guarded._torchada_guard = True  # type: ignore[attr-defined]
        functools.update_wrapper(guarded, torch_method)
        _patcher.set_attr(cls, name, guarded)
        logger.debug("torchada: %s.%s serves non-MUSA devices as torch's", cls.__name__, name)


def install(patcher: "Patcher") -> None:
    """Route non-MUSA meshes around torch_musa's ``fully_shard`` wrapper, where it has one.

    Example::

        >>> from torchada._core.patcher import Patcher
        >>> install(Patcher())  # doctest: +SKIP
    """
    global _patcher
    found = musa_wrapper()
    if found is None:
        return
    musa_fully_shard, own = found
    import importlib

    _torch_methods.clear()
    for module_name, cls_name, name in _REPLACED:
        try:
            cls = getattr(importlib.import_module(module_name), cls_name)
        except (ImportError, AttributeError):
            continue
        if name in cls.__dict__:
            _torch_methods[(cls, name)] = cls.__dict__[name]
    _patcher = patcher
    _installed[:] = [found]
    patcher.on_undo(_torch_methods.clear)
    patcher.on_undo(_installed.clear)
    fsdp = _fsdp()
    patcher.set_attr(fsdp, "fully_shard", _dispatcher(musa_fully_shard, own))
    logger.debug("torchada: fully_shard on a non-MUSA mesh takes torch's own path")


__all__ = ["install", "musa_wrapper"]
