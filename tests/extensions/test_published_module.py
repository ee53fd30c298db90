"""``torchada.utils.cpp_extension``, the published adapter's module: its names and their meaning
off MUSA (torch's own objects, with this torch's signatures) and on the simulator (what
``torch.utils.cpp_extension`` shows through torchada), importing it turns nothing on, the private
``BuildExtension._port_directory`` that Mooncake calls, and the stable-ABI kit's headers compiled
against this torch with the simulator's include directories."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "torchada" / "_extensions" / "stable_include"
SIM_INCLUDE = REPO / "csrc" / "simulator" / "include"
NAMES = (
    "CUDAExtension", "CppExtension", "BuildExtension", "CUDA_HOME", "load", "load_inline",
    "include_paths", "library_paths", "stable_compat_include_dir", "stable_compat_box_header",
)  # fmt: skip

_OFF_MUSA = f"""
import inspect, sys
import torchada.utils.cpp_extension as ce
# Importing it (and torchada) on a machine without MUSA installs nothing and imports no torch_musa.
assert not torchada.is_enabled() and "torch_musa" not in sys.modules
import torch.utils.cpp_extension as tce
assert not hasattr(tce, "__torchada_original__")
for name in {NAMES[:8]!r}:
    assert getattr(ce, name) is getattr(tce, name), name
for name in ("load", "load_inline", "include_paths", "library_paths", "CUDAExtension"):
    assert inspect.signature(getattr(ce, name)) == inspect.signature(getattr(tce, name)), name
assert ce.include_paths() == tce.include_paths()
assert sorted(ce.__all__) == sorted({NAMES!r})
try:
    ce.no_such_name
except AttributeError as e:
    assert "no_such_name" in str(e), e
else:
    raise AssertionError("no AttributeError")
print("OFF-MUSA OK")
"""


def test_off_musa_the_names_are_torchs(py):
    proc = py("import torchada\n" + _OFF_MUSA)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OFF-MUSA OK" in proc.stdout


_ON_MUSA = """
import os, sys, tempfile
import torchada
torchada.disable()  # resolving the names turns nothing back on
from torchada.utils.cpp_extension import (
    BuildExtension, CUDAExtension, CUDA_HOME, CppExtension, include_paths, library_paths, load,
    load_inline,
)
import torch, torch_musa.utils.musa_extension as me
assert not torchada.is_enabled()
import torch.utils.cpp_extension as tce
assert not hasattr(tce, "__torchada_original__")  # no proxy was installed by the names
assert CUDAExtension.__module__ == BuildExtension.__module__ == "torchada._extensions.cpp_extension"
assert issubclass(BuildExtension, me.BuildExtension)
assert CppExtension is tce.CppExtension and CUDA_HOME == me.MUSA_HOME
from torchada.utils.cpp_extension import stable_compat_include_dir
kit = [stable_compat_include_dir()]  # last, for a device build, as the published adapter gives
assert include_paths("cuda") == include_paths(cuda=True) == me.include_paths(musa=True) + kit
assert library_paths() == me.library_paths(musa=False)
ext = CUDAExtension("demo", ["demo.cpp"], extra_compile_args={"nvcc": ["--use_fast_math"]})
assert ext.extra_compile_args["mcc"] == ["-ffast-math"], ext.extra_compile_args

# The same objects torch.utils.cpp_extension shows once torchada is on.
torchada.enable()
import torch.utils.cpp_extension as on
assert on.CUDAExtension is CUDAExtension and on.load is load and on.load_inline is load_inline

# BuildExtension._port_directory, called as Mooncake calls it.
root = tempfile.mkdtemp()
src = os.path.join(root, "musa_input")
os.makedirs(os.path.join(src, "src"))
code = "#include <c10/cuda/CUDAGuard.h>\\nvoid f() { c10::cuda::CUDAGuard g(0); }\\n"
with open(os.path.join(src, "src", "a.cpp"), "w") as f:
    f.write(code)
out = object.__new__(BuildExtension)._port_directory(src)
assert out == src + "_musa", out
ported = open(os.path.join(out, "src", "a.cpp")).read()
assert "c10::musa::MUSAGuard" in ported and "MUSAGuard.h" in ported, ported
assert open(os.path.join(src, "src", "a.cpp")).read() == code  # never in place
try:
    object.__new__(BuildExtension)._port_directory(os.path.join(src, "src", "a.cpp"))
except NotADirectoryError as e:
    assert "a.cpp" in str(e) and "load()" in str(e), e
else:
    raise AssertionError("a file was accepted")
