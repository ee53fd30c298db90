"""A proxy read whole looks like the module: star imports, vars(), __dict__, dir(), getmembers,
and reloads that would run the module's source over it (issue 42). Torch-free."""

from __future__ import annotations

import importlib
import inspect
import sys
import textwrap
import threading
import time
import types
import uuid
from collections import Counter
from importlib.machinery import PathFinder

import pytest

from torchada_hooks import (
    ImportHooks,
    ProxyModule,
    is_sealed,
    own_namespace,
    peek_from,
    proxy_spec,
    seal_on_first_use,
)

TABLE = {"alpha": 1, "beta": 2, "_private": 3, "broken": None}


class Resolver:
    """Resolves TABLE's names (``broken`` fails), counting calls."""

    def __init__(self):
        self.calls: Counter = Counter()

    def __call__(self, name):
        self.calls[name] += 1
        value = TABLE.get(name)
        if value is None:
            raise AttributeError(f"{name!r} has no counterpart")
        return value


@pytest.fixture
def registered():
    """A proxy registered in sys.modules under a fresh name; removed after the test."""
    made = []

    def make(resolver, **kwargs):
        name = f"nsproxy_{uuid.uuid4().hex[:10]}"
        proxy = ProxyModule(name, resolver, names=lambda: sorted(TABLE), **kwargs)
        sys.modules[name] = proxy
        made.append(name)
        return proxy

    yield make
    for name in made:
        sys.modules.pop(name, None)


def star(name):
    namespace = {}
    exec(f"from {name} import *", namespace)  # noqa: S102 - the statement under test
    namespace.pop("__builtins__", None)
    return namespace


def test_star_import_without_all_binds_every_public_name(registered):
    resolver = Resolver()
    proxy = registered(resolver)
    assert star(proxy.__name__) == {"alpha": 1, "beta": 2}
    # Each name resolved once; the failing one stays out, and later reads are dict hits.
    assert resolver.calls == Counter({"alpha": 1, "beta": 1, "_private": 1, "broken": 1})
    assert star(proxy.__name__) == {"alpha": 1, "beta": 2}
    assert proxy.alpha == 1 and resolver.calls["alpha"] == 1


def test_star_import_with_all_binds_all(registered):
    proxy = registered(Resolver(), attrs={"__all__": ["beta", "_private"]})
    assert star(proxy.__name__) == {"beta": 2, "_private": 3}
    assert "__all__" in vars(proxy)


def test_vars_and_dict_are_complete_and_resolve_once(registered):
    resolver = Resolver()
    proxy = registered(resolver)
    assert "alpha" not in own_namespace(proxy)  # nothing resolved at construction
    namespace = vars(proxy)
    assert {"alpha", "beta", "_private"} <= set(namespace) and "broken" not in namespace
    assert proxy.__dict__ is namespace is own_namespace(proxy)
    calls = sum(resolver.calls.values())
    vars(proxy), proxy.__dict__
    assert sum(resolver.calls.values()) == calls
    # The proxy's own dunders are there as on any module.
    assert {"__name__", "__spec__", "__loader__", "__builtins__"} <= set(namespace)


def test_dir_lists_without_resolving_and_getmembers_resolves(registered):
    resolver = Resolver()
    proxy = registered(resolver)
    assert {"alpha", "beta", "_private", "broken"} <= set(dir(proxy))
    assert not resolver.calls
    members = dict(inspect.getmembers(proxy))
    assert members["alpha"] == 1 and members["_private"] == 3 and "broken" not in members


def test_whole_namespace_read_seals_a_pending_seal(registered):
    resolver = Resolver()
    proxy = registered(resolver)
    seal_on_first_use(proxy, lambda: ["alpha", "beta"])
    assert star(proxy.__name__) == {"alpha": 1, "beta": 2}
    assert is_sealed(proxy) and type(proxy) is types.ModuleType


