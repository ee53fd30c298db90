"""NVML programs on the simulator (issue 38): ``import pynvml`` answered from MTML through pymtml,
and a vendored ctypes NVML binding (as vLLM's ``third_party/pynvml.py``) that loads
``libnvidia-ml.so.1``, answered by torchada's NVML-over-MTML library. Both ways in are tried
(``import torchada`` first, and the runner), each in one subprocess that checks everything; off
MUSA ``import pynvml`` stays nvidia-ml-py's own module and nothing of torchada's NVML loads.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
from conftest import REPO, run_cuda_program, run_python

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("pymtml", "pynvml")),
    reason="mthreads-ml-py and nvidia-ml-py are not installed (pip install -e .[test])",
)

PROGRAM = r"""
import ctypes
import importlib.util
import sys

import torch
import pynvml

# --- import pynvml: served over pymtml
assert type(pynvml).__name__ == "ProxyModule", type(pynvml)
pynvml.nvmlInit()
assert pynvml.nvmlDeviceGetCount() == 2
handle = pynvml.nvmlDeviceGetHandleByIndex(1)
before = pynvml.nvmlDeviceGetMemoryInfo(handle)
x = torch.empty(1 << 22, dtype=torch.uint8, device="cuda:1")
after = pynvml.nvmlDeviceGetMemoryInfo(handle)
assert after.used - before.used == 1 << 22, (before, after)
assert after.total == after.free + after.used and after.total > 1 << 30, after
v2 = pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2)
assert (v2.version, v2.used, v2.total) == (pynvml.nvmlMemory_v2, after.used, after.total), v2
name = pynvml.nvmlDeviceGetName(handle)
assert isinstance(name, str) and name.startswith("MTT"), name
rates = pynvml.nvmlDeviceGetUtilizationRates(handle)
assert 0 <= rates.gpu <= 100 and 0 <= rates.memory <= 100, rates
temperature = pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)
assert 20 <= temperature <= 100, temperature
assert pynvml.nvmlDeviceGetPowerUsage(handle) > 1000  # milliwatts
uuid = pynvml.nvmlDeviceGetUUID(handle)
assert pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByUUID(uuid)) == uuid
try:
    pynvml.nvmlDeviceGetMigMode(handle)  # pymtml makes up [0, 0]
    raise AssertionError("no error")
except pynvml.NVMLError_NotSupported as err:
    assert "nvmlDeviceGetMigMode" in str(err) and "MUSA" in str(err), err
try:
    pynvml.nvmlDeviceGetVgpuMetadata(handle)  # nothing in MTML
    raise AssertionError("no error")
except pynvml.NVMLError_FunctionNotFound as err:
    assert "nvmlDeviceGetVgpuMetadata" in str(err) and "no counterpart" in str(err), err
try:
    pynvml.nvmlDeviceGetHandleByIndex(7)
    raise AssertionError("no error")
except pynvml.NVMLError:  # every error pymtml raises is one
    pass
driver = pynvml.nvmlSystemGetDriverVersion()
pynvml.nvmlShutdown()
print("PYNVML", after.used, name)

