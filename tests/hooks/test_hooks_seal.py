"""Sealing: a proxy turned into a plain module after resolving a known set of names."""

import importlib
import sys
import threading
import types

import pytest

from torchada_hooks import (
    ImportHooks,
    ProxyModule,
    is_sealed,
    resolve_unsealed,
    seal,
    seal_on_first_use,
)


def _recording_resolver(make=lambda name: [name]):
    """A resolver that records every name it is asked for and refuses "bad", with its calls."""
    calls = []

    def resolver(name):
        calls.append(name)
        if name == "bad":
            raise AttributeError("no such thing")
        return make(name)

    return calls, resolver


def test_seal_resolves_names_and_becomes_plain_module():
    calls, resolver = _recording_resolver(str.upper)
    proxy = ProxyModule("sealpkg_a", resolver)
    assert proxy.early == "EARLY"
    missing = seal(proxy, ["early", "late", "bad"])
    assert missing == ["bad"]
    assert type(proxy) is types.ModuleType and is_sealed(proxy)
    assert proxy.late == "LATE" and calls == ["early", "late", "bad"]
    assert "__getattr__" not in proxy.__dict__
    with pytest.raises(AttributeError, match="sealpkg_a"):
        proxy.unknown  # no lazy resolution after sealing
    assert calls == ["early", "late", "bad"]


def test_sealed_proxy_stays_importable_reloadable_and_undoable():
    hooks = ImportHooks()
    proxy = ProxyModule("sealpkg_b", lambda n: 42)
    hooks.register("sealpkg_b", proxy)
    hooks.install()
    try:
        seal(proxy, ["x"])
        import sealpkg_b

        assert sealpkg_b is proxy and sealpkg_b.x == 42
        assert importlib.reload(sealpkg_b) is proxy and proxy.x == 42
    finally:
        hooks.uninstall()
    assert "sealpkg_b" not in sys.modules


def test_seal_on_first_use_costs_nothing_until_the_first_miss():
    calls, resolver = _recording_resolver()
    proxy = ProxyModule("sealpkg_c", resolver)
    seal_on_first_use(proxy, ["a", "b", "bad"])
    assert calls == [] and not is_sealed(proxy)
    with pytest.raises(AttributeError):
        proxy.__wrapped__  # dunder probes by tools do not trigger the seal
    assert calls == []
    first = proxy.b
    assert first == ["b"] and sorted(calls) == ["a", "b", "bad"]
    assert type(proxy) is types.ModuleType and is_sealed(proxy)
    assert proxy.b is first and proxy.a == ["a"]
    with pytest.raises(AttributeError, match="sealpkg_c"):
        proxy.bad
    with pytest.raises(AttributeError, match="sealpkg_c"):
        proxy.unknown  # as after seal(): names outside the list do not resolve
    assert sorted(calls) == ["a", "b", "bad"]


def test_seal_on_first_use_from_many_threads_resolves_each_name_once():
    calls = []
    names = [f"n{i}" for i in range(50)]

    def resolver(name):
        calls.append(name)
        return object()

    proxy = ProxyModule("sealpkg_d", resolver)
    seal_on_first_use(proxy, names)
    barrier = threading.Barrier(8)
    seen = [None] * 8

    def touch(i):
        barrier.wait()
        seen[i] = [getattr(proxy, n) for n in reversed(names)]

    threads = [threading.Thread(target=touch, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(calls) == sorted(names)  # every name resolved exactly once
    assert all(s == seen[0] for s in seen) and all(a is b for a, b in zip(seen[0], seen[1]))
    assert is_sealed(proxy)


def test_seal_on_first_use_lists_names_from_a_callable_at_the_first_miss():
    listed = []

    def names():
        listed.append(1)
        return ["a", "b"]

    proxy = ProxyModule("sealpkg_e", lambda name: name * 2)
    seal_on_first_use(proxy, names)
    assert listed == [] and not is_sealed(proxy)
    assert proxy.b == "bb" and listed == [1]
    assert is_sealed(proxy) and proxy.a == "aa" and listed == [1]
    with pytest.raises(AttributeError, match="sealpkg_e"):
        proxy.c


def test_resolve_unsealed_leaves_the_seal_to_the_first_use():
    calls, resolver = _recording_resolver()
    proxy = ProxyModule("sealpkg_f", resolver)
    seal_on_first_use(proxy, ["a", "b", "bad"])
    early = resolve_unsealed(proxy, "a")
    assert early == ["a"] and calls == ["a"] and not is_sealed(proxy)
    assert resolve_unsealed(proxy, "a") is early and calls == ["a"]  # cached, as a first use
    assert resolve_unsealed(proxy, "bad", "fallback") == "fallback" and not is_sealed(proxy)
    assert proxy.b == ["b"] and is_sealed(proxy)  # the program's first use seals
    assert proxy.a is early and sorted(calls) == ["a", "b", "bad", "bad"]
    # A sealed proxy or a plain module: getattr with its default.
    assert resolve_unsealed(proxy, "b") == ["b"] and resolve_unsealed(proxy, "zz", 7) == 7
    assert resolve_unsealed(types, "ModuleType") is types.ModuleType
