"""What is not installed stays not installed (issue 46): where what backs a CUDA name is missing,
a program sees what it would see without torchada (docs/architecture.md, "What is missing stays
missing").

DeepSpeed's CUDA accelerator, like many libraries, guards its NVML use::

    try:
        import pynvml
    except ImportError:
        return
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        ...

That program is run here in each environment a MUSA user can have (neither NVML package;
nvidia-ml-py only; mthreads-ml-py only; both; with and without MTML's C library, ``libmtml.so.2``,
which ``TORCHADA_SIM_MTML=0`` leaves out of the simulated driver), both ways in (``import
torchada`` first, and the runner), and without torchada. Packages are made not installed for the
child process by a path finder that does not find them (tests/conftest.py,
``hidden_packages_env``), so the whole suite, whose test extra installs both NVML packages, runs
every case. CI's minimal-install step (.ci/minimal_install: a venv with torch, torchada and
pytest only) runs this file too (marker ``user_install``), where nothing needs hiding and the
environments that need a package installed are skipped: they run in the full suite.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from conftest import (
    REPO,
    canonical_name,
    hidden_packages_env,
    program_result,
    run_cuda_program,
    user_install_closure,
    user_install_env,
)

pytestmark = pytest.mark.user_install

NVML_PACKAGES = ("mthreads-ml-py", "nvidia-ml-py")

# DeepSpeed's guard, as its CUDA accelerator writes it, then what the program can read.
GUARDED = r"""
import json
import os

import torch  # first, as in DeepSpeed: torch.cuda imports pynvml where it is installed

result = {}
try:
    import pynvml
except ImportError as err:
    result["import"] = type(err).__name__
else:
    result["module"] = type(pynvml).__name__  # ProxyModule: served from MTML by torchada

    def nvml_errors(err):
        return [n for n in dir(pynvml) if n.startswith("NVMLError_")
                and isinstance(err, getattr(pynvml, n))]

    try:
        pynvml.nvmlDeviceGetCount()  # before nvmlInit
    except pynvml.NVMLError as err:
        result["before_init"] = nvml_errors(err)
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        result["init"] = nvml_errors(err)
    else:
        result["devices"] = pynvml.nvmlDeviceGetCount()
        result["name"] = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        if result["module"] == "module":  # nvidia-ml-py's own: the library its ctypes loaded
            library = pynvml.nvmlLib
            result["library"] = os.path.basename(library._name)
            result["torchada_library"] = "torchada" in library._name
        pynvml.nvmlShutdown()
print("GUARDED", json.dumps(result, sort_keys=True))
"""

SERVED = "ProxyModule"  # pynvml answered from MTML through pymtml
OWN = "module"  # nvidia-ml-py's own module
NOT_FOUND = ["NVMLError_LibraryNotFound"]
UNINITIALIZED = ["NVMLError_Uninitialized"]
DEVICES = {"devices": 2, "name": "MTT S4000", "before_init": UNINITIALIZED}

# environment: (installed NVML packages, MTML's C library reachable, what the program reads with
# torchada). Without torchada the program goes on in each (checked, not spelled out: on an NVIDIA
# machine nvidia-ml-py would read NVIDIA's devices).
ENVIRONMENTS = {
    "neither": ((), True, {"import": "ModuleNotFoundError"}),
    "nvidia-ml-py": (
        ("nvidia-ml-py",),
        True,
        # nvidia-ml-py's own module, its libnvidia-ml.so.1 answered by torchada's (over MTML).
        {**DEVICES, "module": OWN, "library": "libnvidia-ml.so", "torchada_library": True},
    ),
    "nvidia-ml-py, no libmtml": (
        ("nvidia-ml-py",),
        False,
        {"module": OWN, "before_init": UNINITIALIZED, "init": NOT_FOUND},
    ),
    "mthreads-ml-py, no libmtml": (
        ("mthreads-ml-py",),
        False,
        {"module": SERVED, "before_init": UNINITIALIZED, "init": NOT_FOUND},
    ),
    "mthreads-ml-py": (("mthreads-ml-py",), True, {**DEVICES, "module": SERVED}),
    "both": (NVML_PACKAGES, True, {**DEVICES, "module": SERVED}),
    "both, no libmtml": (
        NVML_PACKAGES,
        False,
        {"module": SERVED, "before_init": UNINITIALIZED, "init": NOT_FOUND},
    ),
}


def _installed(distribution: str) -> bool:
    from importlib import metadata

    try:
        metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def _environment(name: str) -> dict:
    installed, mtml, _ = ENVIRONMENTS[name]
    missing = [d for d in installed if not _installed(d)]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not installed here (CI's minimal install): this environment "
            "runs in the full suite (tools/test.sh), whose test extra installs it"
        )
    env = hidden_packages_env([d for d in NVML_PACKAGES if d not in installed])
    if not mtml:
        env["TORCHADA_SIM_MTML"] = "0"
    return env


def _guarded_result(stdout: str) -> dict:
    lines = [line for line in stdout.splitlines() if line.startswith("GUARDED ")]
    assert lines, stdout[-2000:]
    return json.loads(lines[-1][len("GUARDED ") :])


@pytest.mark.parametrize("way", ["import", "runner"])
@pytest.mark.parametrize("environment", list(ENVIRONMENTS))
def test_guarded_nvml_program_ends_as_without_torchada(environment, way, tmp_path):
    env = _environment(environment)
    script = tmp_path / "guarded.py"
    script.write_text(GUARDED)
    done = run_cuda_program(way, str(script), workdir=tmp_path, timeout=300, extra_env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _guarded_result(done.stdout) == ENVIRONMENTS[environment][2], done.stderr[-2000:]


@pytest.mark.parametrize("environment", list(ENVIRONMENTS))
def test_guarded_nvml_program_without_torchada_goes_on(environment, tmp_path):
    """The column the issue compares with: the same program and environment, no torchada."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHADA_")}
    env.update(_environment(environment))
    script = tmp_path / "guarded.py"
    script.write_text(GUARDED)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = _guarded_result(done.stdout)
    if "mthreads-ml-py" in ENVIRONMENTS[environment][0] and "nvidia-ml-py" not in (
        ENVIRONMENTS[environment][0]
    ):
        assert result == {"import": "ModuleNotFoundError"}  # pymtml is not pynvml
    if environment == "neither":
        assert result == {"import": "ModuleNotFoundError"}
    if result.get("module") == OWN:  # nvidia-ml-py: NVIDIA's library, where there is one
        assert result["before_init"] == UNINITIALIZED
        assert "devices" in result or result["init"] == NOT_FOUND, result


