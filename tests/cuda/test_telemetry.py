"""torch.cuda's telemetry on MUSA reads MTML through pymtml (issue 38), here against the
simulator's libmtml.so.2 (csrc/simulator/stubs/libmtml.c, docs/mtml_simulator.md).

The simulated board's readings are constants (utilization 37 %, memory utilization 21 %, 45 °C,
152000 mW, 1750 MHz); memory used is the simulator allocator's, per device.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, run_python

HAS_PYMTML = importlib.util.find_spec("pymtml") is not None
needs_pymtml = pytest.mark.skipif(
    not HAS_PYMTML, reason="mthreads-ml-py is not installed (pip install -e .[test])"
)

MIB = 1 << 20
# torch.cuda function: the simulated board's constant reading (CUDA's unit).
CONSTANT = {
    "utilization": 37,  # percent
    "memory_usage": 21,  # percent of time memory was read or written
    "temperature": 45,  # degrees C
    "power_draw": 152000,  # milliwatts
    "clock_rate": 1750,  # MHz
}
FUNCTIONS = (*CONSTANT, "device_memory_used", "list_gpu_processes")


@needs_pymtml
@pytest.mark.parametrize("name", sorted(CONSTANT))
def test_readings_have_cuda_types_and_units(torchada_on, name):
    import torch

    fn = getattr(torch.cuda, name)
    for device in (None, 0, 1, "cuda:1", "cuda", torch.device("cuda", 1), torch.device("musa:0")):
        value = fn(device)
        assert type(value) is int, (name, device, value)
        assert value == CONSTANT[name], (name, device, value)


@needs_pymtml
def test_device_memory_used_grows_on_its_device_only(torchada_on):
    import torch

    before = [torch.cuda.device_memory_used(i) for i in range(2)]
    assert all(type(b) is int for b in before)
    x = torch.empty(8 * MIB, dtype=torch.uint8, device="cuda:0")
    assert torch.cuda.device_memory_used(0) - before[0] == 8 * MIB
    assert torch.cuda.device_memory_used("cuda:1") == before[1]
    y = torch.empty(3 * MIB, dtype=torch.uint8, device="musa:1")
    assert torch.cuda.device_memory_used(torch.device("cuda", 1)) - before[1] == 3 * MIB
    del x, y
    assert [torch.cuda.device_memory_used(i) for i in range(2)] == before


@needs_pymtml
def test_list_gpu_processes(torchada_on):
    import torch

    assert torch.cuda.list_gpu_processes(1) == "GPU:1\nno processes are running"
    assert torch.cuda.memory.list_gpu_processes("cuda:0").startswith("GPU:0\n")


@needs_pymtml
def test_unloadable_libmtml_is_named(torchada_on, monkeypatch):
    import pymtml
    import torch

    from torchada._cuda.fills import telemetry

    def no_library():
        raise OSError("Failed to load MTML library on Linux. Tried: libmtml.so.2, libmtml.so")

    monkeypatch.setattr(telemetry, "_initialised", [])
    monkeypatch.setattr(pymtml, "mtmlLibraryInit", no_library)
    with pytest.raises(RuntimeError, match=r"torch\.cuda\.temperature .*libmtml\.so\.2") as err:
        torch.cuda.temperature(0)
    # NVML's type for a missing library, as torch lets it through where libnvidia-ml is missing:
    # pymtml's, which is pynvml.NVMLError_LibraryNotFound as torchada serves pynvml.
    assert isinstance(err.value, pymtml.MTMLError_LibraryNotFound), type(err.value).__mro__
    import pynvml

    assert isinstance(err.value, pynvml.NVMLError_LibraryNotFound)
    assert isinstance(err.value, pynvml.NVMLError)
    assert "libmtml.so.2" in torch.cuda.list_gpu_processes(0)


@needs_pymtml
def test_pymtml_api_against_the_simulated_library(torchada_on):
    """pymtml as mthreads-ml-py users call it, answered by the simulator's libmtml.so.2."""
    import pymtml
    import torch

    pymtml.mtmlLibraryInit()
    try:
        assert pymtml.mtmlLibraryGetVersion() == "2.2.0"
        assert pymtml.mtmlLibraryCountDevice() == torch.musa.device_count() == 2
        system = pymtml.mtmlLibraryInitSystem()
        assert pymtml.mtmlSystemGetDriverVersion(system) == "3.1.0"
        pymtml.mtmlLibraryFreeSystem(system)
        dev = pymtml.mtmlLibraryInitDeviceByIndex(1)
        assert pymtml.mtmlDeviceGetIndex(dev) == 1
        assert pymtml.mtmlDeviceGetName(dev) == torch.musa.get_device_name(1)
        uuid = pymtml.mtmlDeviceGetUUID(dev)
        same = pymtml.mtmlLibraryInitDeviceByUuid(uuid)
        assert ctypes.addressof(same.contents) == ctypes.addressof(dev.contents)
        pci = pymtml.mtmlDeviceGetPciInfo(dev)
        by_pci = pymtml.mtmlLibraryInitDeviceByPciSbdf(pci.sbdf)
        assert pymtml.mtmlDeviceGetIndex(by_pci) == 1
        assert pymtml.mtmlDeviceGetPowerUsage(dev) == 152000
        with pymtml.mtmlMemoryContext(dev) as memory:
            total = pymtml.mtmlMemoryGetTotal(memory)
            assert total == torch.musa.get_device_properties(1).total_memory
            used = pymtml.mtmlMemoryGetUsed(memory)
            x = torch.empty(2 * MIB, dtype=torch.uint8, device="musa:1")
            assert pymtml.mtmlMemoryGetUsed(memory) == used + 2 * MIB
            del x
        with pymtml.mtmlGpuContext(dev) as gpu:
            assert pymtml.mtmlGpuGetTemperature(gpu) == 45
            assert pymtml.mtmlGpuGetClock(gpu) <= pymtml.mtmlGpuGetMaxClock(gpu) == 2000
        # pymtml's NVML-compatible layer, over the same functions.
        info = pymtml.nvmlDeviceGetMemoryInfo(dev)
        assert info.total == total and info.free == total - info.used
        rates = pymtml.nvmlDeviceGetUtilizationRates(dev)
        assert (rates.gpu, rates.memory) == (37, 21)
        assert pymtml.nvmlDeviceGetClockInfo(dev, pymtml.NVML_CLOCK_SM) == 1750
        # A feature the simulated board lacks answers as a real one without it does.
        with pytest.raises(pymtml.MTMLError_NotSupported):
            pymtml.mtmlDeviceGetMpcMode(dev)
        assert pymtml.mtmlErrorString(pymtml.MTML_ERROR_NOT_SUPPORTED) == "Not Supported"
    finally:
        pymtml.mtmlLibraryShutDown()


