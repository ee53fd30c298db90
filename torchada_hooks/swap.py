"""Recorded swaps of ``sys.modules`` entries and parent-package attributes, and their undo.

A module ``a.b`` is reachable three ways: ``sys.modules["a.b"]``, the attribute ``b`` of
``sys.modules["a"]`` (what ``import a.b; a.b.X`` walks) and ``from a.b import X`` (which reads
``sys.modules``). Replacing only one of them makes the spellings disagree, so a swap always moves
both together and remembers what was there before, so it can put it back exactly.
"""

from __future__ import annotations

import logging
import sys
from types import ModuleType
from typing import Any

from .proxy import own_namespace

__all__ = ["SwapLedger"]

logger = logging.getLogger("torchada")

# Marks "there was no entry/attribute"; undo then deletes instead of assigning.
_MISSING: Any = object()


def _peek(obj: object, attr: str) -> Any:
    # Read the instance dict directly: getattr could run a lazy module __getattr__ (a proxy
    # resolver, or a package's own PEP 562 hook) just to find out what is there.
    if isinstance(obj, ModuleType):
        # Not vars(): on a proxy that resolves every name first (see ProxyModule).
        return own_namespace(obj).get(attr, _MISSING)
    try:
        return vars(obj).get(attr, _MISSING)
    except TypeError:
        return getattr(obj, attr, _MISSING)


def _put(obj: object, attr: str, value: Any) -> None:
    if value is _MISSING:
        try:
            delattr(obj, attr)
        except AttributeError:
            pass
    else:
        setattr(obj, attr, value)


def _hand_back_submodules(name: str, proxy: ModuleType, original: Any) -> None:
    # A submodule first imported while the proxy was in sys.modules was bound as an attribute of
    # the proxy only; the original package must get it too, or ``pkg.sub`` breaks after undo.
    prefix = name + "."
    for key, module in list(sys.modules.items()):
        if not key.startswith(prefix) or "." in key[len(prefix) :]:
            continue
        child = key[len(prefix) :]
        if _peek(proxy, child) is module and _peek(original, child) is _MISSING:
            _put(original, child, module)


class _Swap:
    __slots__ = ("name", "original", "parent", "parent_value", "proxy")

    def __init__(self, name: str, proxy: ModuleType, original: Any) -> None:
        self.name = name
        self.proxy = proxy
        self.original = original  # the sys.modules value before, or _MISSING
        self.parent: object | None = None  # parent module whose attribute was recorded
        self.parent_value: Any = _MISSING  # that attribute's value before, or _MISSING


