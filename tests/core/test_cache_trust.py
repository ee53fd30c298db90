"""torchada's cache reads only what this user (or root) wrote (issue 39): a cache that another
user owns or may write is not read, said once, and a private one is used; derived values are data
(JSON), recomputed when garbled or of another shape; what torchada makes is private whatever the
umask. The tests run as root: another owner is made with ``chown`` to ``nobody``."""

from __future__ import annotations

import json
import logging
import marshal
import os
import pickle
import pwd
import shutil
import stat
import subprocess
from pathlib import Path
from types import MappingProxyType

import pytest

from torchada._core import cache as _cache
from torchada._core import code_bundle
from torchada._core import tables as _tables
from torchada._core.records import record

NOBODY = pwd.getpwnam("nobody").pw_uid
WARNING = "not reading the cache"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


@pytest.fixture
def shared(tmp_path, monkeypatch):
    """TORCHADA_CACHE_DIR at tmp_path/shared, the private fallback under tmp_path/xdg, and this
    process's verdicts forgotten (they are kept per process)."""
    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(tmp_path / "shared"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(_cache, "_roots", {})
    monkeypatch.setattr(_cache, "_private_roots", {})
    monkeypatch.setattr(_cache, "_verdicts", {})
    return tmp_path / "shared"


@pytest.fixture
def warnings_seen(caplog):
    caplog.set_level(logging.WARNING, logger="torchada")
    return lambda: [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]


def _planted_pickle(marker: Path) -> bytes:
    class Planted:
        def __reduce__(self):
            return (os.system, (f"echo pickle >> {marker}",))

    return pickle.dumps(Planted())


def _make_shared(root: Path, how: str) -> None:
    """Every directory and file under ``root`` writable by everyone, or owned by nobody."""
    for path in [root, *root.rglob("*")]:
        if how == "world-writable":
            os.chmod(path, 0o777 if path.is_dir() else 0o666)
        else:
            os.chown(path, NOBODY, -1)


def _stored(root: Path, name: str) -> Path:
    (path,) = (root / "derived").glob(f"{name}-*.json")
    return path


# ---------------------------------------------------------------- untrusted caches
@pytest.mark.parametrize("how", ["world-writable", "other-owner"])
def test_an_untrusted_cache_is_not_read_and_is_said_once(shared, tmp_path, how, warnings_seen):
    source = tmp_path / "t.json"
    source.write_text("{}")
    assert _cache.derived("t", [source], lambda: "mine") == "mine"
    stored = _stored(shared, "t")
    # What another user puts there: a value of the right key (which would be taken if read) and,
    # under the names older torchadas read, a pickle that runs a command when loaded.
    payload = json.loads(stored.read_bytes())
    payload["value"] = "theirs"
    stored.write_text(json.dumps(payload))
    marker = tmp_path / "ran"
    stored.with_suffix(".pickle").write_bytes(_planted_pickle(marker))
    _make_shared(shared, how)
    before = stored.stat()
    _cache._roots.clear(), _cache._verdicts.clear()  # a new process

    calls = []
    value = _cache.derived("t", [source], lambda: calls.append(1) or "computed")
    again = _cache.derived("t", [source], lambda: calls.append(1) or "computed")
    assert (value, again, calls) == ("computed", "computed", [1])  # kept in the private cache
    assert _cache.cache_root() == tmp_path / "xdg" / "torchada"
    assert stat.S_IMODE(os.stat(_cache.cache_root()).st_mode) == 0o700
    assert not marker.exists()
    after = stored.stat()
    assert (after.st_mtime_ns, after.st_uid) == (before.st_mtime_ns, before.st_uid)  # untouched
    (message,) = warnings_seen()
    owner = "nobody" if how == "other-owner" else "root"
    mode = "0777" if how == "world-writable" else "0700"
    assert str(shared) in message and f"owner {owner}" in message and f"mode {mode}" in message
    assert "chmod -R go-w" in message and "TORCHADA_CACHE_DIR" in message


def test_a_sticky_shared_directory_counts_only_through_a_private_folder(
    shared, tmp_path, monkeypatch
):
    sticky = tmp_path / "tmp-like"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(sticky))
    assert _cache.cache_root() == tmp_path / "xdg" / "torchada"
    own = sticky / "mine"
    own.mkdir(mode=0o700)
    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(own))
    assert _cache.cache_root() == own


