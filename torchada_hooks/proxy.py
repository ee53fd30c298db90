"""Proxy modules: module objects whose attributes are resolved lazily by a callable.

A :class:`ProxyModule` is a real :class:`types.ModuleType` (a subclass), so it can sit in
``sys.modules`` and pass every ``isinstance(m, types.ModuleType)`` check. Attribute lookups that
miss the module ``__dict__`` fall through to a PEP 562 ``__getattr__`` stored *in* that dict; it
asks the resolver and caches the answer in the dict, so every later lookup of that name is an
ordinary module attribute hit that never reaches Python code again.

The module also carries its own :class:`~importlib.machinery.ModuleSpec`, whose loader
(:class:`ProxyLoader`) hands out the already existing proxy instead of creating a module.

Code that reads the whole namespace (``vars()``, ``__dict__``, ``dir()``, ``from M import *``
without ``__all__``) gets it complete: the first such read resolves every name the proxy
advertises. Until then nothing is resolved, so installing proxies stays cheap.
"""

from __future__ import annotations

import builtins
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterable, Mapping
from importlib.machinery import ModuleSpec
from typing import Any

__all__ = [
    "ProxyLoader",
    "ProxyModule",
    "is_sealed",
    "own_namespace",
    "peek_from",
    "proxy_spec",
    "seal",
    "seal_on_first_use",
]

Resolver = Callable[[str], Any]
NamesProvider = Callable[[], Iterable[str]]

# The import system owns these; letting callers pre-set them would produce a spec that lies.
_RESERVED_ATTRS = frozenset(
    {"__name__", "__spec__", "__loader__", "__package__", "__getattr__", "__dir__"}
)

_UNSET: Any = object()

# ModuleType's own ``__dict__`` descriptor: reads the namespace without completing it (the
# ProxyModule property of that name would).
_module_dict = types.ModuleType.__dict__["__dict__"].__get__


def own_namespace(module: types.ModuleType) -> dict[str, Any]:
    """The module's ``__dict__`` as it is now: for a proxy, without resolving the names it lacks.

    ``vars(proxy)`` and ``proxy.__dict__`` complete the namespace first (see
    :class:`ProxyModule`); bookkeeping that only peeks at what is there reads this instead.

    Example::

        >>> from torchada_hooks import ProxyModule
        >>> from torchada_hooks.proxy import own_namespace
        >>> proxy = ProxyModule("demo_proxy", str.upper, names=lambda: ["a", "b"])
        >>> "a" in own_namespace(proxy), "a" in vars(proxy), vars(proxy)["b"]
        (False, True, 'B')
    """
    return _module_dict(module)


# Packages whose code reads proxy namespaces as they are (see peek_from), and their prefixes.
_PEEKERS: tuple[str, ...] = ()
_PEEKER_PREFIXES: tuple[str, ...] = ()


def peek_from(package: str) -> None:
    """Let code of ``package`` (and its submodules) read ``vars(proxy)`` as it is, unresolved.

    Everyone else's ``vars()``/``__dict__`` read completes the proxy first (see
    :class:`ProxyModule`). A policy layer whose own bookkeeping peeks at proxies it built (for an
    attribute it pre-set, say) registers itself here, so that peeking costs nothing. Idempotent.

    Example::

        >>> from torchada_hooks import ProxyModule
        >>> from torchada_hooks.proxy import peek_from
        >>> peek_from("demo_policy")
        >>> proxy = ProxyModule("demo_proxy", str.upper, names=lambda: ["a"])
        >>> ns = {"__name__": "demo_policy.sub", "proxy": proxy}
        >>> exec("seen = sorted(vars(proxy))", ns)  # code of demo_policy.sub
        >>> "a" in ns["seen"], "a" in vars(proxy)
        (False, True)
    """
    global _PEEKERS, _PEEKER_PREFIXES
    if package not in _PEEKERS:
        _PEEKERS = (*_PEEKERS, package)
        _PEEKER_PREFIXES = (*_PEEKER_PREFIXES, package + ".")


def _peeking(caller_globals: dict[str, Any]) -> bool:
    name = caller_globals.get("__name__")
    return isinstance(name, str) and (name in _PEEKERS or name.startswith(_PEEKER_PREFIXES))


