"""Generic import machinery for redirecting whole modules to lazily resolving proxies.

Nothing here knows what is being redirected or why (and nothing imports torch): a policy layer
builds proxies and decides what their attributes resolve to; this package makes the import system
hand those proxies out under the registered names, consistently, and can undo all of it.

Public API
----------
``ProxyModule(name, resolver, *, names=None, attrs=None, is_package=False)``
    A :class:`types.ModuleType` subclass. ``resolver(attr) -> value`` runs on the first access of
    an attribute (thread-safe: once per name, every thread gets the same object) and the value is
    cached in the module ``__dict__``, so later accesses are plain module attribute hits. Unknown
    names raise :class:`AttributeError` naming the module and the attribute and carrying the
    resolver's message (chained as ``__cause__``). Dunder names are never passed to the resolver.
    ``names()`` feeds ``dir()``; ``attrs`` pre-sets attributes such as ``__file__``, ``__doc__``,
    ``__all__`` or (packages only) ``__path__``. Submodules of a package proxy are importable
    only when they are registered themselves.

``ImportHooks()``
    Registry plus ``sys.meta_path`` finder:

    - ``register(name, proxy) -> proxy``: ``name`` must be the proxy's own name. While installed,
      an already imported ``name`` is swapped at once.
    - ``unregister(name) -> proxy | None``: while installed, restores what the swap replaced.
    - ``install()``: idempotent. Puts the finder first in ``sys.meta_path``; for every registered
      name already in ``sys.modules`` replaces the entry *and* the parent package attribute
      together. Names imported later come from the finder (the import system then binds the
      parent attribute itself, also when the parent is imported after ``install()``).
    - ``uninstall()``: removes the finder; restores every ``sys.modules`` entry (or deletes the
      ones that did not exist) and every parent attribute it changed (or deletes it).
    - ``is_installed() -> bool``, ``proxies() -> dict[str, ProxyModule]``, ``finder``.

``importlib.reload(proxy)`` keeps the proxy object and its pre-set attributes, and forgets the
values cached from the resolver, so they are resolved again on next access. A reload that another
finder ahead of this package's answers is refused with an ImportError, the proxy unchanged.

``vars(proxy)``, ``proxy.__dict__``, ``dir(proxy)`` and ``from proxy import *`` see the complete
namespace (every advertised name, resolved at that first whole-namespace read);
``own_namespace(module)`` reads the namespace as it is, resolving nothing, and so does code of the
packages named to ``peek_from(package)`` (a policy layer's own bookkeeping);
``resolve_unsealed(module, attr)`` resolves one name without setting off a pending seal.

Lower-level pieces (``ProxyFinder``, ``ProxyLoader``, ``SwapLedger``, ``proxy_spec``) are exported
for policy code that needs to compose them differently.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers: the names below resolve through __getattr__
    from .finder import ProxyFinder  # noqa: F401
    from .hooks import ImportHooks  # noqa: F401
    from .proxy import (  # noqa: F401
        ProxyLoader,
        ProxyModule,
        is_sealed,
        own_namespace,
        peek_from,
        proxy_spec,
        resolve_unsealed,
        seal,
        seal_on_first_use,
    )
    from .swap import SwapLedger  # noqa: F401

# Each public name and its submodule, loaded on first use: importing one light submodule
# (``torchada_hooks.completion`` runs in every ``import torch``) must not load wrapt.
_WHERE = {
    "ImportHooks": "hooks",
    "ProxyFinder": "finder",
    "ProxyLoader": "proxy",
    "ProxyModule": "proxy",
    "SwapLedger": "swap",
    "is_sealed": "proxy",
    "own_namespace": "proxy",
    "peek_from": "proxy",
    "proxy_spec": "proxy",
    "resolve_unsealed": "proxy",
    "seal": "proxy",
    "seal_on_first_use": "proxy",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_WHERE))