def test_hidden_packages_look_not_installed(tmp_path):
    """The arrangement the tests above rely on: import, find_spec and metadata agree."""
    code = r"""
import importlib.util, json
from importlib import metadata
out = {}
for module, dist in (("pymtml", "mthreads-ml-py"), ("pynvml", "nvidia-ml-py")):
    try:
        __import__(module)
        imported = "imported"
    except ModuleNotFoundError as err:
        imported = type(err).__name__
    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        version = None
    out[module] = [imported, importlib.util.find_spec(module) is None, version]
print(json.dumps(out))
"""
    env = {**os.environ, **hidden_packages_env(NVML_PACKAGES)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out == {
        "pymtml": ["ModuleNotFoundError", True, None],
        "pynvml": ["ModuleNotFoundError", True, None],
    }


@pytest.mark.parametrize("way", ["import", "runner"])
def test_the_idiom_program_in_a_users_install(way, tmp_path):
    """The default-configuration program (``"cuda" if torch.cuda.is_available() else "cpu"``, a
    GPT-style mixed-precision setup, a loss scaler) where only torch and torchada are installed:
    every other installed distribution is hidden (none is, in CI's minimal install)."""
    program = os.path.join(REPO, "tests", "e2e", "e2e_programs", "auto_device_cuda.py")
    done = run_cuda_program(way, program, workdir=tmp_path, extra_env=user_install_env())
    out = program_result(done)
    assert out["is_available"] is True and out["device"] == "cuda"
    assert out["fp32"] == {"pinned": True, "devices": ["musa:0"]}
    assert out["max_weight_diff_vs_cpu"] <= 1e-6
    assert out["gpt_style"]["dtype"] == "bfloat16" and out["gpt_style"]["fused"]
    assert out["scaler"] == {"enabled": True, "scale": 65536.0}
    assert out["lightning"] is None and out["accelerate"] is None  # not installed


TELEMETRY = r"""
import json
import torch
out = {}
try:
    torch.cuda.utilization(0)
    out["utilization"] = "answered"
except ModuleNotFoundError as err:  # torch's type where nvidia-ml-py is missing
    out["utilization"] = "ModuleNotFoundError: " + str(err)
out["list_gpu_processes"] = torch.cuda.list_gpu_processes(0)
print(json.dumps(out))
"""


def test_telemetry_without_pymtml_raises_what_torch_raises(tmp_path):
    script = tmp_path / "telemetry.py"
    script.write_text(TELEMETRY)
    env = hidden_packages_env(NVML_PACKAGES)
    out = program_result(run_cuda_program("import", str(script), workdir=tmp_path, extra_env=env))
    assert out["utilization"].startswith("ModuleNotFoundError: torch.cuda.utilization ")
    assert "pip install mthreads-ml-py" in out["utilization"]
    assert "mthreads-ml-py" in out["list_gpu_processes"]


@pytest.mark.skipif(
    os.environ.get("TORCHADA_CI_MINIMAL_INSTALL") != "1",
    reason="checks CI's minimal-install venv (.ci/minimal_install sets "
    "TORCHADA_CI_MINIMAL_INSTALL=1)",
)
def test_the_minimal_install_holds_only_what_a_user_installs():
    """In CI's minimal-install step, nothing needs hiding: only torch, torchada, pytest and what
    they require are installed (so the tests above ran with nothing hidden)."""
    from importlib import metadata

    installed = {canonical_name(d.metadata["Name"]) for d in metadata.distributions()}
    extra = installed - user_install_closure() - {"deepspeed"} - _deepspeed_closure()
    assert not extra, sorted(extra)
    for module in ("pymtml", "pynvml", "lightning", "accelerate"):
        assert importlib.util.find_spec(module) is None, module


def _deepspeed_closure() -> "set[str]":
    # DeepSpeed, where the step installs it after the tests above, and what it requires.
    return user_install_closure(("deepspeed",)) if _installed("deepspeed") else set()