def _is_dunder(attr: str) -> bool:
    return len(attr) > 4 and attr[:2] == "__" and attr[-2:] == "__"


class _Resolution:
    """Per-proxy lazy-resolution state.

    Kept out of the module namespace (it lives in a slot of the proxy) so no name of the target can
    be shadowed by our bookkeeping. Its bound ``getattr``/``dir`` methods are what the proxy stores
    as the PEP 562 ``__getattr__``/``__dir__`` hooks.
    """

    __slots__ = (
        "complete",
        "filling",
        "fresh",
        "locks",
        "module",
        "name",
        "names",
        "namespace",
        "pending_seal",
        "presets",
        "resolved",
        "resolver",
        "resolving",
        "spec",
    )

    def __init__(
        self,
        module: ProxyModule,
        spec: ModuleSpec,
        resolver: Resolver,
        names: NamesProvider | None,
    ) -> None:
        self.module = module
        self.name: str = module.__name__
        self.namespace: dict[str, Any] = _module_dict(module)
        self.spec = spec
        self.resolver = resolver
        self.names = names
        # One lock per attribute name: a slow resolution of one name (which may import modules and
        # so take import locks) never blocks first access to another name. A single proxy-wide
        # lock could deadlock against a thread that holds an import lock and touches a new name.
        self.locks: dict[str, threading.RLock] = {}
        self.resolving: set[str] = set()
        # Names whose value came from the resolver; reload forgets exactly these.
        self.resolved: set[str] = set()
        # Set by ProxyLoader.create_module so the following exec_module knows it is not a reload.
        self.fresh = False
        # Names to seal with on the first attribute miss (see seal_on_first_use).
        self.pending_seal: tuple[str, ...] | Callable[[], Iterable[str]] | None = None
        # Whether every advertised name has been resolved (see fill); a reload clears it.
        self.complete = False
        self.filling: set[int] = set()  # threads running fill()
        # The module attributes set at construction, restored when a reload is refused.
        self.presets: dict[str, Any] = {}

    def missing(self, attr: str, detail: str = "") -> AttributeError:
        message = f"module {self.name!r} has no attribute {attr!r}"
        if detail:
            message = f"{message}: {detail}"
        err = AttributeError(message)
        # Same fields CPython fills in; they drive the "Did you mean ...?" hint (via dir()).
        err.name = attr
        err.obj = self.module
        return err

    def getattr(self, attr: str) -> Any:
        # Import machinery and tools probe dunders (__path__, __file__, __wrapped__, ...). They
        # are never forwarded: pre-set them through ``attrs`` instead.
        # Kept lean: every ``from proxy import X`` probes ``__path__`` and lands here.
        if _is_dunder(attr):
            raise AttributeError(f"module {self.name!r} has no attribute {attr!r}")
        pending = self.pending_seal
        if pending is not None:
            # No proxy-wide lock (it could deadlock against import locks): a thread that misses
            # while another seals resolves its name the ordinary way, under that name's lock.
            self.pending_seal = None
            seal(self.module, pending() if callable(pending) else pending)
            value = self.namespace.get(attr, _UNSET)
            if value is _UNSET:
                raise self.missing(attr)
            return value
        lock = self.locks.get(attr)
        if lock is None:
            lock = self.locks.setdefault(attr, threading.RLock())
        with lock:
            # Another thread may have published the value while we waited for the lock.
            value = self.namespace.get(attr, _UNSET)
            if value is not _UNSET:
                return value
            if attr in self.resolving:
                # Only the thread holding the lock can get here, so this is the resolver asking
                # for the name it is resolving.
                raise self.missing(attr, "circular resolution (the resolver asked for it)")
            self.resolving.add(attr)
            try:
                value = self.resolver(attr)
            except AttributeError as exc:
                raise self.missing(attr, str(exc)) from exc
            finally:
                self.resolving.discard(attr)
            # setdefault: an explicit assignment made while the resolver ran wins over its result.
            stored = self.namespace.setdefault(attr, value)
            if stored is value:
                self.resolved.add(attr)
        # Later lookups hit the namespace and never come here, so the lock can go. A failed name
        # keeps its lock: retries of it then stay serialised on one lock.
        self.locks.pop(attr, None)
        return stored

    def fill(self) -> None:
        """Resolve every advertised name not yet in the namespace (those that fail stay out), or
        seal now when a seal is pending: whole-namespace readers then see every name."""
        if self.complete:
            return
        me = threading.get_ident()
        if me in self.filling:
            return  # a resolver of this fill reads vars() of this proxy: it gets it as it is
        # No proxy-wide lock (see getattr): a concurrent reader fills too, and the per-name locks
        # resolve each name once; both get the complete namespace.
        self.filling.add(me)
        try:
            pending = self.pending_seal
            if pending is not None:
                self.pending_seal = None
                seal(self.module, pending() if callable(pending) else pending)
            elif self.names is not None:
                for attr in self.names():
                    if attr not in self.namespace and not _is_dunder(attr):
                        try:
                            self.getattr(attr)
                        except AttributeError:
                            pass
            self.complete = True
        finally:
            self.filling.discard(me)

    def refuse_reload(self) -> None:
        """Called when another finder's loader starts running module source in the namespace (a
        reload that ``sys.meta_path`` sent past the proxy's finder): undo what the import system
        already replaced and refuse, rather than let the source overwrite the proxy's names."""
        namespace = self.namespace
        loader = namespace.get("__loader__")
        for attr in [a for a in namespace if _is_dunder(a) and a not in self.presets]:
            del namespace[attr]
        namespace.update(self.presets)
        raise ImportError(
            f"reload of {self.name!r} refused: the finder that answered it (its loader is "
            f"{loader!r}) comes before torchada_hooks' ProxyFinder in sys.meta_path, and running "
            f"{self.name}'s source again would replace the proxy's redirected names with the "
            f"originals. {self.name} is unchanged. Move the ProxyFinder to the front of "
            "sys.meta_path before reloading, or do not reload a redirected module.",
            name=self.name,
        )

    def dir(self) -> list[str]:
        names = set(self.namespace)
        if self.names is not None:
            names.update(self.names())
        return sorted(names)

    def forget_resolved(self) -> None:
        for attr in self.resolved:
            self.namespace.pop(attr, None)
        self.resolved.clear()
        self.complete = False