def test_a_root_owned_cache_no_one_else_writes_is_trusted(shared, tmp_path, monkeypatch):
    source = tmp_path / "t.json"
    source.write_text("{}")
    _cache.derived("t", [source], lambda: "prebuilt by the administrator")
    os.chmod(shared, 0o755)
    monkeypatch.setattr(_cache, "_UID", 4242)  # an ordinary user; the cache is root's
    monkeypatch.setattr(_cache, "_roots", {})
    monkeypatch.setattr(_cache, "_verdicts", {})
    assert _cache.cache_root() == shared
    assert _cache.derived("t", [source], lambda: "computed") == "prebuilt by the administrator"


def test_an_entry_another_user_wrote_is_made_again(shared, tmp_path, warnings_seen):
    source = tmp_path / "t.json"
    source.write_text("{}")
    _cache.derived("t", [source], lambda: "mine")
    stored = _stored(shared, "t")
    payload = json.loads(stored.read_bytes())
    payload["value"] = "theirs"
    stored.write_text(json.dumps(payload))
    os.chown(stored, NOBODY, -1)
    assert _cache.derived("t", [source], lambda: "computed") == "computed"
    assert stored.stat().st_uid == 0 and json.loads(stored.read_bytes())["value"] == "computed"
    (message,) = warnings_seen()
    assert str(stored) in message and "owner nobody" in message


