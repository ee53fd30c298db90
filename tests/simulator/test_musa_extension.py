"""torch_musa.utils.musa_extension in the simulator: toolkit discovery, arch flags, refusal of MUSA
device sources, and two real host C++ builds (JIT ``load`` and a setup.py) called on musa tensors.

The two builds are cached under torchada's cache dir, keyed by the fixture source, the simulated
module and the torch/Python versions, so only a first run (or a change) pays for compiling.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXT_SRC = Path(__file__).resolve().parent / "sim_ext_src" / "musa_host_ext.cpp"
MODULE_SRC = (
    REPO / "torchada" / "_simulator" / "site" / "torch_musa" / "utils" / "musa_extension.py"
)
JIT_NAME = "torchada_sim_ext_jit"
SETUP_NAME = "torchada_sim_ext_setup"
BUILD_TIMEOUT = 600


@pytest.fixture(scope="module")
def me(musa_sim):
    from torch_musa.utils import musa_extension

    return musa_extension


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No MUSA toolkit hints at all: no env vars, no mcc on PATH."""
    for var in ("MUSA_HOME", "MUSA_PATH", "MUDNN_HOME", "MUDNN_PATH", "TORCH_MUSA_ARCH_LIST"):
        monkeypatch.delenv(var, raising=False)
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    return monkeypatch


@pytest.fixture(scope="session")
def ext_cache() -> Path:
    import torch

    from torchada._native.build import build_key, cache_root

    key = build_key([EXT_SRC, MODULE_SRC], torch.__version__)
    path = cache_root() / "test-musa-extension" / key
    path.mkdir(parents=True, exist_ok=True)
    return path


def _jit_folder() -> str:
    import torch

    musa = torch.version.musa.replace(".", "")
    return f"py{sys.version_info.major}{sys.version_info.minor}_mu{musa}"


def _fake_mcc(root: Path) -> Path:
    mcc = root / "bin" / "mcc"
    mcc.parent.mkdir(parents=True)
    mcc.write_text("#!/bin/sh\nexit 0\n")
    mcc.chmod(mcc.stat().st_mode | stat.S_IEXEC)
    return mcc


def _sim_env(**extra: str) -> dict:
    env = {"TORCHADA_SIMULATE": "1"}
    env.update(extra)
    return env


# --- MUSA_HOME / MUDNN_HOME ---------------------------------------------------------------------


def test_musa_home_resolution_order(me, clean_env, tmp_path, capsys):
    home, path = tmp_path / "home", tmp_path / "path"
    clean_env.setenv("MUSA_HOME", str(home))
    clean_env.setenv("MUSA_PATH", str(path))
    assert me._find_musa_home() == str(home)

    clean_env.delenv("MUSA_HOME")
    assert me._find_musa_home() == str(path)

    clean_env.delenv("MUSA_PATH")
    toolkit = tmp_path / "toolkit"
    mcc = _fake_mcc(toolkit)
    clean_env.setenv("PATH", str(mcc.parent))
    assert me._find_musa_home() == str(toolkit)

    clean_env.setenv("PATH", str(tmp_path / "empty-bin"))
    real_exists = os.path.exists
    clean_env.setattr(
        me.os.path, "exists", lambda p: True if p == "/usr/local/musa" else real_exists(p)
    )
    assert me._find_musa_home() == "/usr/local/musa"

    clean_env.setattr(
        me.os.path, "exists", lambda p: False if p == "/usr/local/musa" else real_exists(p)
    )
    assert me._find_musa_home() is None
    # Simulated devices are visible in this process: the runtime counts as found.
    assert "No MUSA runtime" not in capsys.readouterr().out


def test_mudnn_home_resolution(me, clean_env):
    from torchada._simulator.extension_support import find_mudnn_home

    assert find_mudnn_home() is None
    clean_env.setenv("MUDNN_PATH", "/opt/mudnn-path")
    assert find_mudnn_home() == "/opt/mudnn-path"
    clean_env.setenv("MUDNN_HOME", "/opt/mudnn-home")
    assert find_mudnn_home() == "/opt/mudnn-home"


_PRINT_HOMES = """
import json, torch
from torch_musa.utils import musa_extension as me
print("HOMES=" + json.dumps([me.MUSA_HOME, me.MUDNN_HOME, torch.musa.is_available()]))
"""


def _homes(proc: subprocess.CompletedProcess):
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("HOMES=")]
    return json.loads(line[0][len("HOMES=") :])


