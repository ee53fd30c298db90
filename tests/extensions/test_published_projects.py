"""Projects built on the published torchada switch without a code change: small projects that
build and load their extensions the way vLLM-MUSA, SGLang and Mooncake do
(tests/extensions/published_projects), built through this torchada on the simulator and their ops
called on musa tensors, each by the ways in that apply to it. Builds are kept under torchada's
cache dir (keyed by the sources, torchada's extension code, the kit and torch), so each way after
the first, and every later run, finds them built."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import simulator_env

REPO = Path(__file__).resolve().parents[2]
PROJECTS = Path(__file__).resolve().parent / "published_projects"
BUILD_TIMEOUT = 900

# A parent that did `import torchada` and starts the command as its child (TORCHADA_ACTIVE=1).
_PARENT = (
    "import subprocess, sys\nimport torchada\nassert torchada.is_enabled()\n"
    "sys.exit(subprocess.run(sys.argv[1:]).returncode)\n"
)


def _env(way: str) -> dict:
    """The environment of a way in: "import" and "runner" on the simulator's switch, "child" with
    the simulator installed as a package (its own entry point, as on a MUSA machine)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TORCHADA_")}
    if way == "child":
        return simulator_env("musa-first", base)
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), base.get("PYTHONPATH")]))
    if way == "import":
        base["TORCHADA_SIMULATE"] = "1"
    return base


def _run(way: str, args: list, cwd: Path, extra_env: "dict | None" = None):
    env = {**_env(way), **(extra_env or {})}
    if way == "runner":
        cmd = [sys.executable, "-m", "torchada.run", "--simulate", *args]
    elif way == "child":
        cmd = [sys.executable, "-c", _PARENT, sys.executable, *args]
    else:
        cmd = [sys.executable, *args]
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT
    )
    assert proc.returncode == 0, f"{way}: {args}\n" + proc.stdout[-4000:] + proc.stderr[-6000:]
    return proc


@pytest.fixture(scope="module")
def cache() -> Path:
    import torch

    from torchada._native.build import build_key, cache_root

    inputs = sorted(p for p in PROJECTS.rglob("*") if p.is_file() and "__pycache__" not in str(p))
    inputs += sorted((REPO / "torchada" / "_extensions").rglob("*.[hp]*"))
    inputs += sorted((REPO / "csrc" / "simulator" / "include").rglob("*"))
    inputs += [
        REPO / "torchada" / "tables" / name for name in ("cuda_build.json", "libraries.json")
    ]
    inputs = [p for p in inputs if p.is_file() and p.suffix != ".pyc"]
    path = cache_root() / "test-published-projects" / build_key(inputs, torch.__version__)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _project(cache: Path, name: str) -> Path:
    """A copy of a project in the cache, rewriting only what changed (mtimes decide rebuilds)."""
    src = PROJECTS / name
    dest = cache / name
    for path in src.rglob("*"):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        target = dest / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_bytes() != path.read_bytes():
            shutil.copyfile(path, target)
    return dest


def _check(way: str, cwd: Path, code: str, marker: str, extra_env: "dict | None" = None) -> None:
    prog = cwd / f"check_{way}.py"
    prog.write_text(textwrap.dedent(code))
    proc = _run(way, [str(prog)], cwd, extra_env)
    assert marker in proc.stdout, proc.stdout + proc.stderr