def test_what_torchada_makes_is_private_whatever_the_umask(shared, tmp_path):
    source = tmp_path / "t.json"
    source.write_text("{}")
    old = os.umask(0)
    try:
        _cache.derived("t", [source], lambda: 1)
        _cache.remember("fact", "42")
    finally:
        os.umask(old)
    for path in [shared, shared / "derived", shared / "remembered"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    for path in [_stored(shared, "t"), shared / "remembered" / "fact"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert _cache.recall("fact") == "42"
    os.chown(shared / "remembered" / "fact", NOBODY, -1)
    assert _cache.recall("fact") is None


# ---------------------------------------------------------------- values as data
@record
class _Rule:
    name: str
    tags: tuple = ()
    extra: object = None


def test_values_come_back_as_they_were():
    shared_rule = _Rule("a", ("x",), MappingProxyType({"k": [1.5, None]}))
    value = {
        "rules": (shared_rule, shared_rule),
        "by_name": MappingProxyType({"a": shared_rule}),
        (1, "two"): [True, -3, "\x00not a tag"],
        "absent": _tables.ABSENT,
    }
    back = _cache.loads(_cache.dumps(value, "k"), "k")
    assert back == value
    assert back["rules"][0] is back["rules"][1] is back["by_name"]["a"]  # one object, as pickled
    assert back["absent"] is _tables.ABSENT and type(back["by_name"]) is MappingProxyType
    with pytest.raises(ValueError):
        _cache.loads(_cache.dumps(value, "k"), "another key")


def test_data_cannot_name_code():
    with pytest.raises(TypeError):
        _cache.dumps(print)
    # Names of functions and of classes that are not records, where a value is to be decoded.
    for node in ["os:system", "builtins:print", "torchada._core.cache:_singleton", ["os:getcwd"]]:
        value = ["t", [0], node]
        data = json.dumps({"format": _cache._FORMAT, "key": "", "value": value}).encode()
        with pytest.raises(ValueError):
            _cache.loads(data)


@pytest.mark.parametrize("damage", ["garbled", "truncated", "empty", "another-shape"])
def test_damaged_or_wrong_shaped_values_are_computed_again(shared, tmp_path, damage):
    source = tmp_path / "t.json"
    source.write_text("{}")
    shape = lambda value: isinstance(value, dict) and "rows" in value  # noqa: E731
    _cache.derived("t", [source], lambda: {"rows": [1]}, check=shape)
    stored = _stored(shared, "t")
    data = stored.read_bytes()
    payload = json.loads(data)
    stored.write_bytes(
        {
            "garbled": b"\x80\x04\x95garbage",
            "truncated": data[: len(data) // 2],
            "empty": b"",
            "another-shape": json.dumps({**payload, "value": ["d", [], "cols", 1]}).encode(),
        }[damage]
    )
    assert _cache.derived("t", [source], lambda: {"rows": [2]}, check=shape) == {"rows": [2]}
    assert json.loads(stored.read_bytes())["value"] == ["d", [1], "rows", ["l", [], 2]]


def test_a_tables_value_without_a_table_is_computed_again(shared):
    # The crash: a stored dict without "torch_cuda" failed every run with a KeyError.
    _tables._cached_tables.cache_clear()
    try:
        _tables.load("torch_cuda")
        stored = _stored(shared, "tables")
        payload = json.loads(stored.read_bytes())
        payload["value"] = ["d", [], "switches", 1]
        stored.write_text(json.dumps(payload))
        _tables._cached_tables.cache_clear()
        rules = _tables.load("torch_cuda").modules["torch.cuda"].names
        assert rules["CUDAGraph"].to == "MUSAGraph"
        assert "torch_cuda" in json.dumps(json.loads(stored.read_bytes())["value"])
    finally:
        _tables._cached_tables.cache_clear()


# ---------------------------------------------------------------- code and native libraries
def test_a_module_bundle_is_read_only_where_trusted(shared, tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("VALUE = 1\n")
    st = probe.stat()
    marker = tmp_path / "ran"
    code = compile(f"open({str(marker)!r}, 'w').write('bundle')", str(probe), "exec")
    entries = {"pkg.probe": (str(probe), st.st_mtime_ns, st.st_size, False, marshal.dumps(code))}
    path = code_bundle.bundle_path("probe", [])
    _cache.write_atomically(Path(path), marshal.dumps((code_bundle._FORMAT, entries)))
    assert code_bundle._read(path) == entries  # this user's: read
    os.chown(path, NOBODY, -1)
    assert code_bundle._read(path) == {}  # another user's: its code is never served
    _cache.write_atomically(Path(path), marshal.dumps((code_bundle._FORMAT, {"x": (1, 2)})))
    assert code_bundle._read(path) == {}  # another layout: imported normally


@pytest.fixture(scope="module")
def planted_library(tmp_path_factory):
    """A shared library whose constructor appends to the file its path names + ``.ran``."""
    folder = tmp_path_factory.mktemp("planted")
    src = folder / "planted.c"
    src.write_text(
        "#define _GNU_SOURCE\n"
        "#include <stdio.h>\n"
        "#include <dlfcn.h>\n"
        "__attribute__((constructor)) static void planted(void) {\n"
        "  Dl_info info; char path[4096];\n"
        "  if (!dladdr((void *)planted, &info)) return;\n"
        '  snprintf(path, sizeof path, "%s.ran", info.dli_fname);\n'
        '  FILE *f = fopen(path, "a"); if (f) { fputs("ran\\n", f); fclose(f); }\n'
        "}\n"
    )
    out = folder / "planted.so"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-shared", "-fPIC", str(src), "-o", str(out), "-ldl"], check=True)
    return out


def _plant_libraries(root: Path, planted: Path) -> list:
    """Every cached .so replaced by ``planted``, its build's record rewritten to match (the
    strongest forgery: size, time and digest all agree)."""
    from torchada._native import build as _build

    sos = sorted(p for p in root.rglob("*.so") if (p.parent / ".complete").is_file())
    for so in sos:
        shutil.copyfile(planted, so)
    for done in {so.parent / ".complete" for so in sos}:
        names = [line.split(" ")[0] for line in done.read_text().splitlines()]
        done.write_text("".join(_build._fingerprint(done.parent / n) + "\n" for n in names))
    return sos


def test_a_native_build_another_user_could_write_is_built_again(shared, tmp_path, planted_library):
    import ctypes

    from torchada._native import build as _build

    src = tmp_path / "tiny.c"
    src.write_text("int tiny_answer(void) { return 42; }\n")
    (first,) = _build.build_shared_libraries("trust-probe", [src]).values()
    assert first.parent.parent.parent == shared
    (planted,) = _plant_libraries(shared, planted_library)
    assert _build.is_intact_build(planted)  # the forgery passes the integrity check...
    _make_shared(shared, "world-writable")
    _cache._roots.clear(), _cache._verdicts.clear()  # a new process
    assert not _build.is_intact_build(planted)  # ...not the trust check
    (path,) = _build.build_shared_libraries("trust-probe", [src]).values()
    assert path.is_relative_to(tmp_path / "xdg" / "torchada")
    assert ctypes.CDLL(str(path)).tiny_answer() == 42
    assert not list(tmp_path.rglob("*.ran"))


# ---------------------------------------------------------------- a whole program
PROGRAM = """
import torch
x = torch.ones(3, device="cuda")
print("result", (x * 2).sum().item())
"""


#: The folders of torchada's cache.
CACHED = (
    "derived",
    "remembered",
    "bundles",
    "cuda_shims_src",
    "torchada_cuda_shims",
    "torchada_musa_sdk",
    "torchada_musa_sim",
    "torchada_native",
)


def _run(py, cache: Path, way: str = "import"):
    """The CUDA program with ``import torchada`` added, or run by torchada's runner."""
    env = {"TORCHADA_CACHE_DIR": str(cache)}
    if way == "import":
        return py("import torchada\n" + PROGRAM, env={"TORCHADA_SIMULATE": "1", **env})
    program = cache.parent / "program.py"
    program.write_text(PROGRAM)
    runner = f"import runpy, sys; sys.argv = ['torchada.run', '--simulate', {str(program)!r}]\n"
    return py(runner + "runpy.run_module('torchada.run', run_name='__main__')", env=env)


@pytest.mark.parametrize("how, way", [("world-writable", "import"), ("other-owner", "runner")])
def test_a_program_with_a_planted_cache_runs_none_of_it(py, tmp_path, how, way, planted_library):
    # This user's cache (built once if need be) is copied to a shared place; every entry that
    # holds code is replaced by one that leaves a mark when run; then the cache is made another
    # user's, or everyone's. The program runs right, says so once, and runs nothing planted.
    default = _cache._default_root()
    if not list(default.glob("torchada_musa_sim/*/*.so")):
        assert _run(py, default).returncode == 0
    cache = tmp_path / "shared"
    skip = shutil.ignore_patterns("*.o", "*.lock", "*.building-*")
    for entry in CACHED:  # what torchada keeps there (not, say, tools/compat.sh's torches)
        if (default / entry).is_dir():
            shutil.copytree(default / entry, cache / entry, ignore=skip)
    marker = tmp_path / "ran"
    sos = _plant_libraries(cache, planted_library)
    assert {p.parent.parent.name for p in sos} >= {"torchada_musa_sim", "torchada_musa_sdk"}
    for stored in (cache / "derived").glob("*.json"):
        stored.with_suffix(".pickle").write_bytes(_planted_pickle(marker))
        stored.write_bytes(_planted_pickle(marker))
    for fact in (cache / "remembered").glob("*"):
        fact.write_text(str(sos[0]))
    code = compile(f"open({str(marker)!r}, 'a').write('bundle')", "<planted>", "exec")
    for bundle in (cache / "bundles").glob("*.marshal"):
        fmt, entries = marshal.loads(bundle.read_bytes())
        planted = {name: (*entry[:4], marshal.dumps(code)) for name, entry in entries.items()}
        bundle.write_bytes(marshal.dumps((fmt, planted)))
    _make_shared(cache, how)

    proc = _run(py, cache, way)
    assert proc.returncode == 0, proc.stderr
    assert "result 6.0" in proc.stdout
    assert not marker.exists() and not list(tmp_path.rglob("*.ran")), proc.stderr
    assert proc.stderr.count(WARNING) == 1, proc.stderr


def test_doctor_names_the_cache_its_owner_mode_and_verdict(shared, tmp_path):
    from torchada import _doctor

    shared.mkdir(exist_ok=True)
    os.chmod(shared, 0o755)
    os.chown(shared, NOBODY, -1)
    state = _doctor._cache_state()
    assert (state["path"], state["owner"], state["mode"]) == (str(shared), "nobody", "0755")
    assert not state["trusted"] and state["in_use"] == str(tmp_path / "xdg" / "torchada")


def test_a_read_only_administrator_cache_is_read_and_what_it_lacks_built_privately(
    shared, tmp_path, monkeypatch
):
    from torchada._native import build as _build

    src = tmp_path / "tiny.c"
    src.write_text("int tiny_answer(void) { return 42; }\n")
    (prebuilt,) = _build.build_shared_libraries("trust-probe", [src]).values()
    monkeypatch.setattr(_cache, "_UID", 4242)  # an ordinary user; the cache is root's
    real = os.access
    # ...and read-only to them (root may write anywhere: os.access is asked instead).
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != shared and real(p, mode))
    assert _build.build_shared_libraries("trust-probe", [src])["tiny"] == prebuilt
    other = tmp_path / "other.c"
    other.write_text("int other_answer(void) { return 7; }\n")
    (path,) = _build.build_shared_libraries("trust-probe", [other]).values()
    assert path.is_relative_to(tmp_path / "xdg" / "torchada")
