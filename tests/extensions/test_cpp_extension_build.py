"""End to end: a host C++ extension written against CUDA's APIs
(tests/extensions/cpp_extension_src), built through torchada on the simulator by a setup.py with
CUDAExtension and by load(), then called on musa tensors. Two C++ builds, cached under torchada's
cache dir (keyed by the sources, torchada's extension code, the simulated torch_musa headers and
torch), so only a first run compiles.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import torchada

REPO = Path(__file__).resolve().parents[2]
SRC = Path(__file__).resolve().parent / "cpp_extension_src"
HEADERS = REPO / "csrc" / "simulator" / "include"
JIT_NAME = "torchada_cuda_host_jit"
SETUP_NAME = "torchada_cuda_host_setup"
BUILD_TIMEOUT = 600


def check_module(mod) -> None:
    """The extension, however it was built, on the last simulated device."""
    import torch

    dev = torch.device("musa", torch.musa.device_count() - 1)
    x = torch.arange(6, dtype=torch.float32, device=dev).reshape(2, 3)
    y = mod.scale_add_index(x, 2.5)
    assert y.device == dev
    assert torch.equal(y.cpu(), x.cpu() * 2.5 + torch.arange(6.0).reshape(2, 3))
    # x.is_cuda() became a PrivateUse1 check: a CPU tensor is refused with the program's message.
    with pytest.raises(RuntimeError, match="x must be a CUDA tensor, got one on cpu"):
        mod.scale_add_index(x.cpu(), 1.0)

    # CUDAGuard switches to x's device for its scope only.
    before = torch.musa.current_device()
    assert before != dev.index
    assert mod.guard_devices(x) == [before, dev.index, before]
    assert torch.musa.current_device() == before

    # The current stream seen from C++ is the one Python made current.
    side = torch.musa.Stream(device=dev)
    with torch.musa.stream(side):
        assert mod.current_stream_handle(dev.index) == side.musa_stream != 0
    current = torch.musa.current_stream(dev)
    assert mod.current_stream_handle(dev.index) == current.musa_stream
    pool, outside, inside, after = mod.stream_guard_ids(dev.index)
    assert inside == pool != outside and after == outside == current.stream_id

    # Runtime calls are checked: C10_CUDA_CHECK / AT_CUDA_CHECK became the MUSA checks.
    assert mod.runtime_device_count() == torch.musa.device_count()
    with pytest.raises(RuntimeError, match=r"MUSA error: invalid argument .*musaGetDeviceCount"):
        mod.failing_runtime_call()


@pytest.fixture(scope="module")
def ext_cache() -> Path:
    import torch

    from torchada._native.build import build_key, cache_root

    inputs = sorted(p for p in SRC.rglob("*") if p.is_file())
    inputs += sorted(p for p in HEADERS.rglob("*") if p.is_file())
    inputs += [
        REPO / "torchada" / "_extensions" / "cpp_extension.py",
        REPO / "torchada" / "_extensions" / "build_settings.py",
        REPO / "torchada" / "_extensions" / "build_porting.py",
        REPO / "torchada" / "tables" / "cuda_build.json",
        REPO / "torchada" / "tables" / "libraries.json",
    ]
    path = cache_root() / "test-cpp-extension" / build_key(inputs, torch.__version__)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _sync_sources(dest: Path) -> None:
    """Copy the fixture sources, rewriting only what changed (mtimes decide ninja's rebuilds)."""
    for src in SRC.rglob("*"):
        if not src.is_file():
            continue
        target = dest / src.relative_to(SRC)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_bytes() != src.read_bytes():
            shutil.copyfile(src, target)


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


_SETUP_PY = f"""
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="{SETUP_NAME}",
    ext_modules=[
        CUDAExtension(
            "{SETUP_NAME}",
            ["cuda_host_ext.cpp"],
            include_dirs=["include"],
            libraries=["cublas"],
            extra_compile_args={{
                "cxx": ["-O1"],
                "nvcc": ["-O2", "-gencode", "arch=compute_80,code=sm_80", "--use_fast_math"],
            }},
        )
    ],
    cmdclass={{"build_ext": BuildExtension.with_options(no_python_abi_suffix=True)}},
)
"""

_RUN_BUILT = f"""
import sys
import torch, torchada
sys.path.insert(0, ".")
import {SETUP_NAME} as mod
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from test_cpp_extension_build import check_module
check_module(mod)
print("CHECKED", mod.__file__)
"""


@pytest.mark.slow
def test_setup_py_with_cuda_extension(ext_cache, py):
    from torchada._native.build import _locked

    work = ext_cache / "setup"
    with _locked(ext_cache / "setup.lock"):
        work.mkdir(exist_ok=True)
        _sync_sources(work)
        _write_if_changed(work / "setup.py", textwrap.dedent(_SETUP_PY))
        env = {**os.environ, "TORCH_CUDA_ARCH_LIST": "8.0;9.0"}
        env.pop("TORCHADA_SIMULATE", None)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "torchada.run",
                "--simulate",
                "setup.py",
                "build_ext",
                "--inplace",
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
        )
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
        assert (work / f"{SETUP_NAME}.so").is_file()
        ported = work / "build" / "torchada_ported" / SETUP_NAME
        assert f"torchada: ported extension {SETUP_NAME}: 3 files" in proc.stdout
        assert (ported / "cuda_host_ext.cpp").is_file() and (ported / "ext_common.muh").is_file()
        device_check = ported / "include" / "host_ext" / "device_check.h"
        assert "t.is_privateuseone()" in device_check.read_text()
        assert "0 unported CUDA-looking names" in (ported / "torchada-port-report.txt").read_text()
        # The originals are untouched; ninja compiled the ported copy.
        for src in SRC.rglob("*"):
            if src.is_file():
                assert (work / src.relative_to(SRC)).read_bytes() == src.read_bytes()
        assert not list(work.glob("*.mu*"))
        ninja = next((work / "build").glob("temp.*/build.ninja")).read_text()
        assert str(ported / "cuda_host_ext.cpp") in ninja and "nvcc" not in ninja

        proc = py(_RUN_BUILT, env={"TORCHADA_SIMULATE": "1"}, cwd=str(work))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"CHECKED {work / SETUP_NAME}.so" in proc.stdout


