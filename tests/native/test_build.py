"""Building native libraries: once under the lock, cached, never hung by a killed build; and
``python -m torchada build``.

The lock, cache and kill tests build a tiny extension through the same function the native library
goes through (torchada._native.build.load_torch_extension), in a temporary cache directory, so that
they take seconds and never touch the shared cache. The build step is wrapped in the child processes
to record each build and, where needed, to hold the lock long enough to overlap, or to die half-way,
leaving what a killed build leaves.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import sim_release

pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]

TINY = """
#include <Python.h>
#define TINY_CAT2(a, b) a##b
#define TINY_CAT(a, b) TINY_CAT2(a, b)
#define ANSWER {answer}
static PyObject* answer(PyObject*, PyObject*) {{ return PyLong_FromLong(ANSWER); }}
static PyMethodDef methods[] = {{{{"answer", answer, METH_NOARGS, nullptr}},
                                {{nullptr, nullptr, 0, nullptr}}}};
static PyModuleDef def = {{PyModuleDef_HEAD_INIT, "tiny", nullptr, -1, methods}};
PyMODINIT_FUNC TINY_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) {{ return PyModule_Create(&def); }}
"""

CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    from torchada._native import build as _build

    real = _build.torch_cpp_extension()
    log = Path(os.environ["BUILD_LOG"])

    class RecordingLoader:
        def load(self, **kw):
            with open(log, "a") as fh:
                fh.write(f"{os.getpid()}\\n")
            if os.environ.get("DIE_MID_BUILD"):
                build_dir = Path(kw["build_directory"])
                (build_dir / "lock").write_text("")  # torch's own baton, left by the dead
                (build_dir / "tiny.so").write_bytes(b"\\x7fELF")  # a link cut short
                Path(os.environ["STARTED"]).write_text("")
                time.sleep(600)
            time.sleep(float(os.environ.get("BUILD_DELAY", "0")))
            return real.load(**kw)

    _build.torch_cpp_extension = RecordingLoader
    start_at = float(os.environ.get("START_AT", "0"))
    while time.time() < start_at:
        time.sleep(0.01)
    module = _build.load_torch_extension("tiny", [Path(os.environ["SRC"])])
    record = _build.last_build("tiny")
    print(json.dumps({"built": record.built, "path": str(record.path), "answer": module.answer()}))
    """
)


@pytest.fixture
def tiny(tmp_path):
    src = tmp_path / "tiny.cpp"
    src.write_text(TINY.format(answer=42))
    env = dict(os.environ)
    env.pop("TORCHADA_SIMULATE", None)
    env.update(
        TORCHADA_CACHE_DIR=str(tmp_path / "cache"),
        BUILD_LOG=str(tmp_path / "builds.log"),
        SRC=str(src),
        STARTED=str(tmp_path / "started"),
    )
    return tmp_path, src, env


