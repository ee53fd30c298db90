"""torchada._extensions.cpp_extension, torch.utils.cpp_extension through torchada, without
compiling: the torch-facing functions translate build settings
(tests/extensions/test_build_settings.py has the rules) and leave the caller's arguments alone, both
include_paths() signatures, sources ported into the build tree, and CUDA device code refused after
porting."""

from __future__ import annotations

import copy
import hashlib
import os
import re
import warnings
from pathlib import Path

import pytest


def _sim_headers(me) -> str:
    # The simulated toolkit's headers live beside the simulator's C sources.
    from torchada._simulator import native

    return str(native.include_dir())


def _sim_include_paths(me) -> "list[str]":
    # What torch_musa adds to a build: its headers that differ by release (MUSAGraph.h) first,
    # then the toolkit's.
    from torchada._simulator import native, releases

    return [str(native.release_include_dir(releases.resolve())), _sim_headers(me)]


SRC = Path(__file__).resolve().parent / "cpp_extension_src"


pytestmark = pytest.mark.usefixtures("torchada_on")


@pytest.fixture(scope="module")
def ce(torchada_on):
    import torch.utils.cpp_extension as ce

    return ce


@pytest.fixture(scope="module")
def tx(torchada_on):
    from torchada._extensions import cpp_extension as _cpp_extension

    return _cpp_extension


@pytest.fixture(scope="module")
def me(musa_sim):
    from torch_musa.utils import musa_extension

    return musa_extension


@pytest.fixture
def captured(tx, monkeypatch):
    """torch_musa's load/load_inline replaced by recorders: what torchada hands them."""
    calls = []
    monkeypatch.setattr(tx._me, "load", lambda *a, **k: calls.append((a, k)) or "module")
    monkeypatch.setattr(tx._me, "load_inline", lambda *a, **k: calls.append((a, k)) or "inline")
    return calls


def _tree_digest(root: Path) -> dict:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# --- the proxy ----------------------------------------------------------------------------------


def test_names_through_the_proxy(ce, tx, me):
    original = ce.__dict__["__torchada_original__"]
    assert ce.CUDAExtension is tx.CUDAExtension
    assert ce.BuildExtension is tx.BuildExtension
    assert issubclass(ce.BuildExtension, me.BuildExtension)
    assert issubclass(ce.BuildExtension, original.BuildExtension)
    assert ce.load is tx.load and ce.load_inline is tx.load_inline
    assert ce.CppExtension is original.CppExtension  # host-only extensions are torch's own
    assert ce.CUDA_HOME is me.MUSA_HOME and ce.CUDNN_HOME is me.MUDNN_HOME
    from torch.utils.cpp_extension import CUDAExtension, include_paths

    assert CUDAExtension is tx.CUDAExtension and include_paths is tx.include_paths


def test_cuda_extension_translates_and_never_mutates(ce, me, monkeypatch):
    monkeypatch.delenv("TORCH_MUSA_ARCH_LIST", raising=False)
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    sources = ["host.cpp", "kernel.cu"]
    kwargs = dict(
        include_dirs=["include"],
        libraries=["cublas", "c10_cuda", "m"],
        library_dirs=["/opt/lib"],
        extra_compile_args={
            "cxx": ["-O1"],
            "nvcc": ["-O2", "-gencode", "arch=compute_90,code=sm_90"],
        },
        extra_link_args=["-lcurand"],
        dlink=True,
        dlink_libraries=["cufft"],
    )
    saved = copy.deepcopy((sources, kwargs))
    ext = ce.CUDAExtension("pkg.ext", sources, **kwargs)
    assert (sources, kwargs) == saved, "the caller's arguments changed"
    assert ext.sources == sources and ext.sources is not sources  # ported when built
    assert ext.libraries[:2] == ["mublas", "m"]
    assert {"c10", "torch", "torch_cpu", "torch_python"} <= set(ext.libraries)
    assert not {"cublas", "c10_cuda", "cudart", "torch_cuda"} & set(ext.libraries)
    assert ext.extra_compile_args == {
        "cxx": ["-O1"],
        "mcc": ["-O2", "--offload-arch=mp_31"],
        "mcc_dlink": ["-lmufft"],
    }
    assert ext.extra_link_args == ["-lmurand"]
    assert ext.include_dirs[0] == "include"
    assert ext.include_dirs[1:] == me.include_paths(musa=True)
    assert _sim_headers(me) in ext.include_dirs
    assert ext.library_dirs[0] == "/opt/lib" and not hasattr(ext, "dlink")
    # An nvcc architecture torch_musa cannot build for is caught here, as on hardware.
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0")
    monkeypatch.setenv("TORCH_MUSA_ARCH_LIST", "21;99")
    with pytest.raises(ValueError, match=r"Unknown MUSA arch \(99\)"):
        ce.CUDAExtension("e", ["a.cpp"], extra_compile_args={"nvcc": ["-O2"]})