class SwapLedger:
    """Applies and undoes proxy swaps, one record per module name.

    A swap moves ``sys.modules[name]`` and the parent package's attribute together, and remembers
    both prior values; :class:`~torchada_hooks.ImportHooks` keeps one ledger.

    Example::

        >>> import sys, types
        >>> from torchada_hooks import SwapLedger
        >>> original = sys.modules["demo_swap"] = types.ModuleType("demo_swap")
        >>> proxy = types.ModuleType("demo_swap")
        >>> ledger = SwapLedger()
        >>> ledger.swap_in("demo_swap", proxy), sys.modules["demo_swap"] is proxy
        (True, True)
        >>> ledger.undo_all()
        >>> sys.modules.pop("demo_swap") is original
        True
    """

    def __init__(self) -> None:
        self._swaps: dict[str, _Swap] = {}

    def swap_in(self, name: str, proxy: ModuleType) -> bool:
        """Point ``name`` at ``proxy`` if it is already imported; always record the prior state.

        A name that is not imported yet is left to the finder; the record still remembers the
        parent attribute so that undo can restore it after the proxy has been imported. Returns
        whether ``sys.modules`` was changed; a name that has a record already is left alone
        (False).

        Example::

            >>> import sys, types
            >>> from torchada_hooks import SwapLedger
            >>> ledger = SwapLedger()
            >>> ledger.swap_in("demo_swap", types.ModuleType("demo_swap"))  # not imported
            False
            >>> "demo_swap" in sys.modules
            False
        """
        if name in self._swaps:
            return False
        current = sys.modules.get(name, _MISSING)
        swap = _Swap(name, proxy, _MISSING if current is proxy else current)
        self._swaps[name] = swap
        swapped = current is not _MISSING and current is not proxy
        if swapped:
            sys.modules[name] = proxy
            logger.debug("swapped sys.modules[%r] to its proxy", name)
        self._attach(swap)
        return swapped

    def reseat(self, name: str) -> None:
        """Move the parent-attribute part of a swap onto the current ``sys.modules`` parent.

        Needed when the parent entry itself was swapped or restored after this name was. A name
        without a record is ignored.

        Example::

            >>> import sys, types
            >>> from torchada_hooks import SwapLedger
            >>> old_parent = sys.modules["demo_pkg"] = types.ModuleType("demo_pkg")
            >>> sys.modules["demo_pkg.sub"] = types.ModuleType("demo_pkg.sub")
            >>> proxy = types.ModuleType("demo_pkg.sub")
            >>> ledger = SwapLedger()
            >>> ledger.swap_in("demo_pkg.sub", proxy), old_parent.sub is proxy
            (True, True)
            >>> new_parent = sys.modules["demo_pkg"] = types.ModuleType("demo_pkg")
            >>> ledger.reseat("demo_pkg.sub")
            >>> new_parent.sub is proxy, hasattr(old_parent, "sub")
            (True, False)
            >>> ledger.undo_all()
            >>> del sys.modules["demo_pkg.sub"], sys.modules["demo_pkg"]
        """
        swap = self._swaps.get(name)
        if swap is not None:
            self._detach(swap)
            self._attach(swap)

    def undo(self, name: str) -> None:
        """Restore what :meth:`swap_in` recorded for ``name``; entries others replaced stay.

        An entry that did not exist before the swap is removed. A name without a record is
        ignored.

        Example::

            >>> import sys, types
            >>> from torchada_hooks import SwapLedger
            >>> original = sys.modules["demo_swap"] = types.ModuleType("demo_swap")
            >>> ledger = SwapLedger()
            >>> ledger.swap_in("demo_swap", types.ModuleType("demo_swap"))
            True
            >>> ledger.undo("demo_swap")
            >>> sys.modules.pop("demo_swap") is original
            True
        """
        swap = self._swaps.pop(name, None)
        if swap is None:
            return
        self._detach(swap)
        current = sys.modules.get(name, _MISSING)
        if current is swap.proxy or current is _MISSING:
            if swap.original is not _MISSING:
                _hand_back_submodules(name, swap.proxy, swap.original)
            if swap.original is _MISSING:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = swap.original
        else:
            logger.debug("sys.modules[%r] was replaced by someone else; leaving it", name)

    def undo_all(self) -> None:
        """:meth:`undo` every recorded name, children before their parents.

        Example::

            >>> import sys, types
            >>> from torchada_hooks import SwapLedger
            >>> original = sys.modules["demo_swap"] = types.ModuleType("demo_swap")
            >>> ledger = SwapLedger()
            >>> ledger.swap_in("demo_swap", types.ModuleType("demo_swap"))
            True
            >>> ledger.undo_all()
            >>> sys.modules.pop("demo_swap") is original
            True
        """
        # Children first, so each child is detached from its proxied parent before the parent
        # itself is restored.
        for name in sorted(self._swaps, reverse=True):
            self.undo(name)

    def _attach(self, swap: _Swap) -> None:
        parent_name, _, child = swap.name.rpartition(".")
        parent = sys.modules.get(parent_name) if parent_name else None
        swap.parent = parent
        swap.parent_value = _MISSING if parent is None else _peek(parent, child)
        if parent is not None and sys.modules.get(swap.name) is swap.proxy:
            setattr(parent, child, swap.proxy)

    def _detach(self, swap: _Swap) -> None:
        parent_name, _, child = swap.name.rpartition(".")
        if not parent_name:
            return
        recorded = swap.parent
        current = sys.modules.get(parent_name)
        if recorded is not None and _peek(recorded, child) is swap.proxy:
            _put(recorded, child, swap.parent_value)
        # A parent imported after the swap got the attribute from the import system; it had no
        # earlier value, so the attribute goes away with the proxy.
        if current is not None and current is not recorded and _peek(current, child) is swap.proxy:
            _put(current, child, _MISSING)
        swap.parent = None
        swap.parent_value = _MISSING
