"""Activation: undo, kill switch, no-op platforms, the runner, inheritance by child processes."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap

import pytest
from conftest import is_torch_musa_version_warning

SIM = {"TORCHADA_SIMULATE": "1"}


def _last_json(stdout: str):
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("native", ["1", "0"])
def test_disable_restores_every_module_and_attribute(py, native):
    # Every attribute of torch, torch.cuda, torch.backends.*, torch.ops, ctypes and
    # torch.distributed, and sys.meta_path, as before the first enable(); only modules imported
    # meanwhile (and their attributes on their parents) are new. A second round trip changes
    # nothing at all.
    code = """
        import json, sys, torch
        import torchada
        from torchada import _activation, _simulator
        assert not torchada.is_enabled()
        _simulator.activate()
        import torch_musa
        start = _activation.snapshot_state()
        assert torchada.enable()
        torch.cuda.device_count(); torch.empty(1, device="cuda"); torch.backends.cudnn.version()
        torchada.disable()
        first_after = _activation.snapshot_state()
        new = set(first_after[0]) - set(start[0])
        kept = lambda key: key.replace(":", ".", 1) not in new
        left = sorted(k for k in set(start[1]) | set(first_after[1])
                      if kept(k) and start[1].get(k) != first_after[1].get(k))
        changed_modules = sorted(k for k in start[0] if start[0][k] != first_after[0].get(k))
        cuda_obj = torch.cuda
        torchada.enable(); torchada.disable()
        after = _activation.snapshot_state()
        s = torch.musa.Stream()
        print(json.dumps([left, changed_modules, first_after == after, torch.cuda is cuda_obj,
                          type(torch.cuda).__name__, hasattr(s, "cuda_stream"),
                          "TORCHADA_ACTIVE" in __import__("os").environ,
                          len([k for k in start[1] if k.startswith("torch.backends.cudnn:")]) > 0,
                          "torch.ops:__torchada_devices__" in first_after[1]]))
    """
    r = py(code, env={"TORCHADA_NATIVE": native})
    assert r.returncode == 0, r.stderr
    assert _last_json(r.stdout) == [[], [], True, True, "module", False, False, True, False]


def test_disable_leaves_what_others_patched_after_torchada(py):
    # Each patch is undone by its handle, and only while the attribute still holds torchada's
    # value: a later replacement (mock.patch, another library) survives disable().
    code = """
        import json, torch, torchada
        from torchada import _activation, _simulator
        assert not torchada.is_enabled()
        _simulator.activate()
        original_generator = torch.Generator
        assert torchada.enable()
        ours_cuda = torch.Tensor.cuda
        theirs = lambda self, *a, **k: "theirs"
        torch.Tensor.cuda = theirs
        handle = _activation._patcher.set_attr(torch.cuda, "probe_attr", 1)
        undone_once, undone_twice = handle.undo(), handle.undo()
        torchada.disable()
        print(json.dumps({
            "kept_theirs": torch.Tensor.cuda is theirs,
            "generator_restored": torch.Generator is original_generator,
            "handle": [undone_once, undone_twice, hasattr(torch.cuda, "probe_attr")],
            "ours_was_different": ours_cuda is not theirs,
        }))
    """
    r = py(code)
    assert r.returncode == 0, r.stderr
    assert _last_json(r.stdout) == {
        "kept_theirs": True,
        "generator_restored": True,
        "handle": [True, False, False],
        "ours_was_different": True,
    }


@pytest.mark.parametrize("first", ["", "torch._dynamo"])
def test_first_enable_changes_nothing_it_does_not_undo(py, first):
    # Also with Dynamo imported first (as torch_musa's FSDP import does): torchada registers
    # torch.cuda's functions with it without using torch.cuda, which stays unsealed.
    code = """
        import json, sys, torch
        import torch.cuda.amp, torch.cuda.memory, torch.cuda.graphs
        FIRST
        before = {k: id(v) for k, v in sys.modules.items()}
        cuda_attr = id(torch.cuda)
        import torchada
        assert torchada.is_enabled() and type(torch.cuda).__name__ == "ProxyModule"
        assert torch.cuda.device_count() == 2  # the first use seals it into a plain module
        assert type(torch.cuda).__name__ == "module"
        torchada.disable()
        changed = [k for k, v in before.items() if id(sys.modules.get(k)) != v]
        print(json.dumps([changed, id(torch.cuda) == cuda_attr]))
    """
    r = py(code.replace("FIRST", f"import {first}" if first else ""), env=SIM)
    assert r.returncode == 0, r.stderr
    assert _last_json(r.stdout) == [[], True]


def test_kill_switch(py):
    r = py(
        "import torch, torchada; print(torchada.is_enabled(), torch.cuda.device_count())",
        env={**SIM, "TORCHADA_DISABLE": "1"},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "0"]


def test_cpu_platform_is_untouched(py):
    code = """
        import json, sys, torch
        cuda = torch.cuda
        import torchada
        print(json.dumps([torchada.is_enabled(), torch.cuda is cuda, "torch_musa" in sys.modules,
                          torchada.detect_platform().value, torchada.is_gpu_device("cuda:1"),
                          bool(torch.version.cuda)]))
    """
    r = py(code)
    assert r.returncode == 0, r.stderr
    *seen, cuda_build = _last_json(r.stdout)
    # A CUDA build of torch (some test venvs) is the CUDA platform, untouched as well.
    assert seen == [False, True, False, "cuda" if cuda_build else "cpu", True]


def test_off_musa_loads_only_the_platform_check():
    # Where torchada has nothing to do it costs the platform check: no tables, hooks or wrapt
    # (bench/bench_off_musa.py measures the milliseconds).
    from conftest import OFF_MUSA_MODULES, modules_loaded_off_musa

    loaded = modules_loaded_off_musa()
    assert "torchada._activation" in loaded and "torchada._core.platform" in loaded
    assert loaded <= OFF_MUSA_MODULES, sorted(loaded - OFF_MUSA_MODULES)


def test_import_torchada_after_torch_enables_without_any_environment(py, tmp_path):
    # As on a MUSA machine with nothing set: torch_musa is installed (here: the simulator's package
    # on the path under its own name), torch imports our entry point, which must neither activate
    # anything nor leave the package cached half-initialised; then the program imports torchada.
    from torchada import _simulator

    (tmp_path / "torch_musa").symlink_to(os.path.join(_simulator.SITE, "torch_musa"))
    code = """
        import json, sys, torch
        from_torch = sorted(m for m in sys.modules if m.split(".")[0] == "torchada")
        import torchada
        print(json.dumps([from_torch, torchada.is_enabled(), torch.cuda.get_device_name(0),
                          str(torch.empty(1, device="cuda").device)]))
    """
    r = py(code, env={"PYTHONPATH": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert _last_json(r.stdout) == [
        ["torchada._autoload", "torchada._core", "torchada._core.env"],
        True,
        "MTT S4000",
        "musa:0",
    ]


def test_platform_override_and_bad_value(py):
    r = py(
        "import torchada; print(torchada.detect_platform().value)",
        env={"TORCHADA_PLATFORM": "CUDA"},
    )
    assert r.stdout.strip() == "cuda", r.stderr
    r = py("import torchada", env={"TORCHADA_PLATFORM": "tpu"})
    assert r.returncode != 0 and "TORCHADA_PLATFORM='tpu'" in r.stderr


def _write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_runner_semantics(tmp_path, py):
    script = _write(
        tmp_path,
        "prog.py",
        """
        import json, sys, torch
        print(json.dumps({"name": __name__, "argv": sys.argv, "path0": sys.path[0],
                          "count": torch.cuda.device_count(), "file": __file__}))
        sys.exit(int(sys.argv[1]))
        """,
    )
    r = py(
        f"import sys; sys.argv = ['x', '--simulate', {str(script)!r}, '3', '--flag'];"
        "import torchada.run as r; r.main()"
    )
    assert r.returncode == 3, r.stderr
    out = _last_json(r.stdout)
    assert out["name"] == "__main__" and out["argv"] == [str(script), "3", "--flag"]
    assert out["path0"] == str(tmp_path) and out["count"] == 2 and out["file"] == str(script)


def test_runner_traceback_and_missing_script(tmp_path):
    import subprocess

    script = _write(tmp_path, "boom.py", "def f():\n    raise ValueError('bad thing')\nf()\n")
    env = {k: v for k, v in os.environ.items() if k != "TORCHADA_SIMULATE"}
    r = subprocess.run(
        [sys.executable, "-m", "torchada.run", str(script)], capture_output=True, text=True, env=env
    )
    assert r.returncode == 1
    assert "ValueError: bad thing" in r.stderr and f'File "{script}", line 2, in f' in r.stderr
    assert "torchada" not in r.stderr.replace(str(tmp_path), "") and "runpy" not in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "torchada.run", str(tmp_path / "nope.py")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 2 and "can't open file" in r.stderr and "nope.py" in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "torchada.run", "--bogus", "x.py"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode != 0 and "unknown option '--bogus'" in r.stderr


def test_runner_module_mode(tmp_path):
    import subprocess

    (tmp_path / "mymod.py").write_text(
        "import sys, torch\nprint(__name__, sys.argv[1:], torch.cuda.get_device_name(0))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TORCHADA_SIMULATE"}
    r = subprocess.run(
        [sys.executable, "-m", "torchada.run", "--simulate", "-m", "mymod", "a"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[:2] == ["__main__", "['a']"] and "MTT S4000" in r.stdout


def test_runner_under_importtime(tmp_path):
    # `python -X importtime -m torchada.run` profiles the program's imports as it would without.
    import subprocess

    script = _write(tmp_path, "prog.py", "import json, torch\nprint(torch.cuda.device_count())\n")
    env = {k: v for k, v in os.environ.items() if k != "TORCHADA_SIMULATE"}
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "torchada.run", "--simulate", str(script)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == "2"
    timed = [line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if "|" in line]
    assert "torch" in timed and "torch_musa" in timed and "json" in timed


def test_children_inherit_under_torchrun_and_spawn(tmp_path):
    import subprocess

    worker = _write(
        tmp_path,
        "worker.py",
        """
        import json, os, sys, torch
        import torch.multiprocessing as mp

        def child(i, q):
            import torch
            c = torch.cuda
            count = c.device_count()  # the first use seals the proxy into a plain module
            q.put([type(c).__name__, count, c.get_device_name(0)])

        if __name__ == "__main__":
            import torchada
            q = mp.get_context("spawn").SimpleQueue()
            mp.spawn(child, args=(q,), nprocs=1)
            print(json.dumps({"rank": int(os.environ["RANK"]), "enabled": torchada.is_enabled(),
                              "count": torch.cuda.device_count(), "spawned": q.get()}))
        """,
    )
    env = {k: v for k, v in os.environ.items() if k != "TORCHADA_SIMULATE"}
    cmd = [
        sys.executable,
        "-m",
        "torchada.run",
        "--simulate",
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        str(worker),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert sorted(x["rank"] for x in lines) == [0, 1]
    for x in lines:
        assert x["enabled"] and x["count"] == 2
        assert x["spawned"] == ["module", 2, "MTT S4000"]


def test_cpp_extension_fills_load_at_first_use_over_torch_musas_classes(py):
    code = """
        import json, sys, torch
        import torchada
        deferred = "torchada._extensions.cpp_extension" not in sys.modules
        preloaded = "torch_musa.utils.musa_extension" in sys.modules
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension, CppExtension
        import torch_musa.utils.musa_extension as me
        mro = [f"{c.__module__}.{c.__name__}" for c in BuildExtension.__mro__[:3]]
        print(json.dumps([deferred, preloaded, mro, CUDAExtension.__module__,
                          CppExtension.__module__, me.BuildExtension.__module__]))
    """
    r = py(code, env=SIM)
    assert r.returncode == 0, r.stderr
    assert _last_json(r.stdout) == [
        True,
        True,
        [
            "torchada._extensions.cpp_extension.BuildExtension",
            "torch_musa.utils.musa_extension.BuildExtension",
            "torch.utils.cpp_extension.BuildExtension",
        ],
        "torchada._extensions.cpp_extension",
        "torch.utils.cpp_extension",
        "torch_musa.utils.musa_extension",
    ]


def test_preload_defaults_to_the_modules_that_fill_names():
    from torchada._activation import preload
    from torchada._cuda.redirect import load_table

    table = load_table()
    assert preload(table["ctypes"]) == ["torchada._libraries.ctypes_bindings"]
    assert preload(table["torch.utils.cpp_extension"]) == ["torch_musa.utils.musa_extension"]
    assert preload({"names": {"x": {"kind": "original"}}}) == []


_MAIN_PROBE = '''\
"""probe docstring"""
import inspect, json, os, signal, sys, types

main = sys.modules["__main__"]


def _describe(value):
    if isinstance(value, (str, int, type(None))):
        return [type(value).__name__, value]
    if isinstance(value, dict):
        return [type(value).__name__, sorted(value)]
    return [type(value).__name__, getattr(value, "name", None)]


def helper():
    return 1


attrs = {k: _describe(v) for k, v in vars(main).items() if k not in ("torch", "torchada")}
os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
source = inspect.getsource(helper).splitlines()[0]
print(json.dumps({"attrs": attrs, "argv0": sys.argv[0], "path0": sys.path[0], "src": source,
                  "main_is_self": main is sys.modules["__main__"]}))
sys.stdout.flush()
mode = sys.argv[1]
if mode == "jit":
    import torch

    @torch.jit.script
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    print(json.dumps({"jit": twice(torch.ones(2)).tolist()}))
elif mode == "exit3":
    sys.exit(3)
elif mode == "raise":
    def fail():
        raise ValueError("bad thing")
    fail()
elif mode == "interrupt":
    raise KeyboardInterrupt
'''


@pytest.mark.parametrize("mode", ["jit", "exit3", "raise", "interrupt"])
@pytest.mark.parametrize("how", ["script", "module"])
def test_runner_main_module_and_exit_match_python(tmp_path, how, mode):
    # The program sees the same __main__ (names, types, values) and ends the same way as under
    # plain python, including after os.chdir (source lookup) and on Ctrl-C (killed by SIGINT).
    import subprocess

    work = tmp_path / "work"
    work.mkdir()
    (work / "probe.py").write_text(_MAIN_PROBE)
    target = ["probe.py"] if how == "script" else ["-m", "probe"]
    env = {k: v for k, v in os.environ.items() if k != "TORCHADA_SIMULATE"}
    runs = {}
    for name, prefix in (("python", []), ("runner", ["-m", "torchada.run", "--simulate"])):
        runs[name] = subprocess.run(
            [sys.executable, *prefix, *target, mode],
            capture_output=True,
            text=True,
            env=env,
            cwd=work,
            timeout=300,
        )
    plain, ours = runs["python"], runs["runner"]
    expected_rc = {"jit": 0, "exit3": 3, "raise": 1, "interrupt": -signal.SIGINT}[mode]
    assert plain.returncode == expected_rc, plain.stderr
    assert ours.returncode == expected_rc, ours.stderr[-3000:]
    plain_out = [json.loads(x) for x in plain.stdout.splitlines()]
    ours_out = [json.loads(x) for x in ours.stdout.splitlines()]
    assert ours_out == plain_out
    attrs = plain_out[0]["attrs"]
    assert attrs["__spec__"][0] == ("NoneType" if how == "script" else "ModuleSpec")
    assert attrs["__builtins__"][0] == "module" and attrs["__loader__"][0] == "SourceFileLoader"
    assert attrs["__file__"] == ["str", str(work / "probe.py")]
    assert plain_out[0]["src"] == "def helper():"
    if mode == "jit":
        assert plain_out[1] == {"jit": [2.0, 2.0]}
    if mode in ("raise", "interrupt"):
        assert _program_stderr(ours.stderr) == plain.stderr.splitlines()


def _program_stderr(text):
    # Startup notes before the program runs: torchada's log of what it leaves out on this torch
    # and torch's CUDA_HOME guess on a CUDA build of torch (some test venvs).
    lines = text.splitlines()
    # torch logs the guess bare (2.7) or with its logger's prefix (2.9: "W1126 ... ] No CUDA ...").
    while lines:
        if lines[0].startswith("torchada: ") or "No CUDA runtime is found" in lines[0]:
            lines.pop(0)
        elif is_torch_musa_version_warning(lines[0]):
            lines.pop(0)
            if lines and lines[0].startswith(" "):
                lines.pop(0)
        else:
            break
    return lines


@pytest.mark.parametrize("how", ["runner", "runner-no-cuda-available", "import"])
def test_is_available_answers_for_musa_in_the_program_and_its_children(tmp_path, how):
    # `"cuda" if torch.cuda.is_available() else "cpu"` picks the GPU, in children too, with no
    # note to give; --no-cuda-available keeps the published answer (False) for the whole tree.
    import subprocess

    script = _write(
        tmp_path,
        "prog.py",
        """
        import json, os, subprocess, sys
        if sys.argv[1] == "import":
            import torchada
        import torch
        child = subprocess.run([sys.executable, "-c", "import torch, torchada; "
                                "print(torch.cuda.is_available())"],
                               capture_output=True, text=True).stdout.split()[-1]
        print(json.dumps([torch.cuda.is_available(), torch.musa.is_available(), child,
                          os.environ.get("TORCHADA_FORCE_CUDA_AVAILABLE")]))
        """,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHADA_")}
    if how == "import":
        cmd = [sys.executable, str(script), "import"]
        env["TORCHADA_SIMULATE"] = "1"
    else:
        flags = ["--no-cuda-available"] if how == "runner-no-cuda-available" else []
        cmd = [sys.executable, "-m", "torchada.run", "--simulate", *flags, str(script), how]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    published = how == "runner-no-cuda-available"
    assert _last_json(r.stdout) == [
        not published,
        True,
        str(not published),
        "0" if published else None,
    ]
    assert "is_available()" not in r.stderr, r.stderr  # nothing to warn about
