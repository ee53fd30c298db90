"""``ImportHooks``: the registry tying proxies, the finder and the swap ledger together."""

from __future__ import annotations

import logging
import sys

import wrapt

from .finder import ProxyFinder
from .proxy import ProxyModule, proxy_spec
from .swap import SwapLedger

__all__ = ["ImportHooks"]

logger = logging.getLogger("torchada")


class ImportHooks:
    """A registry of proxy modules that can be installed into and removed from the import system.

    While installed, its :class:`~torchada_hooks.finder.ProxyFinder` is first in
    ``sys.meta_path`` and every registered name that was already imported is swapped to its proxy
    (``sys.modules`` entry and parent attribute together). :meth:`uninstall` undoes all of it.

    Mutating methods are serialised with :func:`wrapt.synchronized` (one re-entrant lock per
    registry); none of them is on an attribute-access or import hot path.

    Example::

        >>> import sys
        >>> from torchada_hooks import ImportHooks, ProxyModule
        >>> hooks = ImportHooks()
        >>> _ = hooks.register("demo_hooks", ProxyModule("demo_hooks", str.upper))
        >>> hooks.install()
        >>> import demo_hooks
        >>> demo_hooks.hello
        'HELLO'
        >>> hooks.uninstall()
        >>> "demo_hooks" in sys.modules
        False
    """

    def __init__(self) -> None:
        self._finder = ProxyFinder()
        self._ledger = SwapLedger()
        self._installed = False

    @property
    def finder(self) -> ProxyFinder:
        """The meta path finder (inserted into ``sys.meta_path`` while installed).

        Example::

            >>> import sys
            >>> from torchada_hooks import ImportHooks
            >>> hooks = ImportHooks()
            >>> hooks.install()
            >>> sys.meta_path[0] is hooks.finder
            True
            >>> hooks.uninstall()
            >>> hooks.finder in sys.meta_path
            False
        """
        return self._finder

    def is_installed(self) -> bool:
        """Whether :meth:`install` has run and :meth:`uninstall` has not undone it since.

        Example::

            >>> from torchada_hooks import ImportHooks
            >>> hooks = ImportHooks()
            >>> hooks.is_installed()
            False
            >>> hooks.install()
            >>> hooks.is_installed()
            True
            >>> hooks.uninstall()
        """
        return self._installed

    def proxies(self) -> dict[str, ProxyModule]:
        """A snapshot ``{module name: proxy}`` of the registered proxies.

        Example::

            >>> from torchada_hooks import ImportHooks, ProxyModule
            >>> hooks = ImportHooks()
            >>> proxy = hooks.register("demo_hooks", ProxyModule("demo_hooks", str.upper))
            >>> hooks.proxies() == {"demo_hooks": proxy}
            True
        """
        return self._finder.proxies()

    @wrapt.synchronized
    def register(self, name: str, proxy: ProxyModule) -> ProxyModule:
        """Register ``proxy`` under ``name`` (which must equal the proxy's own name).

        Registering the same proxy again is a no-op; a different proxy for a registered name is an
        error (unregister first). While installed, an already imported ``name`` is swapped at once.
        Returns ``proxy``.

        Raises TypeError when ``proxy`` is not a :class:`~torchada_hooks.ProxyModule`, and
        ValueError when ``name`` is not the proxy's name or is registered to another proxy.

        Example::

            >>> from torchada_hooks import ImportHooks, ProxyModule
            >>> hooks = ImportHooks()
            >>> proxy = ProxyModule("demo_hooks", str.upper)
            >>> hooks.register("demo_hooks", proxy) is proxy
            True
            >>> hooks.register("demo_hooks", ProxyModule("demo_hooks", str.lower))
            Traceback (most recent call last):
            ValueError: 'demo_hooks' is already registered to another proxy; unregister it first
        """
        if not isinstance(proxy, ProxyModule):
            raise TypeError(f"expected a ProxyModule, got {type(proxy).__name__}")
        spec_name = proxy_spec(proxy).name
        if name != spec_name:
            raise ValueError(f"cannot register proxy {spec_name!r} under another name {name!r}")
        existing = self._finder.get(name)
        if existing is proxy:
            return proxy
        if existing is not None:
            raise ValueError(
                f"{name!r} is already registered to another proxy; unregister it first"
            )
        self._finder.add(proxy)
        logger.debug("registered proxy module %r", name)
        if self._installed:
            self._ledger.swap_in(name, proxy)
            self._reseat_children(name)
        return proxy

    @wrapt.synchronized
    def unregister(self, name: str) -> ProxyModule | None:
        """Forget ``name``; while installed, restore what its swap replaced. Returns the proxy,
        or None when ``name`` was not registered.

        Example::

            >>> from torchada_hooks import ImportHooks, ProxyModule
            >>> hooks = ImportHooks()
            >>> proxy = hooks.register("demo_hooks", ProxyModule("demo_hooks", str.upper))
            >>> hooks.unregister("demo_hooks") is proxy, hooks.unregister("demo_hooks")
            (True, None)
        """
        proxy = self._finder.discard(name)
        if proxy is None:
            return None
        logger.debug("unregistered proxy module %r", name)
        if self._installed:
            self._ledger.undo(name)
            self._reseat_children(name)
        return proxy

    @wrapt.synchronized
    def install(self) -> None:
        """Put the finder first in ``sys.meta_path`` and swap already imported names. Idempotent.

        A swapped name gets its proxy both in ``sys.modules`` and as the attribute of its parent
        package; names imported later come from the finder.

        Example::

            >>> import sys, types
            >>> from torchada_hooks import ImportHooks, ProxyModule
            >>> original = sys.modules["demo_hooks"] = types.ModuleType("demo_hooks")
            >>> hooks = ImportHooks()
            >>> proxy = hooks.register("demo_hooks", ProxyModule("demo_hooks", str.upper))
            >>> hooks.install()
            >>> sys.modules["demo_hooks"] is proxy
            True
            >>> hooks.uninstall()
            >>> sys.modules.pop("demo_hooks") is original
            True
        """
        if self._installed:
            return
        sys.meta_path.insert(0, self._finder)
        # Parents before children ("a.b" sorts before "a.b.c"), so a child's parent attribute is
        # set on the parent's proxy when both are registered.
        for name, proxy in sorted(self._finder.proxies().items()):
            self._ledger.swap_in(name, proxy)
        self._installed = True
        logger.debug("import hooks installed for %s", sorted(self._finder.proxies()))

    @wrapt.synchronized
    def uninstall(self) -> None:
        """Remove the finder and restore every ``sys.modules`` entry and parent attribute.

        Entries that did not exist before are deleted; an entry someone else replaced after the
        swap is left as it is. Does nothing when not installed.

        Example::

            >>> import sys
            >>> from torchada_hooks import ImportHooks, ProxyModule
            >>> hooks = ImportHooks()
            >>> _ = hooks.register("demo_hooks", ProxyModule("demo_hooks", str.upper))
            >>> hooks.install()
            >>> import demo_hooks
            >>> hooks.uninstall()
            >>> "demo_hooks" in sys.modules, hooks.is_installed()
            (False, False)
        """
        if not self._installed:
            return
        # Finder out first, so nothing can import a proxy again while swaps are being undone.
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self._finder]
        self._ledger.undo_all()
        self._installed = False
        logger.debug("import hooks uninstalled")

    def _reseat_children(self, name: str) -> None:
        # The parent entry of these children just changed (proxy in or original back), so their
        # parent attributes have to move to whatever sys.modules now holds as the parent.
        prefix = name + "."
        for child in sorted(self._finder.proxies()):
            if child.startswith(prefix) and "." not in child[len(prefix) :]:
                self._ledger.reseat(child)

    def __repr__(self) -> str:
        state = "installed" if self._installed else "not installed"
        return f"<{type(self).__name__} {state}, proxies={sorted(self._finder.proxies())}>"
