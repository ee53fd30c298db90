"""Sealing: a proxy turned into a plain module after resolving a known set of names."""

import importlib
import sys
import types

import pytest

from torchada_hooks import ImportHooks, ProxyModule, is_sealed, seal


def test_seal_resolves_names_and_becomes_plain_module():
    calls = []

    def resolver(name):
        calls.append(name)
        if name == "bad":
            raise AttributeError("no such thing")
        return name.upper()

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
