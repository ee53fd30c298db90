"""``torch.cuda.amp`` on MUSA: torch_musa's ``torch.musa.amp`` objects, plus the FutureWarnings
torch gives for this deprecated module.

torch deprecates ``torch.cuda.amp.autocast``, ``custom_fwd``, ``custom_bwd`` and ``GradScaler`` in
favour of ``torch.amp`` (which torchada serves for "cuda" too); torch_musa's counterparts warn of
nothing. CUDA programs (and their tests) see torch's own warning text, read from the installed
torch, so a torch that does not deprecate a name gets no warning for it.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Optional

import torch
import torch_musa.core.amp as _musa_amp

from ..redirect import original_module


@functools.lru_cache(maxsize=None)
def _deprecation(name: str) -> Optional[str]:
    """torch's deprecation message for ``torch.cuda.amp.<name>``, or None when this torch has
    none. ``typing_extensions.deprecated`` records it on the object, or on a class's
    ``__init__`` where only that is decorated (torch 2.7's autocast and GradScaler)."""
    original = getattr(original_module("torch.cuda.amp"), name, None)
    for obj in (original, vars(original).get("__init__") if isinstance(original, type) else None):
        message = getattr(obj, "__deprecated__", None)
        if isinstance(message, str):
            return message
    return None


def _warn(name: str, stacklevel: int) -> None:
    message = _deprecation(name)
    if message is not None:
        warnings.warn(message, FutureWarning, stacklevel=stacklevel + 1)


class autocast(_musa_amp.autocast):  # type: ignore[misc, valid-type]
    """``torch.cuda.amp.autocast``: torch.musa.amp's autocast, warning as torch does."""

    def __init__(
        self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True
    ) -> None:
        _warn("autocast", stacklevel=2)
        super().__init__(enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_musa_amp.GradScaler):  # type: ignore[misc, valid-type]
    """``torch.cuda.amp.GradScaler``: torch.musa.amp's GradScaler, warning as torch does."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        _warn("GradScaler", stacklevel=2)
        super().__init__(
            init_scale=init_scale,
            growth_factor=growth_factor,
            backoff_factor=backoff_factor,
            growth_interval=growth_interval,
            enabled=enabled,
        )


def custom_fwd(fwd: Optional[Callable] = None, *, cast_inputs: Any = None) -> Any:
    """``torch.cuda.amp.custom_fwd``: torch.musa.amp's, warning as torch does."""
    _warn("custom_fwd", stacklevel=2)
    return _musa_amp.custom_fwd(fwd, cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable) -> Any:
    """``torch.cuda.amp.custom_bwd``: torch.musa.amp's, warning as torch does."""
    _warn("custom_bwd", stacklevel=2)
    return _musa_amp.custom_bwd(bwd)