def test_module_state_at_import(py, tmp_path):
    # MUSA_HOME is computed once, at import: only a fresh interpreter shows it.
    bare = {
        "PATH": str(tmp_path),
        **dict.fromkeys(("MUSA_HOME", "MUSA_PATH", "MUDNN_HOME", "MUDNN_PATH"), ""),
        "TORCHADA_SIM_DEVICES": "2",
        "MUSA_VISIBLE_DEVICES": "0,1",
    }

    home = tmp_path / "musa-home"
    proc = py(
        _PRINT_HOMES, env=_sim_env(**{**bare, "MUSA_HOME": str(home), "MUDNN_PATH": "/opt/dnn"})
    )
    assert _homes(proc) == [str(home), "/opt/dnn", True]
    assert "No MUSA runtime is found" not in proc.stdout

    toolkit = tmp_path / "toolkit"
    mcc = _fake_mcc(toolkit)
    proc = py(_PRINT_HOMES, env=_sim_env(**{**bare, "PATH": str(mcc.parent)}))
    assert _homes(proc)[0] == str(toolkit)

    # A toolkit but no device: torch_musa says so on stdout.
    proc = py(
        _PRINT_HOMES, env=_sim_env(**{**bare, "MUSA_PATH": str(home), "TORCHADA_SIM_DEVICES": "0"})
    )
    assert _homes(proc) == [str(home), None, False]
    assert f"No MUSA runtime is found, using MUSA_HOME='{home}'" in proc.stdout


# --- arch flags ---------------------------------------------------------------------------------


def test_arch_flags_from_env(me, clean_env):
    clean_env.setenv("TORCH_MUSA_ARCH_LIST", "21;22")
    assert me._get_musa_arch_flags() == ["--offload-arch=mp_21", "--offload-arch=mp_22"]
    clean_env.setenv("TORCH_MUSA_ARCH_LIST", " 31 ;; 10;31;32 ")
    assert me._get_musa_arch_flags() == [
        "--offload-arch=mp_31",
        "--offload-arch=mp_10",
        "--offload-arch=mp_32",
    ]


@pytest.mark.parametrize("value, bad", [("21;99", "99"), ("2.1", "2.1"), ("mp_22", "mp_22")])
def test_arch_flags_reject_unknown(me, clean_env, value, bad):
    clean_env.setenv("TORCH_MUSA_ARCH_LIST", value)
    with pytest.raises(ValueError, match=rf"^Unknown MUSA arch \({bad}\)"):
        me._get_musa_arch_flags()


def test_arch_flags_default_to_visible_devices(me, clean_env):
    import torch

    major, minor = torch.musa.get_device_capability(0)
    with pytest.warns(UserWarning, match="TORCH_MUSA_ARCH_LIST is not set"):
        flags = me._get_musa_arch_flags()
    assert flags == [f"--offload-arch=mp_{major}{minor}"]


def test_arch_flags_given_in_cflags(me, clean_env):
    clean_env.setenv("TORCH_MUSA_ARCH_LIST", "21")
    assert me._get_musa_arch_flags(["-O2", "--offload-arch=mp_31"]) == []
    assert me._get_musa_arch_flags(["--offload-arch", "mp_22"]) == []
    with pytest.raises(ValueError, match=r"Unknown MUSA arch \(mp_99\)"):
        me._get_musa_arch_flags(["--offload-arch=mp_99"])


# --- MUSA device sources are refused ------------------------------------------------------------


def _assert_no_mcc(err: pytest.ExceptionInfo, *names: str) -> None:
    text = str(err.value)
    for name in names:
        assert name in text
    assert "no MUSA compiler (mcc)" in text
    assert "host C++ (.cpp) sources only" in text and "real MUSA hardware" in text


def test_musa_extension_refuses_mu_sources(me):
    with pytest.raises(RuntimeError) as err:
        me.MUSAExtension("ext", ["host.cpp", "kernels.mu", "kernels.muh"])
    _assert_no_mcc(err, "MUSAExtension('ext')", "kernels.mu, kernels.muh")
    assert "host.cpp" not in str(err.value)


def test_cu_sources_are_not_musa_sources(me):
    with pytest.raises(ValueError, match=r"kernel\.cu: \.cu/\.cuh are not MUSA sources"):
        me.MUSAExtension("ext", ["host.cpp", "kernel.cu"])