@needs_pymtml
def test_exports_exactly_what_pymtml_binds(musa_sim):
    """Every mtml* function pymtml calls resolves, and the library defines no other name."""
    import pymtml

    from torchada._simulator import native

    binding = Path(pymtml.__file__).read_text()
    bound = set(re.findall(r'_mtmlGetFunctionPointer\("(\w+)"\)', binding))
    source = (Path(REPO) / "csrc" / "simulator" / "stubs" / "libmtml.c").read_text()
    exported = set(re.findall(r"^MTML_EXPORT [^(]*?\b(\w+)\(", source, flags=re.M))
    assert exported == bound and len(bound) == 115
    path = native.mtml_library_path()
    lib = ctypes.CDLL(str(path))
    for name in sorted(bound):
        getattr(lib, name)
    for absent in ("nvmlInit", "mtmlMemorySetEccMode", "musaMalloc", "torchada_sim_memory_used"):
        assert not hasattr(lib, absent), absent
    # Loadable by its soname, as pymtml loads it: the simulator mapped it when torch_musa loaded.
    assert ctypes.CDLL("libmtml.so.2").mtmlLibraryInit
    assert (path.parent / "libmtml.so.2").exists()


def test_device_indices_follow_visible_devices():
    """CUDA_VISIBLE_DEVICES=2,0 (torchada derives MUSA_VISIBLE_DEVICES from it) on a 3-device
    machine: cuda:0 is MTML's device 2, cuda:1 its device 0."""
    if not HAS_PYMTML:
        pytest.skip("mthreads-ml-py is not installed")
    code = """
        import torchada, torch, pymtml
        assert torch.cuda.device_count() == 2
        def used(physical):
            dev = pymtml.mtmlLibraryInitDeviceByIndex(physical)
            with pymtml.mtmlMemoryContext(dev) as memory:
                return pymtml.mtmlMemoryGetUsed(memory)
        before = [torch.cuda.device_memory_used(i) for i in range(2)]
        x = torch.empty(5 << 20, dtype=torch.uint8, device="cuda:0")
        print("GREW", torch.cuda.device_memory_used(0) - before[0],
              torch.cuda.device_memory_used(1) - before[1])
        print("PHYSICAL", used(0), used(1), used(2))
        print("LIST", torch.cuda.list_gpu_processes(0).splitlines()[0],
              torch.cuda.list_gpu_processes("cuda:1").splitlines()[0])
        try:
            torch.cuda.temperature(2)
        except Exception as err:
            print("HIDDEN", type(err).__name__)
    """
    env = {k: v for k, v in os.environ.items() if k != "MUSA_VISIBLE_DEVICES"}
    env.update(TORCHADA_SIMULATE="1", TORCHADA_SIM_DEVICES="3", CUDA_VISIBLE_DEVICES="2,0")
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "GREW 5242880 0" in out, out
    assert "PHYSICAL 0 0 5242880" in out, out
    assert "LIST GPU:2 GPU:0" in out, out
    assert "HIDDEN RuntimeError" in out, out


def test_without_pymtml_each_says_to_install_it():
    code = f"""
        import sys

        class NoPymtml:
            def find_spec(self, name, path=None, target=None):
                if name == "pymtml":
                    raise ModuleNotFoundError("No module named 'pymtml'", name=name)

        sys.meta_path.insert(0, NoPymtml())
        import torchada, torch
        for name in {list(CONSTANT) + ["device_memory_used"]!r}:
            try:
                getattr(torch.cuda, name)(0)
            except ModuleNotFoundError as err:
                print("RAISED", name, "|", err)
            else:
                print("ANSWERED", name)
        print("LIST |", torch.cuda.list_gpu_processes(0))
    """
    proc = run_python(textwrap.dedent(code), env={"TORCHADA_SIMULATE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    raised = [line for line in lines if line.startswith("RAISED")]
    assert len(raised) == 6, proc.stdout
    for line in raised:
        name = line.split()[1]
        assert f"torch.cuda.{name} " in line and "pip install mthreads-ml-py" in line, line
    assert any(line.startswith("LIST |") and "mthreads-ml-py" in line for line in lines), lines
