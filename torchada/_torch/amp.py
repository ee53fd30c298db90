"""Automatic mixed precision on MUSA: the device type "cuda" means the musa device.

``torch.autocast("cuda")`` (as a context manager or a decorator), ``torch.amp.autocast``,
``torch.amp.GradScaler("cuda")`` (and its default device), ``torch.amp.custom_fwd/custom_bwd
(device_type="cuda")``, ``torch.is_autocast_enabled("cuda")``, ``torch.get/set_autocast_dtype``,
``torch.set_autocast_enabled("cuda", ...)``, ``torch.amp.is_autocast_available("cuda")`` and the
deprecated ``torch.get/set_autocast_gpu_dtype`` act on the musa autocast state, so matmuls on musa
tensors run in float16/bfloat16 and the scaler's tensors live on musa. ``torch.cuda.amp`` is
``torch.musa.amp`` already (the registry).

Without this, a PyTorch built without CUDA warns "CUDA is not available" and disables autocast,
and a "cuda" autocast would not touch musa tensors anyway (they dispatch to AutocastPrivateUse1).

The autocast object reports what it really controls: ``torch.autocast("cuda").device == "musa"``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Dict

import torch

from .._core.arguments import rewriting
from .._devices.rule import musa_device_type

if TYPE_CHECKING:
    from .._core.patcher import Patcher


def _wrap_device_first(fn: Callable) -> Callable:
    """Wraps ``fn(device_type, ...)`` so that "cuda" is read as musa; other calls pass through."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if args:
            args = (musa_device_type(args[0]),) + args[1:]
        elif "device_type" in kwargs:
            kwargs["device_type"] = musa_device_type(kwargs["device_type"])
        return fn(*args, **kwargs)

    return wrapper


def _patch_autocast(patcher: Any) -> None:
    cls = torch.amp.autocast_mode.autocast
    original = cls.__init__

    # The class keeps its identity (isinstance, torch_musa's subclass, dynamo's checks): only
    # the device type is read differently. The signature stays torch's for dynamo's binding.
    @functools.wraps(original)
    def __init__(self: Any, device_type: str, *args: Any, **kwargs: Any) -> None:
        original(self, musa_device_type(device_type), *args, **kwargs)

    patcher.set_attr(cls, "__init__", __init__)


def _patch_grad_scaler(patcher: Any) -> None:
    cls = torch.amp.grad_scaler.GradScaler

    # The device defaults to "cuda" in torch: GradScaler() means the musa device too.
    def read_device_as_musa(arguments: Dict[str, Any]) -> None:
        arguments["device"] = musa_device_type(arguments["device"])

    patcher.set_attr(cls, "__init__", rewriting(cls.__init__, read_device_as_musa, defaults=True))


def _patch_custom_fwd_bwd(patcher: Any) -> None:
    mode = torch.amp.autocast_mode
    original_fwd = mode.custom_fwd
    original_bwd = mode.custom_bwd

    # torch's _cast compares tensors' device.type with device_type: it must be "musa" to cast.
    @functools.wraps(original_fwd)
    def custom_fwd(fwd: Any = None, *, device_type: str, cast_inputs: Any = None) -> Any:
        return original_fwd(fwd, device_type=musa_device_type(device_type), cast_inputs=cast_inputs)

    @functools.wraps(original_bwd)
    def custom_bwd(bwd: Any = None, *, device_type: str) -> Any:
        return original_bwd(bwd, device_type=musa_device_type(device_type))

    for module in (torch.amp, mode):
        patcher.set_attr(module, "custom_fwd", custom_fwd)
        patcher.set_attr(module, "custom_bwd", custom_bwd)

    # Functions decorated before torchada was enabled hold "cuda": their casts go through the
    # module's _cast, read at call time (their autocast state queries are translated anyway).
    original_cast = mode._cast

    @functools.wraps(original_cast)
    def _cast(value: Any, device_type: str, dtype: torch.dtype) -> Any:
        return original_cast(value, musa_device_type(device_type), dtype)

    patcher.set_attr(mode, "_cast", _cast)


def _patch_state_functions(patcher: Any) -> None:
    # Functions taking the device type first. torch_musa already wraps is_autocast_enabled and
    # set_autocast_enabled (no-argument forms mean musa); these wrap whatever is there.
    for name in (
        "is_autocast_enabled",
        "set_autocast_enabled",
        "get_autocast_dtype",
        "set_autocast_dtype",
    ):
        patcher.set_attr(torch, name, _wrap_device_first(getattr(torch, name)))
    for module in (torch.amp, torch.amp.autocast_mode):
        patcher.set_attr(
            module, "is_autocast_available", _wrap_device_first(module.is_autocast_available)
        )

    backend = torch._C._get_privateuse1_backend_name()

    # The deprecated "gpu" forms name CUDA's state: on MUSA, musa's.
    def get_autocast_gpu_dtype() -> torch.dtype:
        return torch.get_autocast_dtype(backend)

    def set_autocast_gpu_dtype(dtype: torch.dtype) -> None:
        torch.set_autocast_dtype(backend, dtype)

    patcher.set_attr(torch, "get_autocast_gpu_dtype", get_autocast_gpu_dtype)
    patcher.set_attr(torch, "set_autocast_gpu_dtype", set_autocast_gpu_dtype)


def install(patcher: Patcher) -> None:
    _patch_autocast(patcher)
    _patch_grad_scaler(patcher)
    _patch_custom_fwd_bwd(patcher)
    _patch_state_functions(patcher)
