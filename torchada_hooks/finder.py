"""The ``sys.meta_path`` finder that serves registered proxy modules."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.machinery import ModuleSpec

from .proxy import ProxyModule, proxy_spec

__all__ = ["ProxyFinder"]


class ProxyFinder:
    """Meta path finder owning a set of full module names, each mapped to a proxy's spec.

    It sits at the front of ``sys.meta_path`` and is consulted for every import that misses
    ``sys.modules``, so ``find_spec`` is a single dict lookup: names it does not own cost one
    failed ``dict.get`` and fall through to the normal finders.

    :class:`~torchada_hooks.ImportHooks` owns one and puts it into ``sys.meta_path``.

    Example::

        >>> from torchada_hooks import ProxyFinder, ProxyModule
        >>> finder = ProxyFinder()
        >>> proxy = ProxyModule("demo_finder", str.upper)
        >>> finder.add(proxy)
        >>> finder.find_spec("demo_finder").loader_state is proxy
        True
        >>> finder
        <ProxyFinder owning ['demo_finder']>
    """

    __slots__ = ("_specs",)

    def __init__(self) -> None:
        self._specs: dict[str, ModuleSpec] = {}

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: object = None,
    ) -> ModuleSpec | None:
        """The spec of the proxy registered as ``fullname``, or None for any other name (the
        import system then asks the next finder). ``path`` and ``target`` are not used.

        Example::

            >>> from torchada_hooks import ProxyFinder, ProxyModule
            >>> finder = ProxyFinder()
            >>> finder.add(ProxyModule("demo_finder", str.upper))
            >>> finder.find_spec("demo_finder").name, finder.find_spec("json")
            ('demo_finder', None)
        """
        return self._specs.get(fullname)

    def add(self, proxy: ProxyModule) -> None:
        """Own ``proxy``'s name and serve its spec; replaces a proxy added under that name before.

        Raises TypeError when ``proxy`` is not a :class:`~torchada_hooks.ProxyModule`.

        Example::

            >>> from torchada_hooks import ProxyFinder, ProxyModule
            >>> finder = ProxyFinder()
            >>> finder.add(ProxyModule("demo_finder", str.upper))
            >>> sorted(finder.proxies())
            ['demo_finder']
        """
        spec = proxy_spec(proxy)
        self._specs[spec.name] = spec

    def discard(self, name: str) -> ProxyModule | None:
        """Stop serving ``name``; returns its proxy, or None when ``name`` was not owned.

        Example::

            >>> from torchada_hooks import ProxyFinder, ProxyModule
            >>> finder = ProxyFinder()
            >>> proxy = ProxyModule("demo_finder", str.upper)
            >>> finder.add(proxy)
            >>> finder.discard("demo_finder") is proxy, finder.discard("demo_finder")
            (True, None)
        """
        spec = self._specs.pop(name, None)
        return None if spec is None else spec.loader_state

    def get(self, name: str) -> ProxyModule | None:
        """The proxy owned as ``name``, or None.

        Example::

            >>> from torchada_hooks import ProxyFinder, ProxyModule
            >>> finder = ProxyFinder()
            >>> proxy = ProxyModule("demo_finder", str.upper)
            >>> finder.add(proxy)
            >>> finder.get("demo_finder") is proxy, finder.get("other")
            (True, None)
        """
        spec = self._specs.get(name)
        return None if spec is None else spec.loader_state

    def proxies(self) -> dict[str, ProxyModule]:
        """A new dict ``{module name: proxy}`` of every owned proxy.

        Example::

            >>> from torchada_hooks import ProxyFinder, ProxyModule
            >>> finder = ProxyFinder()
            >>> proxy = ProxyModule("demo_finder", str.upper)
            >>> finder.add(proxy)
            >>> finder.proxies() == {"demo_finder": proxy}
            True
        """
        return {name: spec.loader_state for name, spec in self._specs.items()}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} owning {sorted(self._specs)}>"
