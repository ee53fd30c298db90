"""The one device rule: a CUDA device spec (``"cuda[:N]"``, ``torch.device("cuda"[, N])``) names
the musa device of the same index; anything else is left to torch. Every subsystem that reads a
device reads it here (the names without a leading underscore are this package's API);
:func:`torchada._devices.install.install` sets the device type at activation."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

import torch

_Device = torch.device
_MISS = object()
_STR_CACHE_LIMIT = 256
_str_cache: Dict[str, Any] = {}  # spec -> musa torch.device, or None for "not a cuda spec"
_by_index: Dict[Optional[int], Any] = {}
_device_type = "musa"  # torch's name of the PrivateUse1 device, set by use_device_type()


def device_type() -> str:
    """The device type CUDA devices are read as: torch_musa's PrivateUse1 device, ``"musa"``."""
    return _device_type


def use_device_type(name: str) -> None:
    """Read CUDA devices as ``name`` devices from now on (forgets the devices made so far)."""
    global _device_type
    _device_type = name
    _by_index.clear()
    _str_cache.clear()


def musa(index: Optional[int]) -> Any:
    dev = _by_index.get(index)
    if dev is None:
        dev = torch.device(_device_type, index) if index is not None else torch.device(_device_type)
        _by_index[index] = dev
    return dev


def cuda_to_musa(spec: Any) -> Any:
    """The musa device a CUDA device spec names; None when ``spec`` is not one (ints, None, "cpu",
    musa devices, junk). A malformed ``"cuda:..."`` raises torch's own error, naming the string."""
    if spec.__class__ is _Device:
        return musa(spec.index) if spec.type == "cuda" else None
    if not isinstance(spec, str):
        return None
    hit = _str_cache.get(spec, _MISS)
    if hit is not _MISS:
        return hit
    result = None
    if spec[:4] == "cuda" and (len(spec) == 4 or spec[4] == ":"):
        torch.device(str(spec))  # torch's parser: its errors name what the user wrote
        # The very device torch makes of the musa spelling, index quirks included.
        result = torch.device(_device_type + spec[4:])
    if len(_str_cache) < _STR_CACHE_LIMIT:
        _str_cache[str(spec)] = result
    return result


def musa_spec(spec: Any) -> Any:
    """``spec`` with a CUDA device (string or ``torch.device``) read as the musa one; anything
    else (ints, None, musa or CPU devices, junk) unchanged, for the callee to judge.

    Example::

        >>> musa_spec("cuda:1"), musa_spec(1)  # doctest: +SKIP
        (device(type='musa', index=1), 1)
    """
    dev = cuda_to_musa(spec)
    return spec if dev is None else dev


def musa_device_type(device_type: Any) -> Any:
    """For APIs that take a device *type* (autocast, ``init_device_mesh``, profilers, the device
    part of ``"cuda:nccl"``): ``"cuda"`` is the MUSA backend's name; anything else is unchanged.

    Example::

        >>> musa_device_type("cuda"), musa_device_type("cpu")  # doctest: +SKIP
        ('musa', 'cpu')
    """
    if device_type == "cuda" and isinstance(device_type, str):
        return _device_type
    return device_type


def translate_device(spec: Any) -> Any:
    """``torch.device`` for ``spec``, with ``cuda[:N]`` read as ``musa[:N]``.

    Anything else is parsed by ``torch.device`` unchanged, so it raises what torch raises.
    """
    if isinstance(spec, (torch.device, str)):
        dev = cuda_to_musa(spec)
        if dev is not None:
            return dev
    return torch.device(spec)


def device_note(user: Any, dev: Any) -> str:
    return f"torchada: device '{user}' runs on MUSA as '{dev}'"


def add_device_context(err: BaseException, user: Any, dev: Any) -> None:
    # Same text as the native path: the backend's error, then the device the user asked for.
    note = device_note(user, dev)
    if err.args and isinstance(err.args[0], str) and note not in err.args[0]:
        err.args = (f"{err.args[0]} ({note})",) + tuple(err.args[1:])


def call_translated(fn: Callable, args: Tuple, kwargs: Dict[str, Any], user: Any, dev: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except Exception as err:
        add_device_context(err, user, dev)
        raise