print("ON-MUSA OK")
"""


def test_on_the_simulator_the_names_are_torchadas_build(py):
    proc = py(_ON_MUSA, env={"TORCHADA_SIMULATE": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ON-MUSA OK" in proc.stdout


def test_kit_aliases_are_the_porters_renames():
    """Each CUDA name a kit header spells as MUSA's, and the MUSA header it includes, is what
    the porter makes of it: one table of renames."""
    import re

    from torchada.porting import port_source

    for header in ("cuda_runtime.h", "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cublas_v2.h"):
        text = (KIT / header).read_text()
        musa_header = re.search(r"#if __has_include\(<([\w.]+)>\)", text).group(1)
        assert port_source(f"#include <{header}>")[0] == f"#include <{musa_header}>", header
        for cuda, musa in re.findall(r"#define (\w+) (\w+)", text):
            assert port_source(cuda)[0] == musa, (header, cuda, musa)


def _torch_include() -> Path:
    import torch

    return Path(torch.__file__).parent / "include"


def _compile(code: str, tmp_path: Path, *includes: Path, force: "Path | None" = None):
    source = tmp_path / "tu.cpp"
    source.write_text(code)
    cmd = ["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Werror"]
    cmd += ["-include", str(force)] if force else []
    for d in includes:
        cmd += ["-I", str(d)]
    python_include = sysconfig.get_paths()["include"]
    return subprocess.run(cmd + ["-I", python_include, str(source)], capture_output=True, text=True)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs the host compiler")
def test_kit_headers_compile_and_never_hide_torchs(tmp_path):
    torch_inc = _torch_include()
    stable = torch_inc / "torch" / "csrc" / "stable"
    torch_has_tensor = (stable / "tensor.h").is_file()
    checks = ["#include <cuda_runtime.h>", "#include <torch/csrc/stable/tensor.h>"]
    if (stable / "macros.h").is_file():
        # Torch's own macros.h, not hidden by the kit (the published kit's copy left this out):
        # the first macro it defines on this torch is there (the names differ between torches).
        macro = re.search(r"^#define (\w+)", (stable / "macros.h").read_text(), re.M).group(1)
        checks += ["#include <torch/csrc/stable/macros.h>", f"#ifndef {macro}",
                   '#error "torch\'s macros.h is hidden"', "#endif"]  # fmt: skip
    checks += [
        # The kit's own Tensor only where this torch has none.
        "#if " + ("" if torch_has_tensor else "!") + "defined(TORCHADA_STABLE_TENSOR_BACKPORT)",
        '#error "tensor.h: the wrong one"',
        "#endif",
        "int64_t f(const torch::stable::Tensor& t) { return t.numel() + t.size(0); }",
        "int g() { cudaStream_t s = nullptr; (void)s; cudaError_t e = cudaGetLastError();",
        "  return e == cudaSuccess ? 0 : (cudaGetErrorString(e) != nullptr); }",
    ]
    code = "\n".join(checks) + "\n"
    # The kit first on the include path (as vLLM-MUSA puts it) and last: the same headers win.
    for order in ((KIT, SIM_INCLUDE, torch_inc), (SIM_INCLUDE, torch_inc, KIT)):
        proc = _compile(code, tmp_path, *order, force=KIT / "torchada_stable_box.h")
        assert proc.returncode == 0, (order, proc.stderr[-3000:])

    # A CUDA-named header with neither MUSA's nor CUDA's counterpart says what to add.
    proc = _compile("#include <cuda_bf16.h>\n", tmp_path, KIT, SIM_INCLUDE, torch_inc)
    assert proc.returncode != 0
    assert "neither the MUSA SDK's musa_bf16.h nor CUDA's cuda_bf16.h" in proc.stderr
    # With a MUSA header there, the CUDA names are MUSA's (a stand-in header, for the test only).
    sdk = tmp_path / "sdk"
    sdk.mkdir()
    (sdk / "musa_bf16.h").write_text("#pragma once\nstruct __mt_bfloat16 { unsigned short x; };\n")
    proc = _compile(
        '#include <cuda_bf16.h>\nstatic_assert(sizeof(__nv_bfloat16) == 2, "");\n',
        tmp_path,
        KIT,
        sdk,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs the host compiler")
@pytest.mark.parametrize(
    "flags, musa_headers, expected",
    [([], True, "0"), (["-DCUDA_VERSION=12080"], True, "12080"), ([], False, None)],
    ids=["musa-build", "given-by-the-build", "no-musa-headers"],
)
def test_box_header_gives_cuda_version_0_where_the_build_did_not(
    tmp_path, flags, musa_headers, expected
):
    # Force-included in a MUSA build (MUSA's runtime header on the path), as a setup.py build and
    # a JIT load(extra_cflags=["-include", ...]) both do: CUDA_VERSION is 0, so CUDA-12-only
    # paths stay off; a value the build gave is kept; without MUSA's headers it is left alone.
    if expected is None:
        code = "#ifdef CUDA_VERSION\n#error CUDA_VERSION defined\n#endif\n"
    else:
        code = f'static_assert(CUDA_VERSION == {expected}, "CUDA_VERSION");\n'
    code += "#if CUDA_VERSION >= 12000\nint cuda12_path = 1;\n#endif\n"
    source = tmp_path / "tu.cpp"
    source.write_text(code)
    includes = [SIM_INCLUDE, _torch_include()] if musa_headers else [_torch_include()]
    cmd = ["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", *flags]
    cmd += ["-include", str(KIT / "torchada_stable_box.h")]
    for d in includes:
        cmd += ["-I", str(d)]
    cmd += ["-I", sysconfig.get_paths()["include"], str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_kit_ships_as_package_data():
    from torchada.utils.cpp_extension import stable_compat_box_header, stable_compat_include_dir

    assert Path(stable_compat_include_dir()) == KIT
    assert Path(stable_compat_box_header()).is_file()
    names = {p.name for p in KIT.rglob("*.h")}
    assert names >= {"cuda_runtime.h", "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cublas_v2.h"}
    assert not (KIT / "torch" / "csrc" / "stable" / "macros.h").exists()
    assert os.path.basename(stable_compat_box_header()) == "torchada_stable_box.h"
