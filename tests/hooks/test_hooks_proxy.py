"""ProxyModule on its own: lazy resolution, caching, errors, dunders, threads, dir()."""

from __future__ import annotations

import inspect
import threading
import time
import types
from collections import Counter

import pytest

from torchada_hooks import ProxyModule, proxy_spec


class CountingResolver:
    """Resolves names from a table (fresh object per call for "fresh"), counting every call."""

    def __init__(self, table=None, delay: float = 0.0):
        self.table = dict(table or {})
        self.delay = delay
        self.calls: Counter = Counter()
        self._lock = threading.Lock()

    def __call__(self, name: str):
        with self._lock:
            self.calls[name] += 1
        if self.delay:
            time.sleep(self.delay)
        if name == "fresh":
            return object()
        try:
            return self.table[name]
        except KeyError:
            raise AttributeError(f"{name!r} has no counterpart in the target backend") from None


def test_is_a_module_type():
    proxy = ProxyModule("fake.mod", CountingResolver())
    assert isinstance(proxy, types.ModuleType)
    assert issubclass(type(proxy), types.ModuleType)
    assert proxy.__name__ == "fake.mod"
    assert repr(proxy) == "<module 'fake.mod' (proxy)>"


def test_first_access_resolves_and_caches_in_dict():
    value = object()
    resolver = CountingResolver({"thing": value})
    proxy = ProxyModule("fake.mod", resolver)
    assert "thing" not in vars(proxy)
    assert resolver.calls["thing"] == 0

    assert proxy.thing is value
    assert resolver.calls["thing"] == 1
    # Cached as a plain module attribute: the next access never reaches the resolver.
    assert vars(proxy)["thing"] is value
    for _ in range(5):
        assert proxy.thing is value
    assert getattr(proxy, "thing") is value  # noqa: B009 - the builtin path, not bytecode
    assert resolver.calls["thing"] == 1


def test_cached_access_does_not_call_getattr_hook():
    resolver = CountingResolver({"thing": 1})
    proxy = ProxyModule("fake.mod", resolver)
    assert proxy.thing == 1
    hook_calls = []
    original = vars(proxy)["__getattr__"]

    def spy(name):
        hook_calls.append(name)
        return original(name)

    vars(proxy)["__getattr__"] = spy
    assert proxy.thing == 1
    assert hook_calls == []
    with pytest.raises(AttributeError):
        _ = proxy.unknown
    assert hook_calls == ["unknown"]


def test_fresh_object_is_resolved_once():
    resolver = CountingResolver()
    proxy = ProxyModule("fake.mod", resolver)
    first = proxy.fresh
    assert proxy.fresh is first
    assert resolver.calls["fresh"] == 1


def test_attribute_error_names_module_attr_and_keeps_resolver_message():
    resolver = CountingResolver()
    proxy = ProxyModule("fake.mod", resolver)
    with pytest.raises(AttributeError) as info:
        _ = proxy.missing_thing
    message = str(info.value)
    assert "'fake.mod'" in message
    assert "'missing_thing'" in message
    assert "has no counterpart in the target backend" in message
    assert isinstance(info.value.__cause__, AttributeError)
    assert "no counterpart" in str(info.value.__cause__)
    assert info.value.name == "missing_thing"
    assert info.value.obj is proxy


def test_failed_resolution_is_not_cached():
    resolver = CountingResolver()
    proxy = ProxyModule("fake.mod", resolver)
    assert not hasattr(proxy, "later")
    assert "later" not in vars(proxy)
    resolver.table["later"] = 42
    assert proxy.later == 42
    assert resolver.calls["later"] == 2


def test_getattr_default_and_hasattr():
    proxy = ProxyModule("fake.mod", CountingResolver({"a": 1}))
    assert getattr(proxy, "nope", "dflt") == "dflt"
    assert hasattr(proxy, "a")
    assert not hasattr(proxy, "nope")


