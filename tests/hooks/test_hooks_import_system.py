"""ImportHooks against the real import system, using throw-away packages written to tmp_path."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import textwrap
import threading
import uuid
from collections import Counter

import pytest

from torchada_hooks import ImportHooks, ProxyFinder, ProxyModule, proxy_spec

_MISSING = object()

# Every real module of the fake package logs its execution, so tests can prove it never ran.
_REAL_MODULE = """
from {top} import _log
_log.EXECUTED.append(__name__)
REAL = True
X = "real-x"
"""


class FakePackage:
    """A package ``<top>`` on sys.path with real modules ``sub`` (package), ``sub.child``,
    ``sub.other``, ``plain`` and ``late``, each recording its execution in ``<top>._log``."""

    def __init__(self, root, top):
        self.root = root
        self.top = top
        self.write("__init__.py", "")
        self.write("_log.py", "EXECUTED = []\n")
        for rel in ("sub/__init__.py", "sub/child.py", "sub/other.py", "plain.py", "late.py"):
            self.write(rel, _REAL_MODULE.format(top=top))

    def write(self, rel, text):
        path = self.root / self.top / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        importlib.invalidate_caches()

    def name(self, rel=""):
        return f"{self.top}.{rel}" if rel else self.top

    def executed(self):
        return list(importlib.import_module(self.name("_log")).EXECUTED)


@pytest.fixture
def pkg(tmp_path):
    top = f"hookpkg_{uuid.uuid4().hex[:10]}"
    root = tmp_path / "site"
    fake = FakePackage(root, top)
    saved_meta_path = list(sys.meta_path)
    sys.path.insert(0, str(root))
    try:
        yield fake
    finally:
        sys.path.remove(str(root))
        sys.meta_path[:] = saved_meta_path
        for name in list(sys.modules):
            if name == top or name.startswith(top + "."):
                del sys.modules[name]
        importlib.invalidate_caches()


@pytest.fixture
def hooks():
    created = []

    def make():
        h = ImportHooks()
        created.append(h)
        return h

    first = make()
    first.make = make  # extra registries for the stacking test
    try:
        yield first
    finally:
        for h in reversed(created):
            h.uninstall()


class TableResolver:
    """Resolves any non-``missing*`` name to a fresh object and counts calls."""

    def __init__(self):
        self.calls = Counter()

    def __call__(self, attr):
        self.calls[attr] += 1
        if attr.startswith("missing"):
            raise AttributeError(f"{attr} is deliberately unsupported")
        return ["resolved", attr]


def make_proxy(name, **kwargs):
    resolver = TableResolver()
    proxy = ProxyModule(name, resolver, **kwargs)
    proxy_resolver = resolver
    return proxy, proxy_resolver


def run(code):
    namespace = {}
    exec(textwrap.dedent(code), namespace)  # noqa: S102 - the import statements under test
    return namespace


# --- falling through when not installed / not registered -------------------------------------


def test_registered_but_not_installed_falls_through(pkg, hooks):
    proxy, _ = make_proxy(pkg.name("sub"), is_package=True)
    hooks.register(pkg.name("sub"), proxy)
    assert not hooks.is_installed()
    module = importlib.import_module(pkg.name("sub"))
    assert module is not proxy
    assert module.REAL is True
    assert pkg.executed() == [pkg.name("sub")]


def test_user_module_with_redirected_name_survives_install_cycle(pkg, hooks):
    user_name = f"usermod_{uuid.uuid4().hex[:10]}"
    (pkg.root / f"{user_name}.py").write_text("WHO = 'user'\n")
    importlib.invalidate_caches()
    proxy, _ = make_proxy(user_name)
    hooks.register(user_name, proxy)
    try:
        assert importlib.import_module(user_name).WHO == "user"
        del sys.modules[user_name]
        hooks.install()
        assert importlib.import_module(user_name) is proxy
        hooks.uninstall()
        assert user_name not in sys.modules
        assert importlib.import_module(user_name).WHO == "user"
    finally:
        sys.modules.pop(user_name, None)


def test_finder_ignores_unregistered_names(hooks):
    proxy, _ = make_proxy("some.registered")
    hooks.register("some.registered", proxy)
    finder = hooks.finder
    assert isinstance(finder, ProxyFinder)
    assert finder.find_spec("some.other", None) is None
    assert finder.find_spec("some", None) is None
    assert finder.find_spec("some.registered", None) is proxy_spec(proxy)
    assert not hasattr(finder, "find_module")


# --- import statement forms ------------------------------------------------------------------


def test_import_forms_agree(pkg, hooks):
    proxy, resolver = make_proxy(pkg.name("sub"), is_package=True)
    hooks.register(pkg.name("sub"), proxy)
    hooks.install()
    ns = run(
        f"""
        import {pkg.top}.sub
        import {pkg.top}.sub as alias
        from {pkg.top}.sub import X
        from {pkg.top} import sub
        """
    )
    top = ns[pkg.top]
    assert top.sub is proxy
    assert ns["alias"] is proxy
    assert ns["sub"] is proxy
    assert sys.modules[pkg.name("sub")] is proxy
    assert importlib.import_module(pkg.name("sub")) is proxy
    assert ns["X"] is proxy.X is top.sub.X
    assert ns["X"] == ["resolved", "X"]
    assert resolver.calls["X"] == 1
    assert importlib.util.find_spec(pkg.name("sub")) is proxy.__spec__
    assert pkg.name("sub") not in pkg.executed()


def test_from_import_of_unsupported_name_raises_import_error_with_reason(pkg, hooks):
    proxy, _ = make_proxy(pkg.name("plain"))
    hooks.register(pkg.name("plain"), proxy)
    hooks.install()
    with pytest.raises(ImportError, match="missing_op"):
        run(f"from {pkg.top}.plain import missing_op")
    with pytest.raises(AttributeError, match="deliberately unsupported"):
        run(f"import {pkg.top}.plain\n{pkg.top}.plain.missing_op")


def test_star_import_uses_all(pkg, hooks):
    proxy, resolver = make_proxy(pkg.name("plain"), attrs={"__all__": ["A", "B"]})
    hooks.register(pkg.name("plain"), proxy)
    hooks.install()
    ns = run(f"from {pkg.top}.plain import *")
    assert ns["A"] == ["resolved", "A"]
    assert ns["B"] == ["resolved", "B"]
    assert set(resolver.calls) == {"A", "B"}


def test_registered_child_of_package_proxy(pkg, hooks):
    parent, parent_resolver = make_proxy(pkg.name("sub"), is_package=True)
    child, _ = make_proxy(pkg.name("sub.child"))
    hooks.register(pkg.name("sub"), parent)
    hooks.register(pkg.name("sub.child"), child)
    hooks.install()
    ns = run(
        f"""
        import {pkg.top}.sub.child
        from {pkg.top}.sub import child
        from {pkg.top}.sub.child import X
        """
    )
    assert ns[pkg.top].sub is parent
    assert ns[pkg.top].sub.child is child
    assert ns["child"] is child
    assert ns["X"] is child.X
    assert sys.modules[pkg.name("sub.child")] is child
    # The child is bound by the import system, not produced by the parent's resolver.
    assert parent_resolver.calls["child"] == 0
    assert vars(parent)["child"] is child
    assert pkg.executed() == []


def test_unregistered_child_of_package_proxy_is_not_importable(pkg, hooks):
    parent, _ = make_proxy(pkg.name("sub"), is_package=True)
    hooks.register(pkg.name("sub"), parent)
    hooks.install()
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(pkg.name("sub.other"))
    assert pkg.executed() == []


def test_child_of_non_package_proxy_is_not_importable(pkg, hooks):
    proxy, _ = make_proxy(pkg.name("plain"))
    child, _ = make_proxy(pkg.name("plain.inner"))
    hooks.register(pkg.name("plain"), proxy)
    hooks.register(pkg.name("plain.inner"), child)
    hooks.install()
    with pytest.raises(ModuleNotFoundError, match="not a package"):
        importlib.import_module(pkg.name("plain.inner"))


def test_top_level_proxy_without_real_module(hooks):
    name = f"hookproxy_{uuid.uuid4().hex[:10]}"
    proxy, _ = make_proxy(name)
    hooks.register(name, proxy)
    hooks.install()
    try:
        assert run(f"import {name}")[name] is proxy
        assert run(f"from {name} import thing")["thing"] == ["resolved", "thing"]
    finally:
        hooks.uninstall()
    assert name not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(name)


# --- parent attribute consistency --------------------------------------------------------------


def test_parent_imported_after_install_binds_proxy(pkg, hooks):
    pkg.write("__init__.py", "from . import sub\n")
    proxy, _ = make_proxy(pkg.name("sub"), is_package=True)
    hooks.register(pkg.name("sub"), proxy)
    hooks.install()
    assert pkg.top not in sys.modules
    top = importlib.import_module(pkg.top)
    assert top.sub is proxy
    assert sys.modules[pkg.name("sub")] is proxy
    assert run(f"import {pkg.top}.sub")[pkg.top].sub is proxy
    assert pkg.executed() == []


def test_parent_imported_after_install_child_imported_later(pkg, hooks):
    proxy, _ = make_proxy(pkg.name("late"))
    hooks.register(pkg.name("late"), proxy)
    hooks.install()
    top = importlib.import_module(pkg.top)
    assert "late" not in vars(top)
    ns = run(f"import {pkg.top}.late")
    assert top.late is proxy
    assert ns[pkg.top].late is proxy
    assert sys.modules[pkg.name("late")] is proxy


def test_already_imported_modules_are_swapped_in_both_places(pkg, hooks):
    real_top = importlib.import_module(pkg.top)
    real_sub = importlib.import_module(pkg.name("sub"))
    real_child = importlib.import_module(pkg.name("sub.child"))
    assert real_top.sub is real_sub and real_sub.child is real_child
    parent, _ = make_proxy(pkg.name("sub"), is_package=True)
    child, _ = make_proxy(pkg.name("sub.child"))
    hooks.register(pkg.name("sub.child"), child)
    hooks.register(pkg.name("sub"), parent)
    hooks.install()

    assert sys.modules[pkg.name("sub")] is parent
    assert sys.modules[pkg.name("sub.child")] is child
    assert real_top.sub is parent
    assert parent.child is child
    ns = run(
        f"""
        import {pkg.top}.sub.child
        from {pkg.top}.sub import X
        from {pkg.top}.sub.child import X as CX
        """
    )
    assert ns[pkg.top].sub.child is child
    assert ns["X"] is parent.X and ns["X"] == ["resolved", "X"]
    assert ns["CX"] is child.X
    # The replaced real modules are left as they were.
    assert real_sub.child is real_child
    assert real_sub.X == "real-x"


def test_register_after_install_swaps_present_names_immediately(pkg, hooks):
    hooks.install()
    real = importlib.import_module(pkg.name("plain"))
    top = sys.modules[pkg.top]
    proxy, _ = make_proxy(pkg.name("plain"))
    hooks.register(pkg.name("plain"), proxy)
    assert sys.modules[pkg.name("plain")] is proxy
    assert top.plain is proxy
    late, _ = make_proxy(pkg.name("late"))
    hooks.register(pkg.name("late"), late)
    assert pkg.name("late") not in sys.modules
    assert importlib.import_module(pkg.name("late")) is late
    hooks.uninstall()
    assert sys.modules[pkg.name("plain")] is real
    assert top.plain is real
    assert "late" not in vars(top)


def test_register_parent_after_child_keeps_tree_consistent(pkg, hooks):
    real_sub = importlib.import_module(pkg.name("sub"))
    real_child = importlib.import_module(pkg.name("sub.child"))
    top = sys.modules[pkg.top]
    child, _ = make_proxy(pkg.name("sub.child"))
    parent, _ = make_proxy(pkg.name("sub"), is_package=True)
    hooks.register(pkg.name("sub.child"), child)
    hooks.install()
    assert real_sub.child is child
    hooks.register(pkg.name("sub"), parent)
    assert top.sub is parent
    assert top.sub.child is child is sys.modules[pkg.name("sub.child")]
    assert real_sub.child is real_child  # no longer the live parent: back to pristine

    hooks.unregister(pkg.name("sub"))
    assert top.sub is real_sub
    assert top.sub.child is child is sys.modules[pkg.name("sub.child")]

    hooks.uninstall()
    assert sys.modules[pkg.name("sub")] is real_sub
    assert sys.modules[pkg.name("sub.child")] is real_child
    assert top.sub is real_sub and real_sub.child is real_child


# --- install / uninstall ------------------------------------------------------------------------


def test_install_is_idempotent(pkg, hooks):
    real = importlib.import_module(pkg.name("plain"))
    proxy, _ = make_proxy(pkg.name("plain"))
    hooks.register(pkg.name("plain"), proxy)
    assert not hooks.is_installed()
    hooks.install()
    meta_path = list(sys.meta_path)
    hooks.install()
    assert hooks.is_installed()
    assert sys.meta_path == meta_path
    assert sum(f is hooks.finder for f in sys.meta_path) == 1
    assert sys.meta_path[0] is hooks.finder
    hooks.uninstall()
    assert not hooks.is_installed()
    assert hooks.finder not in sys.meta_path
    # A second install must not have recorded the proxy as "the original".
    assert sys.modules[pkg.name("plain")] is real
    assert sys.modules[pkg.top].plain is real
    hooks.uninstall()  # also idempotent
    assert sys.modules[pkg.name("plain")] is real


def test_concurrent_install_inserts_one_finder(pkg, hooks):
    real = importlib.import_module(pkg.name("plain"))
    proxy, _ = make_proxy(pkg.name("plain"))
    hooks.register(pkg.name("plain"), proxy)
    barrier = threading.Barrier(16)

    def worker():
        barrier.wait()
        hooks.install()

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(f is hooks.finder for f in sys.meta_path) == 1
    hooks.uninstall()
    assert sys.modules[pkg.name("plain")] is real


def _snapshot(parents_and_children):
    modules = dict(sys.modules)
    attrs = {}
    for parent_name, child in parents_and_children:
        parent = sys.modules.get(parent_name)
        if parent is not None:
            attrs[(parent_name, child)] = vars(parent).get(child, _MISSING)
    return modules, attrs, list(sys.meta_path)


def _assert_same_snapshot(before, after):
    modules_before, attrs_before, meta_before = before
    modules_after, attrs_after, meta_after = after
    assert modules_before.keys() == modules_after.keys()
    changed = [k for k in modules_before if modules_before[k] is not modules_after[k]]
    assert changed == []
    assert attrs_before.keys() == attrs_after.keys()
    assert all(attrs_before[k] is attrs_after[k] for k in attrs_before)
    assert len(meta_before) == len(meta_after)
    assert all(a is b for a, b in zip(meta_before, meta_after))


def test_uninstall_restores_exact_snapshot(pkg, hooks):
    # Already imported: top, sub, sub.child, plain (plain stays unregistered).
    for rel in ("", "sub", "sub.child", "plain"):
        importlib.import_module(pkg.name(rel))
    registered = ["sub", "sub.child", "late", "ghost"]
    for rel in registered:
        proxy, _ = make_proxy(pkg.name(rel), is_package=(rel == "sub"))
        hooks.register(pkg.name(rel), proxy)
    watched = [(pkg.top, "sub"), (pkg.name("sub"), "child"), (pkg.top, "late"), (pkg.top, "ghost")]
    before = _snapshot(watched)
    real_sub = sys.modules[pkg.name("sub")]

    hooks.install()
    proxies = hooks.proxies()
    # Imported through the finder while installed: "late" has a real module, "ghost" has none.
    ns = run(f"import {pkg.top}.late, {pkg.top}.ghost, {pkg.top}.sub.child")
    assert ns[pkg.top].late is proxies[pkg.name("late")]
    assert ns[pkg.top].ghost is proxies[pkg.name("ghost")]
    assert ns[pkg.top].sub.child is proxies[pkg.name("sub.child")]
    assert ns[pkg.top].sub.child.anything == ["resolved", "anything"]
    assert _snapshot(watched)[0][pkg.name("sub")] is proxies[pkg.name("sub")]

    hooks.uninstall()
    _assert_same_snapshot(before, _snapshot(watched))
    assert vars(real_sub)["child"] is sys.modules[pkg.name("sub.child")]
    # The real module comes back on a fresh import.
    assert importlib.import_module(pkg.name("late")).REAL is True


def test_uninstall_deletes_attribute_bound_on_parent_imported_after_install(pkg, hooks):
    pkg.write("__init__.py", "from . import sub\n")
    proxy, _ = make_proxy(pkg.name("sub"), is_package=True)
    hooks.register(pkg.name("sub"), proxy)
    hooks.install()
    top = importlib.import_module(pkg.top)
    assert top.sub is proxy
    hooks.uninstall()
    assert pkg.name("sub") not in sys.modules
    assert "sub" not in vars(top)
    real = importlib.import_module(pkg.name("sub"))
    assert real.REAL is True and top.sub is real


def test_uninstall_hands_submodules_imported_through_proxy_back_to_original(pkg, hooks):
    real_sub = importlib.import_module(pkg.name("sub"))
    proxy, _ = make_proxy(pkg.name("sub"), is_package=True, attrs={"__path__": real_sub.__path__})
    hooks.register(pkg.name("sub"), proxy)
    hooks.install()
    other = importlib.import_module(pkg.name("sub.other"))  # unregistered child, real module
    assert vars(proxy)["other"] is other
    assert "other" not in vars(real_sub)
    hooks.uninstall()
    assert sys.modules[pkg.name("sub")] is real_sub
    assert real_sub.other is other
    ns = run(f"import {pkg.top}.sub.other")
    assert ns[pkg.top].sub.other is other


def test_uninstall_leaves_entries_replaced_by_others(pkg, hooks):
    proxy, _ = make_proxy(pkg.name("plain"))
    hooks.register(pkg.name("plain"), proxy)
    hooks.install()
    importlib.import_module(pkg.name("plain"))
    someone_else = type(sys)(pkg.name("plain"))
    sys.modules[pkg.name("plain")] = someone_else
    hooks.uninstall()
    assert sys.modules[pkg.name("plain")] is someone_else


def test_stacked_registries_unwind_in_order(pkg, hooks):
    real = importlib.import_module(pkg.name("plain"))
    first, _ = make_proxy(pkg.name("plain"))
    second, _ = make_proxy(pkg.name("plain"))
    outer = hooks
    inner = hooks.make()
    outer.register(pkg.name("plain"), first)
    inner.register(pkg.name("plain"), second)
    outer.install()
    inner.install()
    assert sys.modules[pkg.name("plain")] is second is sys.modules[pkg.top].plain
    inner.uninstall()
    assert sys.modules[pkg.name("plain")] is first is sys.modules[pkg.top].plain
    outer.uninstall()
    assert sys.modules[pkg.name("plain")] is real is sys.modules[pkg.top].plain


# --- registration ----------------------------------------------------------------------------


def test_register_validation(hooks):
    proxy, _ = make_proxy("fake.one")
    with pytest.raises(ValueError, match="another name"):
        hooks.register("fake.two", proxy)
    with pytest.raises(TypeError):
        hooks.register("fake.one", type(sys)("fake.one"))
    assert hooks.register("fake.one", proxy) is proxy
    assert hooks.register("fake.one", proxy) is proxy  # same proxy again: no-op
    other, _ = make_proxy("fake.one")
    with pytest.raises(ValueError, match="already registered"):
        hooks.register("fake.one", other)
    assert hooks.proxies() == {"fake.one": proxy}


def test_proxies_returns_a_snapshot(hooks):
    proxy, _ = make_proxy("fake.one")
    hooks.register("fake.one", proxy)
    snapshot = hooks.proxies()
    snapshot.clear()
    assert hooks.proxies() == {"fake.one": proxy}


def test_unregister_while_installed_restores_original(pkg, hooks):
    real = importlib.import_module(pkg.name("plain"))
    proxy, _ = make_proxy(pkg.name("plain"))
    hooks.register(pkg.name("plain"), proxy)
    hooks.install()
    assert sys.modules[pkg.name("plain")] is proxy
    assert hooks.unregister(pkg.name("plain")) is proxy
    assert sys.modules[pkg.name("plain")] is real
    assert sys.modules[pkg.top].plain is real
    assert hooks.unregister(pkg.name("plain")) is None
    assert hooks.proxies() == {}
    del sys.modules[pkg.name("plain")]
    assert importlib.import_module(pkg.name("plain")).REAL is True


def test_unregister_while_not_installed(pkg, hooks):
    proxy, _ = make_proxy(pkg.name("late"))
    hooks.register(pkg.name("late"), proxy)
    hooks.unregister(pkg.name("late"))
    hooks.install()
    assert importlib.import_module(pkg.name("late")).REAL is True


# --- reload ----------------------------------------------------------------------------------


def test_reload_keeps_proxy_and_re_resolves(pkg, hooks):
    parent, resolver = make_proxy(
        pkg.name("sub"), is_package=True, attrs={"__file__": "<virtual>", "PRESET": 1}
    )
    child, _ = make_proxy(pkg.name("sub.child"))
    hooks.register(pkg.name("sub"), parent)
    hooks.register(pkg.name("sub.child"), child)
    hooks.install()
    run(f"import {pkg.top}.sub.child")
    first_x = parent.X
    parent.user_value = "kept"
    spec, path = parent.__spec__, parent.__path__

    reloaded = importlib.reload(parent)

    assert reloaded is parent
    assert sys.modules[pkg.name("sub")] is parent
    assert sys.modules[pkg.top].sub is parent
    assert "X" not in vars(parent)
    second_x = parent.X
    assert second_x == first_x and second_x is not first_x
    assert resolver.calls["X"] == 2
    assert parent.PRESET == 1 and parent.__file__ == "<virtual>"
    assert parent.user_value == "kept"
    assert parent.child is child  # bound by the import system, not resolved: kept
    assert parent.__spec__ is spec and parent.__path__ == path == []
    assert parent.__loader__ is spec.loader and parent.__name__ == pkg.name("sub")
    # Still importable and consistent after the reload.
    assert run(f"from {pkg.top}.sub import X")["X"] is second_x
    assert pkg.executed() == []


def test_reload_after_uninstall_is_refused(pkg, hooks):
    proxy, _ = make_proxy(pkg.name("late"))
    hooks.register(pkg.name("late"), proxy)
    hooks.install()
    module = importlib.import_module(pkg.name("late"))
    hooks.uninstall()
    with pytest.raises(ImportError):
        importlib.reload(module)
    assert pkg.name("late") not in sys.modules