def _guarded_import(
    name: str,
    globals: Mapping[str, Any] | None = None,
    locals: Mapping[str, Any] | None = None,
    fromlist: Iterable[str] = (),
    level: int = 0,
) -> types.ModuleType:
    # Only code run with a proxy's own namespace as its globals gets here with it: a loader that
    # re-executes the module's source over the proxy (see _Resolution.refuse_reload).
    if globals is not None:
        module = sys.modules.get(globals.get("__name__"))  # type: ignore[arg-type]
        try:
            resolution = _STATES.get(module)  # type: ignore[arg-type]
        except TypeError:  # not weak-referenceable, so not a proxy
            resolution = None
        if resolution is not None and resolution.namespace is globals:
            resolution.refuse_reload()
    return builtins.__import__(name, globals, locals, fromlist, level)


# The ``__builtins__`` of every proxy namespace. Module source executed in that namespace (a reload
# through another finder's loader) reaches its first import through this ``__import__``; no other
# code runs with a proxy's namespace as its globals.
_GUARDED_BUILTINS: dict[str, Any] = {**vars(builtins), "__import__": _guarded_import}


class ProxyModule(types.ModuleType):
    """A module whose attributes come lazily from ``resolver(name)``.

    Args:
        name: full module name, e.g. ``"pkg.sub"``.
        resolver: called with an attribute name on the first access of that name; returns the
            value or raises :class:`AttributeError` (its message is kept in the error the proxy
            raises). It runs at most once per name as long as it succeeds; the result is cached in
            the module ``__dict__``. Dunder names are never passed to it.
        names: optional callable returning the names to advertise in ``dir()`` (merged with the
            names already in the module ``__dict__``).
        attrs: attributes to pre-set, e.g. ``__file__``, ``__doc__``, ``__all__`` or ``__path__``
            (the latter only with ``is_package=True``). They are never re-resolved.
            ``__builtins__`` is the proxy's own: it refuses a reload that would run the module's
            source over the proxy (see :class:`ProxyLoader`).
        is_package: give the proxy a ``__path__`` (``[]`` unless ``attrs`` supplies one) so that
            registered child proxies can be imported below it.

    The class defines no public methods on purpose: any method name would shadow the target
    attribute of the same name. Everything else lives in private slots or module-level helpers.

    Reading the namespace whole (``vars(proxy)``, ``proxy.__dict__``, ``from proxy import *``)
    first resolves every name ``names()`` advertises (names whose resolution fails stay out), so
    such readers see the complete module; a pending :func:`seal_on_first_use` seals then.
    ``dir(proxy)`` lists those names without resolving them. Attribute reads never pay for this.

    Raises TypeError when ``resolver`` or ``names`` is not callable, and ValueError when
    ``attrs`` pre-sets an attribute the import system owns (``__name__``, ``__spec__``,
    ``__loader__``, ``__package__``, ``__getattr__``, ``__dir__``) or ``__path__`` without
    ``is_package=True``.

    Example::

        >>> from torchada_hooks import ProxyModule
        >>> def resolve(name):
        ...     if name == "answer":
        ...         return 42
        ...     raise AttributeError("only 'answer' is known")
        >>> proxy = ProxyModule("demo_proxy", resolve, names=lambda: ["answer"])
        >>> proxy.answer, "answer" in vars(proxy)
        (42, True)
        >>> proxy.other
        Traceback (most recent call last):
        AttributeError: module 'demo_proxy' has no attribute 'other': only 'answer' is known
        >>> "answer" in dir(proxy)
        True
    """

    @property  # type: ignore[misc]  # replaces ModuleType's member descriptor of that name
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        namespace = _module_dict(self)
        resolution = _STATES.get(self)
        if resolution is not None and not resolution.complete:
            # The frame that asked: vars(), dir() and star imports are C code, no frame of theirs.
            if not (_PEEKERS and _peeking(sys._getframe(1).f_globals)):
                resolution.fill()
        return namespace

    def __dir__(self) -> list[str]:
        # What ModuleType's own __dir__ does, minus its read of __dict__ (the property above):
        # dir() lists the advertised names without resolving them.
        namespace = _module_dict(self)
        hook = namespace.get("__dir__")
        return list(hook()) if callable(hook) else sorted(namespace)

    # No __slots__: a sealed proxy becomes a plain ``types.ModuleType``, which requires the same
    # object layout. Per-proxy state lives in ``_STATES`` instead.

    def __init__(
        self,
        name: str,
        resolver: Resolver,
        *,
        names: NamesProvider | None = None,
        attrs: Mapping[str, Any] | None = None,
        is_package: bool = False,
    ) -> None:
        super().__init__(name)
        if not callable(resolver):
            raise TypeError(f"resolver must be callable, got {resolver!r}")
        if names is not None and not callable(names):
            raise TypeError(f"names must be a callable returning names, got {names!r}")
        attrs = dict(attrs or {})
        reserved = _RESERVED_ATTRS.intersection(attrs)
        if reserved:
            raise ValueError(f"cannot pre-set import-system attributes {sorted(reserved)}")
        if "__path__" in attrs and not is_package:
            raise ValueError("__path__ given for a proxy that is not a package (is_package=False)")

        spec = ModuleSpec(name, _LOADER, loader_state=self, is_package=is_package)
        # The import statement checks this flag on every ``import``/``from ... import`` of a
        # module in sys.modules; a spec without it takes a slow failed-lookup path each time.
        # The import system sets it to False after loading; proxies swapped in never get there.
        spec._initializing = False
        namespace = _module_dict(self)
        if is_package:
            path = list(attrs.pop("__path__", []))
            spec.submodule_search_locations = path
            namespace["__path__"] = path
        resolution = _Resolution(self, spec, resolver, names)
        _STATES[self] = resolution
        namespace["__spec__"] = spec
        namespace["__loader__"] = _LOADER
        namespace["__package__"] = spec.parent
        namespace["__getattr__"] = resolution.getattr
        namespace["__dir__"] = resolution.dir
        namespace.update(attrs)
        namespace["__builtins__"] = _GUARDED_BUILTINS
        resolution.presets = {a: v for a, v in namespace.items() if _is_dunder(a)}

    def __repr__(self) -> str:
        return f"<module {_module_dict(self).get('__name__', '?')!r} (proxy)>"


