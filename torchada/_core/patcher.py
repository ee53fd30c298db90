"""The record of every change torchada makes: :class:`Patcher` sets attributes and environment
variables and remembers how to put each back; :func:`undo_all` undoes them, newest first. Every
subsystem gets the one patcher through its ``install(patcher)`` entry (:class:`Subsystem`)."""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, List, Optional, Protocol

logger = logging.getLogger("torchada")

_undo: List[Callable[[], None]] = []


_MISSING = object()


def _own_value(obj: Any, name: str) -> Any:
    """What ``obj`` itself holds under ``name`` (not what a lookup would find elsewhere)."""
    if isinstance(obj, type):
        return obj.__dict__.get(name, _MISSING)
    own = getattr(obj, "__dict__", None)
    if isinstance(own, dict):
        return own.get(name, _MISSING)
    return getattr(obj, name, _MISSING)


class PatchHandle:
    """One attribute torchada replaced; :meth:`undo` puts the previous value back, but only while
    the attribute still holds torchada's value: a later patch by someone else (a test's
    ``mock.patch``, another library) is left in place."""

    __slots__ = ("owner", "name", "new", "old", "done")

    def __init__(self, owner: Any, name: str, new: Any, old: Any) -> None:
        self.owner, self.name, self.new, self.old, self.done = owner, name, new, old, False

    def undo(self) -> bool:
        """Restore the previous value; False when the attribute is no longer torchada's (it is
        left alone) or this handle was undone already."""
        if self.done:
            return False
        self.done = True
        if _own_value(self.owner, self.name) is not self.new:
            logger.debug(
                "torchada: %r.%s was replaced after torchada; left as it is", self.owner, self.name
            )
            return False
        if self.old is _MISSING:
            delattr(self.owner, self.name)
        else:
            setattr(self.owner, self.name, self.old)
        return True


class Patcher:
    """Records every change a subsystem makes so that ``torchada.disable()`` can undo it, newest
    first.

    Example::

        >>> handle = _patcher.set_attr(torch.cuda, "is_available", lambda: True)  # doctest: +SKIP
        >>> handle.undo()  # doctest: +SKIP
        True
    """

    def set_attr(self, obj: Any, name: str, value: Any) -> PatchHandle:
        own = getattr(obj, "__dict__", None)
        if isinstance(obj, type):
            old = obj.__dict__.get(name, _MISSING)
        elif isinstance(own, dict) and (name in own or not hasattr(type(obj), name)):
            # The object's own attribute only: one found through a module-like __getattr__ (the
            # module torch.backends.cudnn wraps) must not be copied into it at undo.
            old = own.get(name, _MISSING)
        else:
            old = getattr(obj, name, _MISSING)
        setattr(obj, name, value)
        handle = PatchHandle(obj, name, value, old)
        _undo.append(handle.undo)
        return handle

    patch = set_attr

    def del_attr(self, obj: Any, name: str) -> Optional[PatchHandle]:
        """Remove ``obj.name`` (its own attribute) until torchada is disabled; None when
        ``obj`` has no such attribute of its own."""
        old = _own_value(obj, name)
        if old is _MISSING:
            return None
        delattr(obj, name)
        handle = PatchHandle(obj, name, _MISSING, old)
        _undo.append(handle.undo)
        return handle

    def set_env(self, name: str, value: str) -> None:
        old = os.environ.get(name)
        os.environ[name] = value

        def restore() -> None:
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old

        _undo.append(restore)

    def del_env(self, name: str) -> None:
        old = os.environ.pop(name, None)
        if old is not None:
            _undo.append(lambda: os.environ.__setitem__(name, old))

    def on_undo(self, fn: Callable[[], None]) -> None:
        _undo.append(fn)


class Subsystem(Protocol):
    """A module that :func:`torchada.enable` installs after the ``torch.cuda`` redirects, named in
    ``torchada._activation.SUBSYSTEMS`` under its ``TORCHADA_DISABLE_<NAME>`` switch."""

    def install(self, patcher: Patcher) -> None:
        """Make the subsystem's changes, each through ``patcher`` so that it can be undone."""


def undo_all() -> None:
    """Undo every recorded change, newest first."""
    while _undo:
        _undo.pop()()