# --- include_paths / library_paths ---------------------------------------------------------------


def test_include_paths_both_signatures(ce, me):
    import torch

    from torchada.utils.cpp_extension import stable_compat_include_dir

    # A device build has the stable-ABI kit last, as the published adapter gives.
    host, musa = me.include_paths(musa=False), me.include_paths(musa=True)
    musa = musa + [stable_compat_include_dir()]
    for paths in (ce.include_paths(), ce.include_paths("cpu"), ce.include_paths(False),
                  ce.include_paths(cuda=False), ce.include_paths(device_type="cpu")):  # fmt: skip
        assert paths == host
    for paths in (ce.include_paths(True), ce.include_paths(cuda=True), ce.include_paths("cuda"),
                  ce.include_paths(device_type="cuda"), ce.include_paths("musa")):  # fmt: skip
        assert paths == musa
    torch_include = os.path.join(os.path.dirname(torch.__file__), "include")
    assert torch_include in host and _sim_headers(me) in host
    assert os.path.isfile(os.path.join(_sim_headers(me), "musa_runtime.h"))
    without_torch = ce.include_paths("cuda", torch_include_dirs=False)
    assert torch_include not in without_torch and _sim_headers(me) in without_torch
    assert without_torch[-1] == stable_compat_include_dir()
    with pytest.raises(TypeError, match="both device_type and cuda"):
        ce.include_paths("cuda", cuda=True)


def _toolkit(me, monkeypatch, tmp_path, libdir: str):
    """A MUSA toolkit with only ``libdir``; returns (its library directory, torch's)."""
    import torch

    toolkit = tmp_path / "musa"
    (toolkit / libdir).mkdir(parents=True)
    monkeypatch.setattr(me, "MUSA_HOME", str(toolkit))
    monkeypatch.setattr(me, "MUDNN_HOME", None)
    return str(toolkit / libdir), os.path.join(os.path.dirname(torch.__file__), "lib")


def test_library_paths_both_signatures(ce, me, monkeypatch, tmp_path):
    musa_lib, torch_lib = _toolkit(me, monkeypatch, tmp_path, "lib")
    assert (
        ce.library_paths() == ce.library_paths(False) == ce.library_paths(cuda=False) == [torch_lib]
    )
    for paths in (ce.library_paths(True), ce.library_paths(cuda=True), ce.library_paths("cuda"),
                  ce.library_paths(device_type="cuda")):  # fmt: skip
        assert paths == [torch_lib, musa_lib]
    assert ce.library_paths("cuda", torch_include_dirs=False) == [musa_lib]
    with pytest.raises(ValueError, match="cross_target_platform='windows' is not supported"):
        ce.library_paths("cuda", cross_target_platform="windows")


def test_library_paths_hold_the_musa_runtimes_directory(ce, me, monkeypatch, tmp_path):
    # A toolkit with lib64, which torch_musa's own list leaves out: a device build's paths hold
    # it, once, as torch's hold CUDA's, so a build helper that makes each entry an rpath (Mooncake)
    # finds libmusart; a host build links no MUSA runtime.
    musa_lib, torch_lib = _toolkit(me, monkeypatch, tmp_path, "lib64")
    assert ce.library_paths("cuda") == [torch_lib, musa_lib]
    assert ce.library_paths("cuda", torch_include_dirs=False) == [musa_lib]
    assert ce.library_paths() == [torch_lib]
    monkeypatch.setattr(me, "MUSA_HOME", str(tmp_path / "absent"))
    assert ce.library_paths("cuda") == [torch_lib]