def test_load_refuses_mu_before_building(me, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    with pytest.raises(RuntimeError) as err:
        me.load("never_built", [str(EXT_SRC), str(tmp_path / "k.mu")])
    _assert_no_mcc(err, "load(name='never_built')", str(tmp_path / "k.mu"))
    assert list(tmp_path.iterdir()) == []


def test_load_inline_refuses_musa_sources(me, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    with pytest.raises(RuntimeError) as err:
        me.load_inline(
            "never_built", "int f() { return 1; }", musa_sources="__global__ void k() {}"
        )
    _assert_no_mcc(err, "load_inline(name='never_built')", "musa_sources")
    assert list(tmp_path.iterdir()) == []


def test_build_extension_refuses_mu_sources(me, tmp_path):
    from setuptools import Distribution, Extension

    dist = Distribution({"name": "p", "ext_modules": [Extension("p", ["a.cpp", "b.mu"])]})
    cmd = me.BuildExtension(dist)
    cmd.build_lib = str(tmp_path / "lib")
    cmd.build_temp = str(tmp_path / "tmp")
    cmd.ensure_finalized()
    with pytest.raises(RuntimeError) as err:
        cmd.run()
    _assert_no_mcc(err, "extension 'p'", "b.mu")


# --- MUSAExtension / BuildExtension / paths ---------------------------------------------------


def test_build_extension_options(me):
    from setuptools import Distribution
    from setuptools.command.build_ext import build_ext
    from torch.utils.cpp_extension import BuildExtension as TorchBuildExtension

    assert issubclass(me.BuildExtension, TorchBuildExtension)
    assert issubclass(me.BuildExtension, build_ext)
    dist = Distribution({"name": "p"})
    plain = me.BuildExtension(dist)
    assert plain.use_ninja is True and plain.no_python_abi_suffix is False
    custom = me.BuildExtension.with_options(no_python_abi_suffix=True, use_ninja=False)(dist)
    assert isinstance(custom, me.BuildExtension)
    assert custom.no_python_abi_suffix is True and custom.use_ninja is False


def test_musa_extension_fields(me, monkeypatch):
    monkeypatch.setattr(me, "MUSA_HOME", None)
    monkeypatch.setattr(me, "MUDNN_HOME", None)
    caller_args = {"cxx": ["-O1"], "mcc": ["--offload-arch=mp_22"]}
    ext = me.MUSAExtension(
        "pkg.ext",
        ["a.cpp"],
        libraries=["m"],
        include_dirs=["/my/include"],
        extra_compile_args=caller_args,
    )
    import setuptools

    assert isinstance(ext, setuptools.Extension)
    assert ext.name == "pkg.ext" and ext.sources == ["a.cpp"] and ext.language == "c++"
    assert ext.libraries == ["m", "c10", "torch", "torch_cpu", "torch_python"]
    assert "musa_python" not in ext.libraries
    assert ext.include_dirs[0] == "/my/include"
    assert ext.include_dirs[1:] == me.include_paths(musa=True)
    assert ext.library_dirs == me.library_paths(musa=True)
    assert ext.runtime_library_dirs == ext.library_dirs
    assert ext.extra_compile_args == caller_args and ext.extra_compile_args is not caller_args

    with pytest.raises(ValueError, match=r"Unknown MUSA arch \(mp_11\)"):
        me.MUSAExtension("e", ["a.cpp"], extra_compile_args={"mcc": ["--offload-arch=mp_11"]})
    monkeypatch.setenv("TORCH_MUSA_ARCH_LIST", "21;23")
    with pytest.raises(ValueError, match=r"Unknown MUSA arch \(23\)"):
        me.MUSAExtension("e", ["a.cpp"], extra_compile_args={"mcc": ["-O2"]})
    # Host-only: no MUSA flags, so the arch list is not consulted (nothing would use it).
    assert me.MUSAExtension("e", ["a.cpp"], extra_compile_args={"cxx": []}).name == "e"


def test_cxx_standard_added_when_missing(me):
    from torchada._simulator import extension_support as support

    flags = ["-O2"]
    support.append_std_if_missing(flags)
    assert flags == ["-O2", f"-std={support.cxx_std()}"]
    # Never below torch_musa's own C++17; newer when the installed torch's headers need it.
    assert int(support.cxx_std()[3:]) >= 17
    flags = ["-std=gnu++20"]
    support.append_std_if_missing(flags)
    assert flags == ["-std=gnu++20"]


def test_include_and_library_paths(me, monkeypatch, tmp_path):
    import torch

    torch_root = os.path.dirname(torch.__file__)
    for musa in (False, True):
        inc, lib = me.include_paths(musa=musa), me.library_paths(musa=musa)
        assert inc and lib
        assert all(isinstance(p, str) and os.path.isdir(p) for p in inc + lib)
        assert os.path.join(torch_root, "include") in inc
        assert os.path.join(torch_root, "lib") in lib

    toolkit, dnn = tmp_path / "musa", tmp_path / "mudnn"
    for d in (toolkit / "include", toolkit / "lib", dnn / "include"):
        d.mkdir(parents=True)
    monkeypatch.setattr(me, "MUSA_HOME", str(toolkit))
    monkeypatch.setattr(me, "MUDNN_HOME", str(dnn))
    assert str(toolkit / "include") not in me.include_paths()
    assert me.include_paths(musa=True)[-2:] == [str(toolkit / "include"), str(dnn / "include")]
    # mudnn/lib does not exist: it is left out rather than handed to the linker.
    assert me.library_paths(musa=True)[-1] == str(toolkit / "lib")
    assert str(dnn / "lib") not in me.library_paths(musa=True)

    monkeypatch.setattr(me, "MUSA_HOME", str(tmp_path / "missing"))
    assert me.include_paths(musa=True) == me.include_paths() + [str(dnn / "include")]


def test_jit_build_directory(me, monkeypatch, tmp_path):

    folder = _jit_folder()
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "env-root"))
    built = me._get_build_directory("ext_a", verbose=False)
    assert built == str(tmp_path / "env-root" / folder / "ext_a")
    assert os.path.isdir(built)

    monkeypatch.delenv("TORCH_EXTENSIONS_DIR")
    monkeypatch.setattr(me._cpp, "get_default_build_root", lambda: str(tmp_path / "default"))
    assert me._get_build_directory("ext_b", False) == str(tmp_path / "default" / folder / "ext_b")


