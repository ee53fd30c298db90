"""Run a subsystem's patch when a torch module it adapts is imported (now, if it already is), or
when the MUSA device initialises (:func:`on_device_init`).

One mechanism for every subsystem (the compiler, the private torch hooks): wrapt's post-import
hooks, which cannot be unregistered, so each hook checks that its subsystem is still on. wrapt
puts its import finder in ``sys.meta_path`` at its first hook and never takes it out; it is in
place only while torchada is on (removed by ``disable()``, put back at the next enable).
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Callable, Dict, List, Set, Tuple

logger = logging.getLogger("torchada")

_hooked: Set[Tuple[str, Callable[[Any], None]]] = set()
_finders: List[Any] = []


def _is_ours(finder: Any) -> bool:
    return any(finder is f for f in _finders)


def _remove_finders() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not _is_ours(f)]


def on_import(name: str, fn: Callable[[Any], None], state: Dict[str, Any]) -> None:
    """Call ``fn(module)`` once module ``name`` is imported, while ``state["patcher"]`` (the
    subsystem's patcher, None once it is off) is set; failures are logged, never raised into the
    program's import.

    Example::

        >>> on_import("torch._inductor.codecache", patch, _state)  # doctest: +SKIP
    """
    import wrapt

    patcher = state["patcher"]
    sys.meta_path[:0] = [f for f in _finders if not any(f is m for m in sys.meta_path)]
    before = list(sys.meta_path)

    def hook(module: Any) -> None:
        if state["patcher"] is None:  # the subsystem is off since (hooks stay registered)
            return
        try:
            fn(module)
        except Exception:  # an import must not fail because of torchada
            logger.warning("torchada: could not adapt %s for MUSA", name, exc_info=True)

    if (name, fn) not in _hooked:
        _hooked.add((name, fn))
        wrapt.register_post_import_hook(hook, name)
    else:
        module = sys.modules.get(name)
        if module is not None:
            hook(module)
    _finders.extend(f for f in sys.meta_path if not any(f is b for b in before))
    if _finders:
        patcher.on_undo(_remove_finders)


def on_device_init(device_module: Any, fn: Callable[[], None]) -> None:
    """Call ``fn()`` when the MUSA device initialises (at once if it has), through torch_musa's
    own ``_lazy_call`` queue, which torch.cuda's lazy initialisation runs too.

    ``_lazy_call`` records the caller's formatted stack for its error messages, which costs
    milliseconds; ours gets a one-line note instead.

    Example::

        >>> on_device_init(torch_musa, register_fallback)  # doctest: +SKIP
    """
    import traceback

    format_stack = traceback.format_stack
    traceback.format_stack = lambda *args, **kwargs: ["  (queued by torchada.enable)\n"]
    try:
        device_module._lazy_call(fn)
    finally:
        traceback.format_stack = format_stack