def test_other_device_types_are_torchs(ce, tx, monkeypatch):
    seen = []
    monkeypatch.setattr(
        tx._torch_cpp, "include_paths", lambda *a, **k: seen.append((a, k)) or ["i"]
    )
    monkeypatch.setattr(
        tx._torch_cpp, "library_paths", lambda *a, **k: seen.append((a, k)) or ["l"]
    )
    assert ce.include_paths("xpu") == ["i"] and ce.library_paths(device_type="xpu") == ["l"]
    assert seen == [(("xpu",), {}), (("xpu",), {})]


# --- porting into the build tree ----------------------------------------------------------------


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    (proj / "csrc").mkdir(parents=True)
    (proj / "csrc" / "host.cpp").write_text(
        '#include <torch/extension.h>\n#include "helpers.cuh"\n'
        "int host_fn() { return helper(); }\n"
    )
    (proj / "csrc" / "helpers.cuh").write_text(
        "#pragma once\n#include <c10/cuda/CUDAGuard.h>\ninline int helper() { return 1; }\n"
    )
    (proj / "csrc" / "kernel.cu").write_text(
        "#include <cuda_runtime.h>\n__global__ void k(float* p) { p[threadIdx.x] = 0; }\n"
    )
    return proj


def test_load_ports_then_refuses_device_code(ce, tx, tmp_path):
    proj = _project(tmp_path)
    before = _tree_digest(proj)
    build = tmp_path / "build"
    with pytest.raises(RuntimeError) as err:
        sources = [str(proj / "csrc" / "host.cpp"), str(proj / "csrc" / "kernel.cu")]
        ce.load("never_built_cu", sources, build_directory=str(build))
    ported = build / "torchada_ported" / "kernel.mu"
    text = str(err.value)
    assert str(ported) in text and "no MUSA compiler (mcc)" in text
    assert ported.is_file() and (build / "torchada_ported" / "helpers.muh").is_file()
    assert '#include "helpers.muh"' in (build / "torchada_ported" / "host.cpp").read_text()
    assert (
        "torch_musa/csrc/core/MUSAGuard.h"
        in (build / "torchada_ported" / "helpers.muh").read_text()
    )
    assert _tree_digest(proj) == before, "sources must never be modified"
    assert not (build / "build.ninja").exists(), "refused before building"
    report = tx.port_report("never_built_cu")
    assert {f.path for f in report.files} == {"host.cpp", "kernel.cu", "helpers.cuh"}
    assert (build / "torchada_ported" / "torchada-port-report.json").is_file()


def test_build_extension_ports_then_refuses_device_code(ce, tmp_path, monkeypatch):
    from setuptools import Distribution

    proj = _project(tmp_path)
    before = _tree_digest(proj / "csrc")
    monkeypatch.chdir(proj)
    sources, include_dirs = ["csrc/host.cpp", "csrc/kernel.cu"], ["csrc"]
    compile_args = {"cxx": ["-O1"], "nvcc": ["-arch=sm_80"]}
    saved = copy.deepcopy((sources, include_dirs, compile_args))
    ext = ce.CUDAExtension(
        "proj_ext", sources, include_dirs=include_dirs, extra_compile_args=compile_args
    )
    dist = Distribution({"name": "proj", "ext_modules": [ext]})
    cmd = ce.BuildExtension(dist)
    cmd.ensure_finalized()
    with pytest.raises(RuntimeError) as err:
        cmd.run()
    text = str(err.value)
    assert "build/torchada_ported/proj_ext/csrc/kernel.mu" in text, text
    assert "no MUSA compiler (mcc)" in text
    assert (sources, include_dirs, compile_args) == saved, "the caller's arguments changed"
    out = proj / "build" / "torchada_ported" / "proj_ext" / "csrc"
    assert ext.include_dirs[0] == str(out)  # the project's include dir: its ported copy
    assert (out / "kernel.mu").is_file() and (out / "helpers.muh").is_file()
    assert not list(proj.glob("csrc/*.mu")) and not list(proj.glob("csrc/*.muh"))
    assert _tree_digest(proj / "csrc") == before


