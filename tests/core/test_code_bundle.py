"""Activation's modules served from one cached file (torchada._core.code_bundle): served only
unchanged and from where a normal import finds them, written where Python writes bytecode, and a
second activation takes torchada's own modules from it."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
import textwrap

import pytest

from torchada._core import code_bundle

PACKAGE = "bundle_probe_pkg"


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """A package with a module and a subpackage, importable from tmp_path, and torchada's cache
    in tmp_path; the package's modules are forgotten afterwards."""
    root = tmp_path / "src" / PACKAGE
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "one.py").write_text("VALUE = 1\n\ndef where():\n    return 'one'\n")
    (root / "sub" / "__init__.py").write_text("KIND = 'package'\n")
    (root / "sub" / "two.py").write_text("from .. import one\nVALUE = one.VALUE + 1\n")
    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    importlib.invalidate_caches()

    def forget():
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]

    forget()
    yield root
    forget()


def _import_all():
    package = importlib.import_module(PACKAGE)
    names = (f"{PACKAGE}.one", f"{PACKAGE}.sub", f"{PACKAGE}.sub.two")
    with code_bundle.serving("probe", [package]):
        return [importlib.import_module(n) for n in names]


def _served(module) -> bool:
    return isinstance(module.__spec__.loader, code_bundle._BundledLoader)


def _drop_submodules():
    for name in [n for n in sys.modules if n.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def test_first_import_writes_the_bundle_and_the_next_is_served_from_it(probe):
    first = _import_all()
    assert not any(_served(m) for m in first)
    package = sys.modules[PACKAGE]
    assert os.path.exists(code_bundle.bundle_path("probe", [package]))
    _drop_submodules()
    one, sub, two = _import_all()
    assert all(_served(m) for m in (one, sub, two))
    # What a normal import gives: values, files, package paths, source.
    assert (one.VALUE, sub.KIND, two.VALUE) == (1, "package", 2)
    assert one.__file__ == str(probe / "one.py")
    assert sub.__path__ == [str(probe / "sub")]
    assert inspect.getsource(one.where).startswith("def where():")
    assert one.__cached__ and one.__cached__.endswith(".pyc")


def test_a_changed_source_is_imported_again_and_the_bundle_rewritten(probe):
    _import_all()
    (probe / "one.py").write_text("VALUE = 10  # edited\n")
    _drop_submodules()
    one, _, two = _import_all()
    assert not _served(one) and one.VALUE == 10 and two.VALUE == 11
    _drop_submodules()
    one, _, _ = _import_all()
    assert _served(one) and one.VALUE == 10


def test_entries_of_deleted_sources_are_dropped_at_the_next_write(probe):
    _import_all()
    (probe / "gone.py").write_text("X = 1\n")
    package = sys.modules[PACKAGE]
    with code_bundle.serving("probe", [package]):
        importlib.import_module(f"{PACKAGE}.gone")
    path = code_bundle.bundle_path("probe", [package])
    assert f"{PACKAGE}.gone" in code_bundle._read(path)
    (probe / "gone.py").unlink()
    (probe / "one.py").write_text("VALUE = 2\n")  # a change, so that the bundle is written
    _drop_submodules()
    _import_all()
    entries = code_bundle._read(path)
    assert f"{PACKAGE}.gone" not in entries and f"{PACKAGE}.sub.two" in entries


def test_served_only_from_where_the_parent_package_lives(probe, tmp_path):
    _import_all()
    # Another copy of the package earlier on the path: a normal import would find that one.
    other = tmp_path / "other" / PACKAGE
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("")
    (other / "one.py").write_text("VALUE = 'other'\n")
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    sys.path.insert(0, str(tmp_path / "other"))
    try:
        importlib.invalidate_caches()
        package = importlib.import_module(PACKAGE)
        # The bundle of the first copy is keyed by its place, so look it up by that place.
        finder = code_bundle._BundleFinder(
            code_bundle._read(code_bundle.bundle_path("probe", [_FakePackage(probe)])),
            (f"{PACKAGE}.",),
        )
        assert f"{PACKAGE}.one" in finder.entries
        assert finder.find_spec(f"{PACKAGE}.one", package.__path__) is None
        assert finder.find_spec(f"{PACKAGE}.one", [str(probe)]) is not None
        assert finder.missed == [f"{PACKAGE}.one"]  # written again after a normal import
    finally:
        sys.path.remove(str(tmp_path / "other"))


class _FakePackage:
    def __init__(self, folder):
        self.__path__ = [str(folder)]


def test_nothing_is_written_where_bytecode_is_not(probe, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    _import_all()
    assert not os.path.exists(code_bundle.bundle_path("probe", [sys.modules[PACKAGE]]))


def test_an_unreadable_bundle_is_ignored_and_written_again(probe):
    package = importlib.import_module(PACKAGE)
    path = code_bundle.bundle_path("probe", [package])
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as f:
        f.write(b"not a bundle")
    one, _, _ = _import_all()
    assert one.VALUE == 1 and not _served(one)
    _drop_submodules()
    one, _, _ = _import_all()
    assert _served(one)
    assert code_bundle._BundleFinder not in map(type, sys.meta_path)  # the finder is gone again


def _activation_bundle() -> str:
    # torchada's own cache (a fresh one would build the native library again, minutes): the
    # bundle of this checkout is removed, so the first child writes it.
    import torchada
    import torchada_hooks

    path = code_bundle.bundle_path("activation", [torchada, torchada_hooks])
    if os.path.exists(path):
        os.unlink(path)
    return path


def test_a_second_activation_takes_torchadas_modules_from_the_bundle(py):
    code = """
        import json, sys, torch
        import torchada
        from torchada._core import code_bundle
        served = sorted(n for n, m in sys.modules.items()
                        if isinstance(getattr(getattr(m, "__spec__", None), "loader", None),
                                      code_bundle._BundledLoader))
        redirect = sys.modules["torchada._cuda.redirect"]
        print(json.dumps([torchada.is_enabled(), served, redirect.__file__]))
    """
    env_write = {"TORCHADA_SIMULATE": "1", "PYTHONDONTWRITEBYTECODE": ""}
    path = _activation_bundle()
    runs = []
    for _ in range(2):
        done = py(code, env=env_write)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    (on1, served1, _), (on2, served2, file2) = runs
    assert on1 and on2 and os.path.exists(path)
    assert served1 == []
    # The redirects, the hooks, the device and the subsystems: dozens of modules, all ours.
    assert len(served2) >= 30, served2
    assert all(n.startswith(("torchada.", "torchada_hooks.")) for n in served2)
    assert "torchada._cuda.redirect" in served2 and "torchada_hooks.proxy" in served2
    assert os.path.samefile(
        file2, os.path.join(os.path.dirname(torchada_file()), "_cuda", "redirect.py")
    )


def torchada_file() -> str:
    import torchada

    return torchada.__file__


def test_the_source_of_served_modules_matches_their_file(py):
    # A traceback through a served module shows its real source lines.
    code = textwrap.dedent(
        """
        import traceback, torch, torchada
        from torchada._core import code_bundle, patcher
        try:
            patcher.Patcher().set_attr(None, "x", 1)
        except AttributeError:
            print(traceback.format_exc())
        print(isinstance(patcher.__spec__.loader, code_bundle._BundledLoader))
        """
    )
    env = {"TORCHADA_SIMULATE": "1", "PYTHONDONTWRITEBYTECODE": ""}
    _activation_bundle()
    for _ in range(2):
        done = py(code, env=env)
        assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "True"  # served from the bundle
    assert "patcher.py" in done.stdout and "setattr(obj, name, value)" in done.stdout