# --- a vendored ctypes binding: nvidia-ml-py's source run again under another name, as vLLM's
# copy is; it loads libnvidia-ml.so.1 itself.
spec = importlib.util.spec_from_file_location("vendored_pynvml", pynvml.__file__)
nv = sys.modules["vendored_pynvml"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nv)
nv.nvmlInit()
assert "libnvidia-ml.so" in nv.nvmlLib._name and "torchada" in nv.nvmlLib._name, nv.nvmlLib
assert nv.nvmlDeviceGetCount() == 2
h0, h1 = nv.nvmlDeviceGetHandleByIndex(0), nv.nvmlDeviceGetHandleByIndex(1)
used0 = nv.nvmlDeviceGetMemoryInfo(h0).used
m1 = nv.nvmlDeviceGetMemoryInfo(h1)
assert m1.used == after.used and m1.free == m1.total - m1.used, (m1.used, after.used)
y = torch.empty(1 << 21, dtype=torch.uint8, device="cuda:0")
assert nv.nvmlDeviceGetMemoryInfo(h0).used - used0 == 1 << 21
m2 = nv.nvmlDeviceGetMemoryInfo(h1, version=nv.nvmlMemory_v2)
assert (m2.used, m2.total, m2.reserved) == (m1.used, m1.total, 0), m2
assert nv.nvmlDeviceGetName(h1) == name
u = nv.nvmlDeviceGetUtilizationRates(h1)
assert (u.gpu, u.memory) == (rates.gpu, rates.memory), (u.gpu, u.memory)
assert nv.nvmlDeviceGetTemperature(h1, nv.NVML_TEMPERATURE_GPU) == temperature
assert nv.nvmlDeviceGetPowerUsage(h1) > 1000
sm = nv.nvmlDeviceGetClockInfo(h1, nv.NVML_CLOCK_SM)
assert 100 <= sm <= nv.nvmlDeviceGetMaxClockInfo(h1, nv.NVML_CLOCK_SM), sm
assert nv.nvmlDeviceGetUUID(nv.nvmlDeviceGetHandleByUUID(nv.nvmlDeviceGetUUID(h1))) == uuid
assert nv.nvmlDeviceGetIndex(h1) == 1
assert nv.nvmlSystemGetDriverVersion() == driver
assert nv.nvmlSystemGetCudaDriverVersion() > 0
try:
    nv.nvmlDeviceGetComputeRunningProcesses(h1)
    raise AssertionError("no error")
except nv.NVMLError_NotSupported:
    pass
try:
    nv.nvmlDeviceGetHandleByIndex(5)
    raise AssertionError("no error")
except nv.NVMLError_InvalidArgument:
    pass
try:
    nv.nvmlDeviceGetBAR1MemoryInfo(h1)  # not in the library: NVML's own answer for it
    raise AssertionError("no error")
except nv.NVMLError_FunctionNotFound:
    pass
assert nv.nvmlErrorString(nv.NVML_ERROR_NOT_SUPPORTED) == "Not Supported"
nv.nvmlShutdown()
print("VENDORED", nv.nvmlDeviceGetCount.__module__)

# --- every function the table lists is in the library, and nothing else of NVML's
from torchada._core import tables
row = [r for r in tables.load("libraries").libraries if r.cuda == "nvidia-ml"][0]
missing = [f for f in row.implemented if not hasattr(nv.nvmlLib, f)]
assert not missing, missing
print("EXPORTS", len(row.implemented))
"""


@pytest.mark.parametrize("way", ["import", "runner"])
def test_nvml_on_the_simulator(way, tmp_path):
    script = tmp_path / "nvml_program.py"
    script.write_text(PROGRAM)
    done = run_cuda_program(way, str(script), workdir=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PYNVML 4194304 MTT" in done.stdout, done.stdout
    assert "VENDORED vendored_pynvml" in done.stdout
    assert "EXPORTS" in done.stdout


OFF_MUSA = r"""
import sys
import torchada
import pynvml

assert not torchada.is_enabled()
assert type(pynvml).__name__ == "module" and hasattr(pynvml, "nvmlLib"), pynvml
assert "__torchada_original__" not in vars(pynvml)
loaded = sorted(m for m in sys.modules if m.startswith(("pymtml", "torchada._libraries")))
assert not loaded, loaded
print("OFF", pynvml.__file__)
"""


def test_off_musa_pynvml_is_nvidia_ml_py():
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHADA_")}
    done = subprocess.run(
        [sys.executable, "-c", OFF_MUSA],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "OFF" in done.stdout and "pynvml.py" in done.stdout


def test_disable_puts_pynvml_back():
    program = r"""
import sys
import pynvml  # nvidia-ml-py's, before torchada
import torchada
import torch
served = sys.modules["pynvml"]
assert served is not pynvml and type(served).__name__ == "ProxyModule", served
assert served.__torchada_original__ is pynvml
torchada.disable()
assert sys.modules["pynvml"] is pynvml
print("RESTORED")
"""
    done = run_python(program, env={"TORCHADA_SIMULATE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RESTORED" in done.stdout