def test_only_cuda_extensions_are_ported(ce, tx):
    from setuptools import Extension

    assert not tx._is_cuda_extension(ce.CppExtension("plain", ["plain.cpp"]))
    assert tx._is_cuda_extension(ce.CUDAExtension("c", ["a.cpp"]))
    assert tx._is_cuda_extension(Extension("e", ["a.cpp", "k.cu"]))
    assert tx._is_cuda_extension(Extension("e", ["a.cpp"], extra_compile_args={"nvcc": []}))


def test_load_translates_arguments(ce, me, tx, captured, tmp_path, monkeypatch):
    import torch

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "exts"))
    torch_include = os.path.join(os.path.dirname(torch.__file__), "include")
    sources = [str(SRC / "cuda_host_ext.cpp")]
    cflags, cuda_cflags = ["-O1"], ["-O2", "-gencode", "arch=compute_80,code=sm_80"]
    ldflags, includes = ["-lcublas"], [str(SRC / "include"), torch_include]
    saved = copy.deepcopy((sources, cflags, cuda_cflags, ldflags, includes))
    before = _tree_digest(SRC)
    # Positional arguments follow the installed torch's load().
    assert ce.load("translated", sources, cflags, cuda_cflags, extra_ldflags=ldflags,
                   extra_include_paths=includes, with_cuda=True) == "module"  # fmt: skip
    assert (sources, cflags, cuda_cflags, ldflags, includes) == saved
    assert _tree_digest(SRC) == before
    (name, ported), kw = captured.pop()
    build = Path(me._get_build_directory("translated", False))
    out = build / "torchada_ported"
    assert name == "translated" and ported == [str(out / "cuda_host_ext.cpp")]
    assert kw["build_directory"] == str(build)
    assert kw["extra_cflags"] == ["-O1"] and kw["extra_cflags"] is not cflags
    assert kw["extra_musa_cflags"] == ["-O2", "--offload-arch=mp_22"]
    assert kw["with_musa"] is True
    # The project include dir maps to its ported copy, torch's stays, torch_musa's is added.
    assert kw["extra_include_paths"] == [
        str(out / "include"),
        torch_include,
        *_sim_include_paths(me),
    ]
    assert (out / "include" / "host_ext" / "device_check.h").is_file()
    assert (out / "ext_common.muh").is_file() and not (out / "kernel.mu").exists()
    # The code calls the runtime: libmusart is linked, from where the MUSA libraries are.
    from torchada._libraries.ctypes_bindings import musa_library_dir

    lib_dir = musa_library_dir()
    assert kw["extra_ldflags"] == [f"-L{lib_dir}", f"-Wl,-rpath,{lib_dir}", "-lmublas", "-lmusart"]
    # Code only: comments are never rewritten by the porter.
    code = re.sub(r"//[^\n]*", "", (out / "cuda_host_ext.cpp").read_text())
    assert "at::musa::getCurrentMUSAStream" in code and "c10::musa::MUSAStreamGuard" in code
    for cuda in ("at::cuda", "c10::cuda", "cudaStream_t", "cudaGetDeviceCount", "CUDA_CHECK"):
        assert cuda not in code