def test_peekers_read_the_namespace_as_it_is(registered):
    resolver = Resolver()
    proxy = registered(resolver)
    peek_from("nspeeker_demo")
    namespace = {"__name__": "nspeeker_demo.sub", "proxy": proxy}
    exec("seen = set(vars(proxy))", namespace)  # noqa: S102 - code of a peeking package
    assert "alpha" not in namespace["seen"] and not resolver.calls
    assert "alpha" in vars(proxy)  # this test module is not a peeker


def test_reload_through_the_proxy_finder_refills(registered):
    resolver = Resolver()
    proxy = registered(resolver)
    hooks = ImportHooks()
    hooks.register(proxy.__name__, proxy)
    hooks.install()
    try:
        assert "alpha" in vars(proxy)
        assert importlib.reload(proxy) is proxy
        assert "alpha" not in own_namespace(proxy)
        assert "alpha" in vars(proxy) and resolver.calls["alpha"] == 2
    finally:
        hooks.uninstall()


@pytest.fixture
def source_module(tmp_path):
    """A real module file ``<name>.py`` on sys.path."""
    name = f"nsreal_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(
            '''
            """The real module."""
            import os

            alpha = "real"
            '''
        )
    )
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    saved_meta_path = list(sys.meta_path)
    yield name
    sys.meta_path[:] = saved_meta_path
    sys.path.remove(str(tmp_path))
    sys.modules.pop(name, None)


class ForeignFinder:
    """A finder put ahead of the proxies' one: answers every name from sys.path."""

    def find_spec(self, name, path=None, target=None):
        return PathFinder.find_spec(name, path, target)


@pytest.mark.parametrize("sealed", [False, True], ids=["lazy", "sealed"])
def test_reload_through_another_finder_is_refused(source_module, sealed):
    proxy = ProxyModule(source_module, Resolver(), attrs={"__doc__": "proxy doc"})
    hooks = ImportHooks()
    hooks.register(source_module, proxy)
    hooks.install()
    try:
        assert importlib.import_module(source_module) is proxy and proxy.alpha == 1
        if sealed:
            seal_on_first_use(proxy, ["alpha"])
            vars(proxy)
            assert is_sealed(proxy)
        before = dict(own_namespace(proxy))
        sys.meta_path.insert(0, ForeignFinder())
        with pytest.raises(ImportError, match=f"reload of {source_module!r} refused") as err:
            importlib.reload(proxy)
        assert "sys.meta_path" in str(err.value)
        # The source stopped at its first import; what the import system replaced is back.
        assert sys.modules[source_module] is proxy and own_namespace(proxy) == before
        assert proxy.alpha == 1 and proxy.__doc__ == "proxy doc"
        assert proxy.__spec__ is proxy_spec(proxy) and proxy.__loader__ is proxy_spec(proxy).loader
    finally:
        hooks.uninstall()


def test_code_run_in_a_copy_of_the_namespace_imports_normally(registered):
    # doctest runs examples in a copy of a module's globals: its imports are not a reload.
    proxy = registered(Resolver())
    globs = dict(vars(proxy))
    exec("import json\nresult = json.dumps(alpha)", globs)  # noqa: S102
    assert globs["result"] == "1"


def test_a_resolver_reading_vars_of_its_proxy_does_not_recurse(registered):
    seen = []

    def resolver(name):
        seen.append(set(vars(proxy)))  # during the fill: the namespace as it is
        return name.upper()

    proxy = registered(resolver)
    assert {"alpha", "beta", "broken"} <= set(vars(proxy)) and proxy.broken == "BROKEN"
    assert len(seen) == len(TABLE)


def test_concurrent_whole_reads_each_see_every_name_resolved_once(registered):
    calls = Counter()

    def resolver(name):
        calls[name] += 1
        time.sleep(0.01)  # widen the window in which both threads fill
        return name

    proxy = registered(resolver)
    results = []
    threads = [threading.Thread(target=lambda: results.append(set(vars(proxy)))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(set(TABLE) <= got for got in results) and len(results) == 4
    assert set(calls.values()) == {1}