# ---------------------------------------------------------------- vLLM-MUSA
_VLLM_CHECK = """
import sys
sys.path.insert(0, ".")
import vllm_like  # imports torchada, then torch
import torch

assert vllm_like.musa_platform_plugin() == "vllm_like.platform.MUSAPlatform"
import vllm_like._C_stable_libtorch  # registers the stable ops

dev = torch.device("cuda", torch.cuda.device_count() - 1)
x = torch.arange(6.0, device=dev).reshape(2, 3)
out = torch.empty_like(x)
torch.ops.vllm_like.scaled_copy(out, x, 2.5, torch.ones_like(x))
assert out.device.type == "musa" and out.device.index == dev.index, out.device
assert out.cpu().tolist() == (x.cpu() * 2.5 + 1).tolist(), out
torch.ops.vllm_like.scaled_copy(out, x, -1.0, None)
assert out.cpu().tolist() == (-x.cpu()).tolist(), out
assert torch.ops.vllm_like.leading_size(x) == 2
assert torch.ops.vllm_like.blackwell_paths() == 0  # -DCUDA_VERSION=0 reached the sources
try:
    torch.ops.vllm_like.scaled_copy(out, x[:1], 1.0, None)
except RuntimeError as e:
    assert "out and input must be contiguous and the same size" in str(e), e
else:
    raise AssertionError("the kernel's own error was lost")
# Registered for CUDA in the source, the op serves the MUSA device only: CPU tensors are refused.
try:
    torch.ops.vllm_like.leading_size(x.cpu())
except NotImplementedError as e:
    assert "'CPU' backend" in str(e), e
else:
    raise AssertionError("a CPU tensor reached the MUSA kernel")
print("VLLM OK")
"""


def _build_with_setup_py(cache: Path, name: str) -> Path:
    """Builds project ``name`` with its build script (``build_ext --inplace``) by each of its
    ways in (the first compiles, the others find it built), checks the banner and the built
    module, and runs its check by the same way. Returns the ported sources' directory."""
    from torchada._native.build import _locked

    script, ways, banner, built, check, marker = _SETUP_PROJECTS[name]
    with _locked(cache / f"{name}.lock"):
        work = _project(cache, name)
        for way in ways:
            proc = _run(way, [script, "build_ext", "--inplace"], work)
            assert banner in proc.stdout, proc.stdout
            assert list(work.glob(built)), built
            _check(way, work, check, marker)
    return work / "build" / "torchada_ported"


def _stable_tensor_links_twice() -> bool:
    """Whether torch's stable Tensor header can be in two translation units of one library:
    torch 2.9's tensor_inl.h defines Tensor::scalar_type() without ``inline``, so a library whose
    sources include it twice fails to link ("multiple definition"), on CUDA as on MUSA."""
    import torch

    header = Path(torch.__file__).parent / "include/torch/csrc/stable/tensor_inl.h"
    text = header.read_text() if header.is_file() else ""
    return "\nScalarType Tensor::scalar_type() const {" not in text


@pytest.mark.slow
@pytest.mark.skipif(
    not _stable_tensor_links_twice(),
    reason="this torch's stable tensor_inl.h defines Tensor::scalar_type() without inline: the "
    "project's two sources that include it do not link, with or without torchada",
)
def test_vllm_musa_style_setup_py(cache):
    ported = _build_with_setup_py(cache, "vllm_like")
    stable = ported / "vllm_like._C_stable_libtorch" / "csrc" / "libtorch_stable"
    bindings = (stable / "torch_bindings.cpp").read_text()
    assert "STABLE_TORCH_LIBRARY_IMPL(vllm_like, PrivateUse1, ops)" in bindings
    # The kit's headers were used where they are, not ported.
    assert not list(ported.rglob("torchada_stable_box.h"))


_PLATFORM = """
import sys
sys.path[:0] = [{vllm!r}, {sgl!r}]
import vllm_like
from sgl_like.utils import is_musa
import torchada
print("PLUGIN", vllm_like.musa_platform_plugin(), "IS_MUSA", is_musa(),
      "PLATFORM", torchada.is_musa_platform())
"""