def test_other_resolver_errors_propagate_unchanged():
    def resolver(name):
        raise ImportError("backend not installed")

    proxy = ProxyModule("fake.mod", resolver)
    with pytest.raises(ImportError, match="backend not installed"):
        _ = proxy.anything
    assert "anything" not in vars(proxy)


@pytest.mark.parametrize(
    "dunder",
    ["__file__", "__path__", "__wrapped__", "__all__", "__getstate__", "__version__", "__foo__"],
)
def test_unknown_dunders_never_reach_resolver(dunder):
    resolver = CountingResolver({dunder: "should not be used"})
    proxy = ProxyModule("fake.mod", resolver)
    value = getattr(proxy, dunder, None)
    assert resolver.calls == Counter()
    assert value != "should not be used"
    assert dunder not in vars(proxy)


def test_unknown_dunder_error_message():
    proxy = ProxyModule("fake.mod", CountingResolver())
    with pytest.raises(AttributeError, match=r"module 'fake.mod' has no attribute '__wrapped__'"):
        _ = proxy.__wrapped__


def test_introspection_does_not_recurse_or_resolve():
    resolver = CountingResolver({"f": len})
    proxy = ProxyModule("fake.mod", resolver)
    assert inspect.unwrap(proxy) is proxy
    assert inspect.ismodule(proxy)
    assert resolver.calls == Counter()


def test_single_underscore_names_are_resolved():
    resolver = CountingResolver({"_private": 7})
    proxy = ProxyModule("fake.mod", resolver)
    assert proxy._private == 7
    assert resolver.calls["_private"] == 1


def test_circular_resolution_raises_attribute_error():
    proxy = None

    def resolver(name):
        return getattr(proxy, name)  # asks for itself

    proxy = ProxyModule("fake.mod", resolver)
    with pytest.raises(AttributeError, match="circular"):
        _ = proxy.loop
    assert "loop" not in vars(proxy)


def test_resolver_may_use_other_names_of_the_same_proxy():
    proxy = None

    def resolver(name):
        if name == "outer":
            return ("outer", proxy.inner)
        if name == "inner":
            return "inner"
        raise AttributeError(name)

    proxy = ProxyModule("fake.mod", resolver)
    assert proxy.outer == ("outer", "inner")
    assert vars(proxy)["inner"] == "inner"


def test_thread_safe_first_access_one_resolution_same_object():
    resolver = CountingResolver(delay=0.05)
    proxy = ProxyModule("fake.mod", resolver)
    n = 16
    barrier = threading.Barrier(n)
    results = [None] * n

    def worker(i):
        barrier.wait()
        results[i] = proxy.fresh  # a failing thread leaves None behind

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[0] is not None
    assert all(r is results[0] for r in results)
    assert resolver.calls["fresh"] == 1


def test_thread_safe_first_access_many_names():
    table = {f"n{i}": i for i in range(8)}

    class Fresh(CountingResolver):
        def __call__(self, name):
            super().__call__(name)
            return [self.table[name]]  # new object per call: identity exposes double resolution

    resolver = Fresh(table, delay=0.01)
    proxy = ProxyModule("fake.mod", resolver)
    n = 16
    barrier = threading.Barrier(n)
    results = {}
    lock = threading.Lock()

    def worker(i):
        barrier.wait()
        got = [getattr(proxy, name) for name in table]
        with lock:
            results[i] = got

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(resolver.calls[name] == 1 for name in table)
    first = results[0]
    for got in results.values():
        assert all(a is b for a, b in zip(got, first))


def test_dir_merges_cached_preset_and_provider_names():
    resolver = CountingResolver({"cached": 1, "listed": 2})
    proxy = ProxyModule(
        "fake.mod",
        resolver,
        names=lambda: ["listed", "also_listed"],
        attrs={"preset": 3, "__file__": "<fake>"},
    )
    assert proxy.cached == 1
    names = dir(proxy)
    assert names == sorted(names)
    for name in ("cached", "listed", "also_listed", "preset", "__file__", "__name__"):
        assert name in names
    # dir() only lists; it resolves nothing.
    assert resolver.calls == Counter({"cached": 1})