_STATES: "weakref.WeakKeyDictionary[types.ModuleType, _Resolution]" = weakref.WeakKeyDictionary()


def _resolution(module: types.ModuleType) -> _Resolution:
    try:
        return _STATES[module]
    except KeyError:
        raise TypeError(f"expected a proxy module, got {module!r}") from None


def proxy_spec(module: types.ModuleType) -> ModuleSpec:
    """Return the spec a proxy was created with (``__spec__`` may have been replaced by users).

    Its loader is the :class:`ProxyLoader` and its ``loader_state`` the proxy itself.

    Raises TypeError when ``module`` is not a proxy.

    Example::

        >>> from torchada_hooks import ProxyModule, proxy_spec
        >>> proxy = ProxyModule("demo_pkg.demo_proxy", str.upper)
        >>> spec = proxy_spec(proxy)
        >>> spec.name, spec.parent, spec.loader_state is proxy
        ('demo_pkg.demo_proxy', 'demo_pkg', True)
    """
    return _resolution(module).spec


def is_sealed(module: types.ModuleType) -> bool:
    """Whether ``module`` is a proxy that :func:`seal` has turned into a plain module.

    Example::

        >>> import json
        >>> from torchada_hooks import ProxyModule, is_sealed, seal
        >>> proxy = ProxyModule("demo_proxy", str.upper)
        >>> is_sealed(proxy), is_sealed(json)
        (False, False)
        >>> seal(proxy, ["x"])
        []
        >>> is_sealed(proxy)
        True
    """
    return module in _STATES and type(module) is types.ModuleType