def _spawn(env, **extra):
    return subprocess.Popen(
        [sys.executable, "-c", CHILD],
        env=dict(env, **extra),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(proc, timeout=180):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _builds(tmp_path):
    log = tmp_path / "builds.log"
    return log.read_text().split() if log.exists() else []


def test_two_processes_starting_together_build_once(tiny):
    tmp_path, _, env = tiny
    start_at = str(time.time() + 4)  # both past interpreter start-up, then go at once
    a = _spawn(env, START_AT=start_at, BUILD_DELAY="2")
    b = _spawn(env, START_AT=start_at, BUILD_DELAY="2")
    results = [_result(a), _result(b)]
    assert len(_builds(tmp_path)) == 1  # one build ...
    assert sorted(r["built"] for r in results) == [False, True]  # ... the other waited for it
    assert {r["path"] for r in results} == {results[0]["path"]}
    assert [r["answer"] for r in results] == [42, 42]


def test_a_build_killed_half_way_never_hangs_the_next(tiny):
    tmp_path, _, env = tiny
    doomed = _spawn(env, DIE_MID_BUILD="1")
    deadline = time.time() + 120
    while not (tmp_path / "started").exists():
        assert doomed.poll() is None, doomed.communicate()[1]
        assert time.time() < deadline, "the first build never started"
        time.sleep(0.05)
    os.kill(doomed.pid, signal.SIGKILL)  # mid-build, holding the lock
    doomed.wait(timeout=30)
    build_dirs = [p for p in (tmp_path / "cache" / "tiny").iterdir() if p.is_dir()]
    # It built in a directory of its own: whatever its orphaned compilers still write goes there.
    assert [d.name.endswith(f".building-{doomed.pid}") for d in build_dirs] == [True]
    assert (build_dirs[0] / "lock").exists() and not (build_dirs[0] / ".complete").exists()

    result = _result(_spawn(env), timeout=120)  # would hang on a lock file that outlives its owner
    assert result == {"built": True, "path": result["path"], "answer": 42}
    assert len(_builds(tmp_path)) == 2  # the dead one's, then a complete one
    final = Path(result["path"]).parent
    assert final.parent == build_dirs[0].parent and ".building-" not in final.name
    assert (final / ".complete").exists() and not (final / "lock").exists()
    assert not build_dirs[0].exists()  # the dead builder's directory is cleared away


def test_a_waiting_builder_says_for_whom_it_waits(tiny):
    import fcntl

    tmp_path, _, env = tiny
    first = _result(_spawn(env))  # find the build directory, then make the next build wait
    build_dir = Path(first["path"]).parent
    (build_dir / ".complete").unlink()
    with open(build_dir.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        lock.seek(0)
        lock.truncate()
        lock.write("424242\n")  # as a builder records itself
        lock.flush()
        waiter = _spawn(env)
        line = ""
        deadline = time.time() + 120
        while "waiting for process" not in line:
            assert time.time() < deadline and waiter.poll() is None, waiter.communicate()
            line = waiter.stderr.readline()
        assert "waiting for process 424242 to finish building native library 'tiny'" in line
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    out, err = waiter.communicate(timeout=180)
    assert waiter.returncode == 0 and json.loads(out.splitlines()[-1])["answer"] == 42
    # Not a terminal: one line when the wait ends, then the build's one line at each end.
    assert re.fullmatch(
        r"torchada: process 424242 is done with native library 'tiny'; waited \d+\.\d s\n"
        r"torchada: building native library 'tiny' \(first use, cached afterwards\)\.\.\.\n"
        r"torchada: built native library 'tiny' in \d+\.\d s\n",
        err,
    ), err


def test_cache_hit_when_nothing_changed_and_rebuild_when_a_source_did(tiny):
    tmp_path, src, env = tiny
    first = _result(_spawn(env))
    artefact = Path(first["path"])
    mtime = artefact.stat().st_mtime_ns
    second = _result(_spawn(env))
    assert first["built"] is True and second["built"] is False
    assert second["path"] == first["path"] and artefact.stat().st_mtime_ns == mtime
    assert len(_builds(tmp_path)) == 1
    src.write_text(TINY.format(answer=43))
    third = _result(_spawn(env))
    assert third["built"] is True and third["answer"] == 43
    assert third["path"] != first["path"]  # a new key, and the old build is left intact
    assert artefact.exists()


NATIVE_CHILD = textwrap.dedent(
    """
    import json, logging, os, sys
    from pathlib import Path
    logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
    from torchada._native import build as _build, library as _native
    import torch.utils.cpp_extension as ce
    runner = ce._run_ninja_build
    _native.source_dir = lambda: Path(os.environ["SRC_DIR"])
    assert _native.load() is not None, _native.state()
    assert ce._run_ninja_build is runner  # torch's own runner is back in place
    info = dict(_native.state(), built=_build.last_build(_native.LIBRARY_NAME).built)
    print(json.dumps(info))
    """
)


def test_native_library_route_verbose_and_mu_skipped(tiny):
    # _native.load() on a stand-in source tree: the verbose switch, and a .mu file skipped.
    tmp_path, src, env = tiny
    tree = tmp_path / "torchada_native"
    tree.mkdir()
    (tree / "module.cpp").write_text(src.read_text())
    (tree / "kernels.mu").write_text("// needs mcc\n")
    for name in ("PYTORCH_MCC", "MUSA_HOME", "MUSA_PATH", "TORCHADA_VERBOSE_BUILD"):
        env.pop(name, None)
    r = subprocess.run(
        [sys.executable, "-c", NATIVE_CHILD],
        env=dict(env, SRC_DIR=str(tree), TORCHADA_CPP_OPS_VERBOSE="1"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout.strip().splitlines()[-1])
    assert info["status"] == "loaded" and info["built"] is True
    assert info["musa_kernels"] == "skipped (no MUSA compiler, mcc, found): kernels.mu"
    assert "torchada INFO torchada: torchada_native: MUSA kernels skipped" in r.stderr
    shown = r.stdout + r.stderr  # torch prints the build log to stdout
    assert "[1/2] c++" in shown and "module.cpp" in shown  # ninja's steps were shown


# ---------------------------------------------------------------- python -m torchada build
def _build_cli(*args, env=None):
    full = dict(os.environ, TORCHADA_SIMULATE="1", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "torchada", "build", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=REPO,
        timeout=900,
    )


def test_build_command_says_where_and_builds_once():
    first = _build_cli("--json")  # builds unless the shared cache has it already
    assert first.returncode == 0, first.stderr
    again = _build_cli()
    assert again.returncode == 0, again.stderr
    info = json.loads(first.stdout)
    path = Path(info["path"])
    assert path.is_file() and path.name == "torchada_native.so"
    release = sim_release()[0]
    assert info["simulated"] is True and info["torch_musa"].startswith(f"torch_musa {release}")
    assert [o["name"] for o in info["overrides"]] == ["isfinite"]
    assert f"path          {path}" in again.stdout
    assert "status        up to date (cached)" in again.stdout  # nothing changed: no rebuild
    assert "MUSA kernels  none in the sources" in again.stdout
    assert "isfinite     aten::isfinite" in again.stdout


def test_build_command_rejects_unknown_arguments():
    r = _build_cli("--fast")
    assert r.returncode == 2 and "unknown argument '--fast'" in r.stderr


@pytest.mark.parametrize("damage", ["truncated", "empty", "same_size_garbage", "old_marker"])
def test_a_damaged_cached_library_is_built_again_not_loaded(tiny, damage):
    tmp_path, _, env = tiny
    first = _result(_spawn(env))
    assert first["built"] is True
    so = Path(first["path"])
    marker = so.parent / ".complete"
    name, size, _, digest = marker.read_text().split()
    assert (name, int(size)) == (so.name, so.stat().st_size) and len(digest) == 64
    assert _result(_spawn(env))["built"] is False  # intact: loaded from the cache

    data = so.read_bytes()
    if damage == "truncated":  # what a crash or a full disk leaves; loading it gave SIGBUS
        so.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        so.write_bytes(b"")
    elif damage == "same_size_garbage":
        so.write_bytes(bytes(len(data)))
    else:  # a marker written by an older torchada records nothing
        marker.write_text("")
    proc = _spawn(env)
    again = _result(proc)
    assert again == {"built": True, "path": str(so), "answer": 42}
    assert len(_builds(tmp_path)) == 2  # the first build, and this one
    assert _result(_spawn(env))["built"] is False  # and the rebuilt one is trusted


def test_damaged_plain_c_libraries_are_built_again(tmp_path, monkeypatch, caplog):
    import ctypes

    from torchada._native import build as _build

    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "libseven.c"
    src.write_text("int seven(void) { return 7; }\n")
    built = _build.build_shared_libraries("seven", [src])["libseven"]
    mtime = built.stat().st_mtime_ns
    assert _build.build_shared_libraries("seven", [src])["libseven"].stat().st_mtime_ns == mtime
    built.write_bytes(built.read_bytes()[:100])
    with caplog.at_level("WARNING", logger="torchada"):
        again = _build.build_shared_libraries("seven", [src])["libseven"]
    assert "damaged or incomplete; building it again" in caplog.text
    assert ctypes.CDLL(str(again)).seven() == 7
