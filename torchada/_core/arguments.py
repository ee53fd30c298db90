"""One idiom, written once: call a function with some of its arguments rewritten, however the
caller passed them (positionally, by keyword, or not at all)."""

from __future__ import annotations

import contextlib
import functools
import inspect
from typing import Any, Callable, ContextManager, Dict, Optional


def rewriting(
    original: Callable,
    rewrite: Callable[[Dict[str, Any]], Optional[ContextManager]],
    *,
    defaults: bool = False,
) -> Callable:
    """``original`` with its arguments bound to its signature and handed to ``rewrite`` (a dict
    it may change in place) before the call; ``rewrite`` may return a context manager to call
    ``original`` inside. ``defaults=True`` fills in the parameters the caller left out first.

    Example::

        >>> def scale(x, device="cuda"):
        ...     return device
        >>> scale_on_musa = rewriting(scale, lambda a: a.update(device="musa"), defaults=True)
        >>> scale_on_musa(2)
        'musa'
    """
    signature = inspect.signature(original)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        if defaults:
            bound.apply_defaults()
        context = rewrite(bound.arguments)
        with context if context is not None else contextlib.nullcontext():
            return original(*bound.args, **bound.kwargs)

    return wrapper