def seal(module: ProxyModule, names: Iterable[str]) -> list[str]:
    """Resolve ``names`` now and turn the proxy into a plain :class:`types.ModuleType`.

    CPython only takes its fast attribute path on exact module objects with no ``__getattr__``
    in their namespace; a sealed proxy is one, so every attribute read costs what it costs on any
    module. The price: names not resolved here no longer resolve later (they raise the usual
    AttributeError). Returns the names that could not be resolved. Reload of a sealed proxy keeps
    its values.

    Raises TypeError when ``module`` is not a proxy.

    Example::

        >>> import types
        >>> from torchada_hooks import ProxyModule, seal
        >>> def resolve(name):
        ...     if name in ("a", "b"):
        ...         return name * 2
        ...     raise AttributeError(name)
        >>> proxy = ProxyModule("demo_proxy", resolve)
        >>> seal(proxy, ["a", "b", "c"])
        ['c']
        >>> type(proxy) is types.ModuleType, proxy.b
        (True, 'bb')
        >>> proxy.c
        Traceback (most recent call last):
        AttributeError: module 'demo_proxy' has no attribute 'c'
    """
    resolution = _resolution(module)
    missing = []
    for name in names:
        if name in resolution.namespace:
            continue
        try:
            resolution.getattr(name)
        except AttributeError:
            missing.append(name)
    resolution.namespace.pop("__getattr__", None)
    resolution.presets.pop("__getattr__", None)
    module.__class__ = types.ModuleType
    return missing


def seal_on_first_use(
    module: ProxyModule, names: Iterable[str] | Callable[[], Iterable[str]]
) -> None:
    """:func:`seal` the proxy with ``names`` at its first attribute miss rather than now.

    Installing stays cheap, a program pays for the modules it touches, and from the first access
    on the proxy is the same plain module :func:`seal` makes. ``names`` may be a callable that
    returns them, called at that first miss (listing them can cost more than installing).

    Raises TypeError when ``module`` is not a proxy.

    Example::

        >>> from torchada_hooks import ProxyModule, is_sealed, seal_on_first_use
        >>> proxy = ProxyModule("demo_proxy", str.upper)
        >>> seal_on_first_use(proxy, ["x", "y"])
        >>> is_sealed(proxy)
        False
        >>> proxy.x
        'X'
        >>> is_sealed(proxy), proxy.y
        (True, 'Y')
    """
    _resolution(module).pending_seal = names if callable(names) else tuple(names)