def test_vllm_musa_plugin_and_sglang_is_musa_choose_the_platform(py):
    code = _PLATFORM.format(
        vllm=str(PROJECTS / "vllm_like"), sgl=str(PROJECTS / "sglang_like" / "python")
    )
    musa = "PLUGIN vllm_like.platform.MUSAPlatform IS_MUSA True PLATFORM True"
    # The plugin imports torchada itself (the import way); a child of an importing parent.
    proc = py(code, env={"TORCHADA_SIMULATE": "1"})
    assert proc.returncode == 0 and musa in proc.stdout, proc.stdout + proc.stderr
    proc = subprocess.run(
        [sys.executable, "-c", _PARENT, sys.executable, "-c", code],
        env=_env("child"), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0 and musa in proc.stdout, proc.stdout + proc.stderr
    # No MUSA: neither picks it.
    proc = py(code)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PLUGIN None IS_MUSA False PLATFORM False" in proc.stdout, proc.stdout
    # TORCHADA_PLATFORM=cpu beside torch_musa: torchada (and the plugin) says no; SGLang's test
    # reads torch_musa's torch.version.musa, which torchada does not set, and still says yes.
    proc = py(code, env={"TORCHADA_SIMULATE": "1", "TORCHADA_PLATFORM": "cpu"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PLUGIN None IS_MUSA True PLATFORM False" in proc.stdout, proc.stdout


# ---------------------------------------------------------------- SGLang
_SGLANG_CHECK = """
import sys
sys.path.insert(0, "python")
import torch
import torchada  # noqa: F401
import sgl_like.common_ops  # noqa: F401  (registers the ops)
from sgl_like.utils import is_musa

assert is_musa()
dev = torch.device("cuda", torch.cuda.device_count() - 1)
x = torch.randn(3, 8, device=dev)
out = torch.empty(3, 4, device=dev)
torch.ops.sgl_like.silu_and_mul(out, x)
ref = torch.nn.functional.silu(x[:, :4].cpu()) * x[:, 4:].cpu()
torch.testing.assert_close(out.cpu(), ref)
assert out.device == x.device and x.device.type == "musa"
assert torch.ops.sgl_like.current_device_index() == torch.cuda.current_device()
try:
    torch.ops.sgl_like.silu_and_mul(out.cpu(), x.cpu())
except NotImplementedError as e:
    assert "'CPU' backend" in str(e), e
else:
    raise AssertionError("a CPU tensor reached the MUSA kernel")
print("SGLANG OK")
"""


# name: build script, ways in, banner it prints, the module it builds, the check and its marker.
# SGLang's banner names the simulated board's architecture, read the way SGLang reads it.
_SETUP_PROJECTS = {
    "vllm_like": ("setup.py", ("import", "child"), "vllm_like: building the stable-ABI library",
                  "vllm_like/_C_stable_libtorch*.so", _VLLM_CHECK, "VLLM OK"),
    "sglang_like": ("setup_musa.py", ("import", "runner"), "sgl_like: building for mp_",
                    "python/sgl_like/common_ops*.so", _SGLANG_CHECK, "SGLANG OK"),
}  # fmt: skip


@pytest.mark.slow
def test_sglang_style_setup_musa_py(cache):
    ported = _build_with_setup_py(cache, "sglang_like")
    registrations = (
        ported / "sgl_like.common_ops" / "csrc" / "common_extension_musa.cc"
    ).read_text()
    assert "torch::kCUDA" not in registrations and "kPrivateUse1" in registrations


# ---------------------------------------------------------------- Mooncake
_MOONCAKE_CHECK = """
import sys
sys.path.insert(0, ".")
import torch
import mooncake_like.pg as pg  # builds (or finds built) the adapter through torchada

dev = torch.device("cuda", torch.cuda.device_count() - 1)
x = torch.zeros(3, device=dev)
assert pg.stamp_rank(x, 5).cpu().tolist() == [5.0, 5.0, 5.0]
before = torch.cuda.current_device()
assert before != dev.index
assert pg.guarded_device_and_stream(x) == [dev.index, torch.cuda.current_stream(dev).stream_id]
assert torch.cuda.current_device() == before
try:
    pg.stamp_rank(x.cpu(), 1)
except RuntimeError as e:
    assert "expected a CUDA tensor, got one on cpu" in str(e), e
else:
    raise AssertionError("a CPU tensor was accepted")
print("MOONCAKE OK", pg.backend_module.__file__)
"""


@pytest.mark.slow
def test_mooncake_style_load(cache):
    from torchada._native.build import _locked

    with _locked(cache / "mooncake.lock"):
        work = _project(cache, "mooncake_like")
        jit = cache / "mooncake_jit"
        (jit / "lock").unlink(missing_ok=True)  # torch's baton, left only by a killed builder
        env = {"MOONCAKE_LIKE_USE_MUSA": "1", "MOONCAKE_LIKE_PG_JIT_DIR": str(jit)}
        for way in ("import", "child"):
            _check(way, work, _MOONCAKE_CHECK, f"MOONCAKE OK {jit}", env)
        # _port_directory ported a private copy beside it; the copy itself is untouched.
        original = (work / "mooncake_like" / "_pg_jit" / "include" / "pg_utils.h").read_text()
        assert (jit / "musa_input" / "include" / "pg_utils.h").read_text() == original
        ported = (jit / "musa_input_musa" / "include" / "pg_utils.h").read_text()
        assert "c10/musa/MUSAGuard.h" in ported or "MUSAGuard.h" in ported, ported


# ---------------------------------------------------------------- build isolation
_ISO_SETUP = """
from setuptools import setup

# torchada's module before torch, as a build script written for the published adapter may do.
from torchada.utils.cpp_extension import BuildExtension, CppExtension, stable_compat_box_header

import torch  # noqa: F401

setup(
    name="iso_like",
    version="0.0.1",
    ext_modules=[
        CppExtension(
            "iso_like", ["iso.cpp"], extra_compile_args=["-include", stable_compat_box_header()]
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
"""
_ISO_SOURCE = """
#include <Python.h>
// TORCH_VERSION_MINOR comes from the force-included box header.
static PyObject* torch_minor(PyObject*, PyObject*) { return PyLong_FromLong(TORCH_VERSION_MINOR); }
static PyMethodDef methods[] = {{"torch_minor", torch_minor, METH_NOARGS, nullptr},
                                {nullptr, nullptr, 0, nullptr}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "iso_like", nullptr, 0, methods};
PyMODINIT_FUNC PyInit_iso_like(void) { return PyModule_Create(&module); }
"""


@pytest.mark.slow
@pytest.mark.skipif(
    not __import__("torch").__version__.startswith("2.13.0"),
    reason="the isolated build environment takes torch 2.13.0, the one local CPU wheel",
)
def test_setup_py_under_build_isolation(tmp_path):
    """`pip wheel .` of a project whose pyproject.toml build-requires torchada (this checkout's,
    as a wheel) and torch: its setup.py imports torchada.utils.cpp_extension before torch in
    the isolated environment and builds with the kit's box header from there."""
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(REPO)],
        check=True, capture_output=True, timeout=BUILD_TIMEOUT,
    )  # fmt: skip
    (wheel,) = wheels.glob("torchada-*.whl")
    project = tmp_path / "proj"
    project.mkdir()
    # A direct reference: the registry's torchada (the published adapter) has higher versions.
    (project / "pyproject.toml").write_text(
        "[build-system]\n"
        f'requires = ["setuptools", "torch==2.13.0", "torchada @ {wheel.as_uri()}"]\n'
        'build-backend = "setuptools.build_meta"\n'
    )
    (project / "setup.py").write_text(textwrap.dedent(_ISO_SETUP))
    (project / "iso.cpp").write_text(textwrap.dedent(_ISO_SOURCE))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHADA_", "PYTHON"))}
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(out), str(project)],
        env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (built,) = out.glob("iso_like-*.whl")
    shutil.unpack_archive(str(built), str(tmp_path / "site"), "zip")
    check = subprocess.run(
        [sys.executable, "-c", "import iso_like; print('MINOR', iso_like.torch_minor())"],
        cwd=tmp_path / "site", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "MINOR 13" in check.stdout, check.stdout + check.stderr
