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
        return self._specs.get(fullname)

    def add(self, proxy: ProxyModule) -> None:
        spec = proxy_spec(proxy)
        self._specs[spec.name] = spec

    def discard(self, name: str) -> ProxyModule | None:
        spec = self._specs.pop(name, None)
        return None if spec is None else spec.loader_state

    def get(self, name: str) -> ProxyModule | None:
        spec = self._specs.get(name)
        return None if spec is None else spec.loader_state

    def proxies(self) -> dict[str, ProxyModule]:
        return {name: spec.loader_state for name, spec in self._specs.items()}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} owning {sorted(self._specs)}>"