def test_load_inline_translates_arguments(ce, me, tx, captured, tmp_path):
    cpp = [
        "#include <c10/cuda/CUDAException.h>\n"
        "int f() { C10_CUDA_CHECK(cudaGetLastError()); return 1; }"
    ]
    saved = copy.deepcopy(cpp)
    build = tmp_path / "inline"
    assert ce.load_inline("inl", cpp, functions=["f"], extra_cuda_cflags=["-arch=sm_90"],
                          build_directory=str(build)) == "inline"  # fmt: skip
    assert cpp == saved
    (name, ported_cpp), kw = captured.pop()
    assert "C10_MUSA_CHECK(musaGetLastError())" in ported_cpp[0]
    assert "torch_musa/csrc/core/MUSAException.h" in ported_cpp[0]
    assert kw["musa_sources"] is None and kw["functions"] == ["f"]
    assert kw["extra_musa_cflags"] == ["--offload-arch=mp_31"]
    assert "-lmusart" in kw["extra_ldflags"]
    assert kw["extra_include_paths"] == _sim_include_paths(me)
    assert tx.port_report("inl").files[0].path == "<cpp_sources[0]>"
    # No runtime call, no CUDA library: nothing MUSA is linked.
    ce.load_inline("plain", "int g() { return 2; }", build_directory=str(tmp_path / "plain"))
    assert captured.pop()[1]["extra_ldflags"] == []


def test_load_inline_refuses_cuda_sources(ce, tx, tmp_path):
    build = tmp_path / "inline-cu"
    with pytest.raises(RuntimeError, match=r"musa_sources .*no MUSA compiler \(mcc\)"):
        kernel = "__global__ void k(int* p) { *p = threadIdx.x; }"
        ce.load_inline("inl_cu", "int g();", cuda_sources=kernel, build_directory=str(build))
    paths = [f.path for f in tx.port_report("inl_cu").files]
    assert paths == ["<cpp_sources[0]>", "<cuda_sources[0]>"]
    with pytest.raises(ValueError, match="sycl_sources cannot be built for MUSA"):
        ce.load_inline("inl_sycl", "int g();", sycl_sources="void s();", build_directory=str(build))


def test_unported_names_warn_once_with_the_report(ce, captured, tmp_path):
    src = tmp_path / "odd.cpp"
    src.write_text("int odd() { return cudaSomethingNobodyMapped(0); }\n")
    build = tmp_path / "odd-build"
    with pytest.warns(UserWarning, match=r"cudaSomethingNobodyMapped.*torchada-port-report\.txt"):
        ce.load("odd_ext", [str(src)], build_directory=str(build))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ce.load("odd_ext", [str(src)], build_directory=str(build))
    text = (build / "torchada_ported" / "torchada-port-report.txt").read_text()
    assert "unported cudaSomethingNobodyMapped" in text


# --- errors keep torch's types ------------------------------------------------------------------

_BAD_SOURCES = {"missing-cu": "missing.cu", "missing-cpp": "missing.cpp", "directory": "adir"}


@pytest.fixture(scope="module")
def plain_torch_load_errors(tmp_path_factory):
    """What torch's own load() raises for each bad source, in a process without torchada."""
    import json

    from conftest import run_python

    root = tmp_path_factory.mktemp("plain")
    (root / "adir").mkdir()
    r = run_python(
        f"""
        import json, sys, torch.utils.cpp_extension as ce
        assert "torchada" not in sys.modules
        out = {{}}
        for case, name in {_BAD_SOURCES!r}.items():
            try:
                ce.load("bad_" + case.replace("-", "_"), [{str(root)!r} + "/" + name],
                        build_directory={str(root)!r})
            except BaseException as exc:
                out[case] = [type(exc).__name__, exc.errno, exc.filename]
        print(json.dumps(out))
        """
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return root, json.loads(r.stdout.splitlines()[-1])


@pytest.mark.parametrize("case", sorted(_BAD_SOURCES))
def test_load_bad_source_raises_what_torch_raises(ce, captured, plain_torch_load_errors, case):
    # `except OSError` / `except FileNotFoundError` around load() must keep working.
    root, plain = plain_torch_load_errors
    path = str(root / _BAD_SOURCES[case])
    expected_type = {"FileNotFoundError": FileNotFoundError, "IsADirectoryError": IsADirectoryError}
    assert plain[case] == [plain[case][0], plain[case][1], path]
    with pytest.raises(expected_type[plain[case][0]]) as info:
        ce.load("bad_" + case.replace("-", "_"), [path], build_directory=str(root))
    assert info.value.errno == plain[case][1] and info.value.filename == path
    assert path in str(info.value)
    assert captured == []