def test_load_delegates_to_torch(me, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(me._cpp, "load", lambda *a, **k: calls.append((a, k)) or "module")
    monkeypatch.setattr(me._cpp, "load_inline", lambda *a, **k: calls.append((a, k)) or "inline")
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    toolkit = tmp_path / "musa"
    (toolkit / "include").mkdir(parents=True)
    (toolkit / "lib").mkdir()
    monkeypatch.setattr(me, "MUSA_HOME", str(toolkit))
    monkeypatch.setattr(me, "MUDNN_HOME", None)

    assert me.load("a", "a.cpp", extra_cflags=["-O1"], extra_musa_cflags=["-O3"]) == "module"
    args, kw = calls.pop()
    assert args == ("a", ["a.cpp"])
    assert kw["with_cuda"] is False and kw["extra_cuda_cflags"] is None
    assert kw["extra_cflags"] == ["-O1"]
    assert kw["extra_include_paths"] == [] and kw["extra_ldflags"] == []
    assert "with_sycl" not in kw and "extra_sycl_cflags" not in kw
    assert kw["build_directory"].startswith(str(tmp_path)) and kw["build_directory"].endswith("/a")

    me.load("b", ["b.cpp"], with_musa=True, build_directory=str(tmp_path / "mine"))
    args, kw = calls.pop()
    assert kw["build_directory"] == str(tmp_path / "mine")
    assert kw["extra_include_paths"] == [str(toolkit / "include")]
    assert kw["extra_ldflags"] == [f"-L{toolkit / 'lib'}"]

    sources = ["int f() { return 1; }"]
    assert me.load_inline("c", sources, functions=["f"], musa_sources=[]) == "inline"
    args, kw = calls.pop()
    assert args[0] == "c" and args[1] == sources and args[1] is not sources
    assert kw["functions"] == ["f"] and kw["with_cuda"] is False and kw["cuda_sources"] is None

    monkeypatch.setenv("TORCH_MUSA_ARCH_LIST", "22;5")
    with pytest.raises(ValueError, match=r"Unknown MUSA arch \(5\)"):
        me.load("d", ["d.cpp"], extra_musa_cflags=["-O2"])
    with pytest.raises(ValueError, match=r"Unknown MUSA arch \(mp_12\)"):
        me.load_inline("e", "", extra_musa_cflags=["--offload-arch=mp_12"])
    # Arch flags in the MUSA cflags replace TORCH_MUSA_ARCH_LIST, as they do for mcc.
    assert me.load("f", ["f.cpp"], extra_musa_cflags=["--offload-arch=mp_31"]) == "module"
    assert calls.pop()[0] == ("f", ["f.cpp"])
    assert calls == []


# --- real builds --------------------------------------------------------------------------------


def _check_module_on_musa(mod) -> None:
    import torch

    dev = torch.device("musa", torch.musa.device_count() - 1)
    x = torch.arange(6, dtype=torch.float32, device=dev).reshape(2, 3)
    y = mod.scale_add_index(x, 2.5)
    assert y.device == dev
    expected = x.cpu() * 2.5 + torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert torch.equal(y.cpu(), expected)
    # A non-contiguous input goes through ATen's copy, then the raw loop.
    yt = mod.scale_add_index(x.t(), 1.0)
    assert torch.equal(yt.cpu(), x.cpu().t().contiguous() + torch.arange(6.0).reshape(3, 2))

    s = mod.sum_squares(x)
    assert s.device == dev and s.dtype == torch.float64 and s.item() == 55.0

    assert mod.is_musa(x) is True and mod.is_musa(x.cpu()) is False
    assert mod.device_type_name(x) == "musa"
    with pytest.raises(RuntimeError, match="expected a musa tensor"):
        mod.scale_add_index(x.cpu(), 1.0)


@pytest.mark.slow
def test_load_builds_host_extension(me, ext_cache, monkeypatch):
    from torchada._native.build import _locked

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(ext_cache / "jit"))
    monkeypatch.setattr(me, "MUSA_HOME", None)
    monkeypatch.setattr(me, "MUDNN_HOME", None)
    with _locked(ext_cache / "jit.lock"):
        # Holding our lock, only a builder killed mid-way can have left torch's baton behind.
        (ext_cache / "jit" / _jit_folder() / JIT_NAME / "lock").unlink(missing_ok=True)
        mod = me.load(JIT_NAME, [str(EXT_SRC)], extra_cflags=["-O1"])
        # MUSA flags and with_musa change nothing a host build uses: no rebuild, same library.
        again = me.load(
            JIT_NAME,
            [str(EXT_SRC)],
            extra_cflags=["-O1"],
            extra_musa_cflags=["-O3"],
            with_musa=True,
        )
    assert Path(mod.__file__).parent == ext_cache / "jit" / _jit_folder() / JIT_NAME
    _check_module_on_musa(mod)
    assert again.__file__ == mod.__file__