@pytest.fixture(scope="module")
def enabled(musa_sim):
    assert torchada.enable()
    yield
    torchada.disable()


def _build_state(build: Path) -> dict:
    """mtimes of what a rebuild or a re-port would rewrite."""
    paths = [build / f"{JIT_NAME}.so", build / "cuda_host_ext.o", build / "build.ninja"]
    # The ported copies and the porter's manifests; its report says "cached" now, so it changes.
    ported = (build / "torchada_ported").rglob("*")
    paths += [p for p in ported if p.is_file() and not p.name.startswith("torchada-port-report")]
    return {str(p): p.stat().st_mtime_ns for p in paths}


_LOAD_AGAIN = f"""
import json, torch, torchada
import torch.utils.cpp_extension as ce
from torchada._extensions.cpp_extension import port_report
mod = ce.load({JIT_NAME!r}, [{str(SRC / "cuda_host_ext.cpp")!r}],
              extra_include_paths=[{str(SRC / "include")!r}], extra_cflags=["-O1"],
              extra_cuda_cflags=["-arch=sm_90"], build_directory=BUILD)
report = port_report({JIT_NAME!r})
print("STATUS=" + json.dumps(sorted({{f.status for f in report.files}})), report.written)
print("FILE=" + mod.__file__)
"""


@pytest.mark.slow
def test_load_ports_builds_and_reuses(enabled, ext_cache, py):
    import torch.utils.cpp_extension as ce

    from torchada._extensions.cpp_extension import port_report
    from torchada._native.build import _locked

    build = ext_cache / "jit"
    build.mkdir(exist_ok=True)
    kwargs = dict(
        extra_include_paths=[str(SRC / "include")],
        extra_cflags=["-O1"],
        extra_cuda_cflags=["-arch=sm_90"],
        build_directory=str(build),
    )
    with _locked(ext_cache / "jit.lock"):
        # Holding our lock, only a builder killed mid-way can have left torch's baton behind.
        (build / "lock").unlink(missing_ok=True)
        mod = ce.load(JIT_NAME, [str(SRC / "cuda_host_ext.cpp")], **kwargs)
        assert Path(mod.__file__) == build / f"{JIT_NAME}.so"
        first = port_report(JIT_NAME)
        assert {f.path for f in first.files} == {
            "cuda_host_ext.cpp",
            "ext_common.cuh",
            "include/host_ext/device_check.h",
        }
        assert not first.remaining()
        state = _build_state(build)

        # Unchanged sources: nothing is ported, written or compiled again, in this process...
        again = ce.load(JIT_NAME, [str(SRC / "cuda_host_ext.cpp")], **kwargs)
        second = port_report(JIT_NAME)
        assert {f.status for f in second.files} == {"cached"} and second.written == []
        assert again.__file__ == mod.__file__
        assert _build_state(build) == state

        # ...nor in a fresh one, where torch runs ninja again and it finds nothing to do.
        proc = py(_LOAD_AGAIN.replace("BUILD", repr(str(build))), env={"TORCHADA_SIMULATE": "1"})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert 'STATUS=["cached"] []' in proc.stdout
        assert f"FILE={mod.__file__}" in proc.stdout
        assert _build_state(build) == state
    check_module(mod)