def resolve_unsealed(module: types.ModuleType, attr: str, default: Any = None) -> Any:
    """``getattr(module, attr, default)``, without setting off a proxy's pending seal.

    A proxy waiting to be sealed at its first use (:func:`seal_on_first_use`) would resolve
    every name at this read. Bookkeeping that needs a few names early (to register them with a
    tracer, say) reads them here instead: each is resolved and cached as a first use would, and
    the seal waits for the program's own first use, which keeps the values resolved here. For
    any other module (a plain one, a sealed proxy) this is ``getattr``.

    Example::

        >>> from torchada_hooks import ProxyModule, is_sealed, seal_on_first_use
        >>> from torchada_hooks.proxy import resolve_unsealed
        >>> proxy = ProxyModule("demo_proxy", str.upper)
        >>> seal_on_first_use(proxy, ["x", "y"])
        >>> resolve_unsealed(proxy, "x"), is_sealed(proxy)
        ('X', False)
        >>> proxy.y, is_sealed(proxy), proxy.x
        ('Y', True, 'X')
    """
    resolution = _STATES.get(module) if type(module) is ProxyModule else None
    if resolution is None:
        return getattr(module, attr, default)
    value = resolution.namespace.get(attr, _UNSET)
    if value is not _UNSET:
        return value
    pending, resolution.pending_seal = resolution.pending_seal, None
    try:
        return resolution.getattr(attr)
    except AttributeError:
        return default
    finally:
        # A seal another thread started meanwhile is done; otherwise the program's first use
        # still seals.
        if resolution.pending_seal is None and type(module) is ProxyModule:
            resolution.pending_seal = pending


class ProxyLoader:
    """Loader for proxy specs: the module already exists, so loading hands it out.

    ``exec_module`` right after ``create_module`` is a no-op (first import). Any other
    ``exec_module`` comes from :func:`importlib.reload`; it forgets every resolved attribute so the
    next access resolves it again. Pre-set attributes, attributes assigned by users and child
    modules bound by the import system are kept, and the proxy object stays the same.

    A reload that another finder ahead of the proxies' one answers would run the original source
    over the proxy; it is refused with an ImportError that names the module, the proxy unchanged.

    Every proxy's spec carries the one instance (see :func:`proxy_spec`).

    Example::

        >>> import importlib, sys
        >>> from torchada_hooks import ImportHooks, ProxyModule
        >>> hooks = ImportHooks()
        >>> proxy = hooks.register("demo_proxy", ProxyModule("demo_proxy", lambda name: object()))
        >>> hooks.install()
        >>> import demo_proxy
        >>> first = demo_proxy.value
        >>> importlib.reload(demo_proxy) is proxy, demo_proxy.value is first
        (True, False)
        >>> hooks.uninstall()
    """

    def create_module(self, spec: ModuleSpec) -> ProxyModule:
        """The proxy ``spec`` carries (the import system calls this on first import).

        Raises TypeError when ``spec`` does not carry a proxy.

        Example::

            >>> from torchada_hooks import ProxyModule, proxy_spec
            >>> proxy = ProxyModule("demo_proxy", str.upper)
            >>> spec = proxy_spec(proxy)
            >>> spec.loader.create_module(spec) is proxy
            True
        """
        module = spec.loader_state
        if module not in _STATES:
            raise TypeError(f"spec for {spec.name!r} does not carry a proxy module")
        _resolution(module).fresh = True
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing right after :meth:`create_module`; otherwise (a reload) forget the values the
        resolver gave, unless the proxy is sealed.

        Raises TypeError when ``module`` is not a proxy.

        Example::

            >>> from torchada_hooks import ProxyModule, proxy_spec
            >>> proxy = ProxyModule("demo_proxy", str.upper)
            >>> proxy.x
            'X'
            >>> proxy_spec(proxy).loader.exec_module(proxy)  # as importlib.reload does
            >>> "x" in vars(proxy)
            False
        """
        if module not in _STATES:
            raise TypeError(f"{type(self).__name__} can only execute proxy modules, got {module!r}")
        resolution = _resolution(module)
        if resolution.fresh:
            resolution.fresh = False
            return
        if is_sealed(module):
            return  # nothing can be re-resolved without __getattr__: keep the values
        resolution.forget_resolved()

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


_LOADER = ProxyLoader()