def test_dir_without_provider_lists_namespace():
    proxy = ProxyModule("fake.mod", CountingResolver({"x": 1}))
    assert "x" not in dir(proxy)
    assert proxy.x == 1
    assert "x" in dir(proxy)


def test_preset_attrs_are_kept_and_not_resolved():
    resolver = CountingResolver()
    proxy = ProxyModule(
        "fake.mod",
        resolver,
        attrs={"__file__": "/virtual/mod.py", "__doc__": "Docs.", "__all__": ["a"], "plain": 1},
    )
    assert proxy.__file__ == "/virtual/mod.py"
    assert proxy.__doc__ == "Docs."
    assert proxy.__all__ == ["a"]
    assert proxy.plain == 1
    assert resolver.calls == Counter()


def test_module_spec_attributes():
    pkg = ProxyModule("fake.pkg", CountingResolver(), is_package=True)
    mod = ProxyModule("fake.pkg.mod", CountingResolver())
    assert pkg.__path__ == []
    assert pkg.__package__ == "fake.pkg"
    assert pkg.__spec__ is proxy_spec(pkg)
    assert pkg.__spec__.name == "fake.pkg"
    assert pkg.__spec__.submodule_search_locations is pkg.__path__
    assert pkg.__loader__ is pkg.__spec__.loader
    assert mod.__package__ == "fake.pkg"
    assert mod.__spec__.submodule_search_locations is None
    assert not hasattr(mod, "__path__")
    top = ProxyModule("fake", CountingResolver())
    assert top.__package__ == ""


def test_package_path_can_be_preset():
    path = ["/somewhere"]
    pkg = ProxyModule("fake.pkg", CountingResolver(), is_package=True, attrs={"__path__": path})
    assert pkg.__path__ == ["/somewhere"]
    assert pkg.__spec__.submodule_search_locations is pkg.__path__


@pytest.mark.parametrize("reserved", ["__name__", "__spec__", "__loader__", "__getattr__"])
def test_reserved_attrs_rejected(reserved):
    with pytest.raises(ValueError, match=reserved):
        ProxyModule("fake.mod", CountingResolver(), attrs={reserved: None})


def test_path_without_package_rejected():
    with pytest.raises(ValueError, match="__path__"):
        ProxyModule("fake.mod", CountingResolver(), attrs={"__path__": []})


def test_bad_arguments_rejected():
    with pytest.raises(TypeError):
        ProxyModule("fake.mod", "not callable")
    with pytest.raises(TypeError):
        ProxyModule("fake.mod", CountingResolver(), names=["not", "callable"])


def test_user_assignment_wins_and_delete_re_resolves():
    resolver = CountingResolver({"x": "from-resolver"})
    proxy = ProxyModule("fake.mod", resolver)
    proxy.x = "patched"
    assert proxy.x == "patched"
    assert resolver.calls["x"] == 0
    del proxy.x
    assert proxy.x == "from-resolver"
    assert resolver.calls["x"] == 1


def test_assignment_during_resolution_wins():
    proxy = None

    def resolver(name):
        proxy.x = "assigned"
        return "resolved"

    proxy = ProxyModule("fake.mod", resolver)
    assert proxy.x == "assigned"
    assert vars(proxy)["x"] == "assigned"


def test_no_public_method_shadows_target_names():
    # Any public attribute on the class would hide the target's attribute of the same name.
    public = [n for n in vars(ProxyModule) if not n.startswith("_")]
    assert public == []
    resolver = CountingResolver({"reset": "target-reset", "name": "target-name"})
    proxy = ProxyModule("fake.mod", resolver)
    assert proxy.reset == "target-reset"
    assert proxy.name == "target-name"