_SETUP_PY = f"""
import torch  # brings the simulated torch_musa in (TORCHADA_SIMULATE=1)
from setuptools import setup
from torch_musa.utils import BuildExtension, MUSAExtension

setup(
    name="{SETUP_NAME}",
    ext_modules=[
        MUSAExtension(
            "{SETUP_NAME}",
            ["musa_host_ext.cpp"],
            extra_compile_args={{"cxx": ["-O1"], "mcc": ["-O2"]}},
        )
    ],
    cmdclass={{"build_ext": BuildExtension.with_options(no_python_abi_suffix=True)}},
)
"""

_RUN_BUILT = f"""
import sys, torch
sys.path.insert(0, ".")
import {SETUP_NAME} as mod
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from test_musa_extension import _check_module_on_musa
_check_module_on_musa(mod)
print("CHECKED", mod.__file__)
"""


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


@pytest.mark.slow
def test_setup_py_build_with_musa_extension(ext_cache, py):
    from torchada._native.build import _locked

    work = ext_cache / "setup"
    with _locked(ext_cache / "setup.lock"):
        work.mkdir(exist_ok=True)
        # Unchanged files keep their mtime, so ninja finds the objects up to date on a rerun.
        _write_if_changed(work / "musa_host_ext.cpp", EXT_SRC.read_text())
        _write_if_changed(work / "setup.py", textwrap.dedent(_SETUP_PY))
        env = {**os.environ, "TORCHADA_SIMULATE": "1", "TORCH_MUSA_ARCH_LIST": "21;22"}
        proc = subprocess.run(
            [sys.executable, "setup.py", "build_ext", "--inplace"],
            cwd=work,
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
        )
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
        built = work / f"{SETUP_NAME}.so"  # no_python_abi_suffix=True
        assert built.is_file()
        # torch's ninja backend compiled it, with the C++ standard and extension name added.
        ninja_files = list((work / "build").glob("temp.*/build.ninja"))
        assert len(ninja_files) == 1
        ninja_text = ninja_files[0].read_text()
        assert "-std=c++" in ninja_text and f"-DTORCH_EXTENSION_NAME={SETUP_NAME}" in ninja_text
        assert "mcc" not in ninja_text and "nvcc" not in ninja_text

        proc = py(_RUN_BUILT, env=_sim_env(), cwd=str(work))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"CHECKED {built}" in proc.stdout
