"""torch.cuda's telemetry on MUSA, read from MTML (the Moore Threads driver's management library,
``libmtml.so.2``) through its Python bindings, ``pymtml`` (``pip install mthreads-ml-py``).

torch reads these through NVML (``pynvml``); on MUSA the same questions go to MTML, with CUDA's
types and units: ``utilization`` and ``memory_usage`` in percent, ``temperature`` in degrees C,
``power_draw`` in milliwatts, ``clock_rate`` (the SM clock) in MHz, ``device_memory_used`` in
bytes, all ``int``; ``list_gpu_processes`` a printout.

Device arguments are torch's (None, an index, ``"cuda:1"``, ``torch.device``; cuda means musa);
the index is mapped to MTML's (physical) one through ``MUSA_VISIBLE_DEVICES`` (which torchada
derives from ``CUDA_VISIBLE_DEVICES``), as torch maps its index to NVML's through
``CUDA_VISIBLE_DEVICES``.

Nothing here is imported until one of these functions is called.
"""

from __future__ import annotations

import functools
import os
import threading
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Iterator, List, Optional

__all__ = [
    "clock_rate",
    "device_memory_used",
    "list_gpu_processes",
    "memory_usage",
    "power_draw",
    "temperature",
    "utilization",
]

PACKAGE = "mthreads-ml-py"
LIBRARY = "libmtml.so.2"
VISIBLE = "MUSA_VISIBLE_DEVICES"

_lock = threading.Lock()
_initialised: List[ModuleType] = []  # pymtml, once mtmlLibraryInit succeeded in this process


def _missing_bindings(function: str, err: BaseException) -> ModuleNotFoundError:
    return ModuleNotFoundError(
        f"torch.cuda.{function} on MUSA reads the board through MTML, whose Python bindings "
        f"(module pymtml) are not installed or cannot be imported ({err}): "
        f"pip install {PACKAGE}"
    )


def _pymtml(function: str) -> ModuleType:
    """pymtml with MTML initialised (once per process), or the error that says what is missing."""
    if _initialised:
        return _initialised[0]
    try:
        import pymtml
    except ImportError as err:
        raise _missing_bindings(function, err) from err
    with _lock:
        if not _initialised:
            try:
                pymtml.mtmlLibraryInit()
            except (OSError, pymtml.MTMLError) as err:
                message = (
                    f"torch.cuda.{function} on MUSA reads the board through MTML, but {LIBRARY} "
                    f"(the Moore Threads driver's management library) cannot be loaded or "
                    f"initialised: {err}. Is the MUSA driver installed?"
                )
                if isinstance(err, OSError):
                    raise _library_not_found(pymtml)(message) from err
                raise RuntimeError(message) from err
            _initialised.append(pymtml)
    return _initialised[0]


@functools.lru_cache(maxsize=None)
def _library_not_found(pymtml: ModuleType) -> type:
    """The error for an MTML library that cannot be loaded: NVML's type for it, as torch's
    telemetry lets ``pynvml.NVMLError_LibraryNotFound`` through where ``libnvidia-ml`` is missing
    (pymtml's ``MTMLError_LibraryNotFound``, which is ``pynvml.NVMLError_LibraryNotFound`` as
    torchada serves ``pynvml``), and a RuntimeError, as torch raises where the driver is not
    loaded."""
    base = pymtml.MTMLError_LibraryNotFound

    class LibraryNotFound(base, RuntimeError):  # type: ignore[misc,valid-type]
        def __new__(cls, message: str) -> Any:
            obj = base.__new__(cls)
            obj.args = (message,)
            return obj

        def __init__(self, message: str) -> None:
            RuntimeError.__init__(self, message)

        def __str__(self) -> str:
            return str(self.args[0])

    LibraryNotFound.__qualname__ = LibraryNotFound.__name__ = "MtmlLibraryNotFound"
    return LibraryNotFound


def _visible_devices(mtml: ModuleType) -> "List[int]":
    """MTML indices of the devices this process sees, in torch's order: ``MUSA_VISIBLE_DEVICES``
    read as the MUSA driver reads it (device indices, or UUID prefixes naming one device; the
    list stops at the first entry that names no device or one already listed), else every
    device."""
    value = os.environ.get(VISIBLE)
    count = mtml.mtmlLibraryCountDevice()
    if value is None:
        return list(range(count))
    uuids: Optional[List[str]] = None
    out: List[int] = []
    for entry in (e.strip() for e in value.split(",")):
        if entry.isascii() and entry.isdigit():
            index = int(entry)
        else:
            if uuids is None:
                uuids = [_uuid(mtml, i) for i in range(count)]
            matches = [i for i, u in enumerate(uuids) if entry and u.startswith(entry)]
            index = matches[0] if len(matches) == 1 else -1
        if index < 0 or index >= count or index in out:
            break
        out.append(index)
    return out


def _uuid(mtml: ModuleType, index: int) -> str:
    return mtml.mtmlDeviceGetUUID(mtml.mtmlLibraryInitDeviceByIndex(index))


def _mtml_index(mtml: ModuleType, device: Any) -> int:
    from .cuda import _get_device_index

    index = _get_device_index(device, optional=True)
    visible = _visible_devices(mtml)
    if index < 0 or index >= len(visible):
        raise RuntimeError(f"device {index} is not visible ({VISIBLE}={visible})")
    return visible[index]


def _device(function: str, device: Any) -> "tuple[ModuleType, Any]":
    mtml = _pymtml(function)
    return mtml, mtml.mtmlLibraryInitDeviceByIndex(_mtml_index(mtml, device))


@contextmanager
def _part(mtml: ModuleType, handle: Any, part: str) -> Iterator[Any]:
    """One of a device's MTML objects (``"Gpu"``, ``"Memory"``), freed afterwards."""
    obj = getattr(mtml, f"mtmlDeviceInit{part}")(handle)
    try:
        yield obj
    finally:
        getattr(mtml, f"mtmlDeviceFree{part}")(obj)


def utilization(device: Any = None) -> int:
    """Percent of the last sample period during which a kernel ran on the device (MTML's GPU
    utilization), as torch.cuda.utilization reports NVML's.

    Example::

        >>> torch.cuda.utilization(0)  # doctest: +SKIP
        37
    """
    mtml, handle = _device("utilization", device)
    with _part(mtml, handle, "Gpu") as gpu:
        return int(mtml.mtmlGpuGetUtilization(gpu))


def memory_usage(device: Any = None) -> int:
    """Percent of the last sample period during which device memory was read or written (MTML's
    memory utilization).

    Example::

        >>> torch.cuda.memory_usage("cuda:0")  # doctest: +SKIP
        21
    """
    mtml, handle = _device("memory_usage", device)
    with _part(mtml, handle, "Memory") as memory:
        return int(mtml.mtmlMemoryGetUtilization(memory))


def temperature(device: Any = None) -> int:
    """The GPU's temperature in degrees C.

    Example::

        >>> torch.cuda.temperature()  # doctest: +SKIP
        45
    """
    mtml, handle = _device("temperature", device)
    with _part(mtml, handle, "Gpu") as gpu:
        return int(mtml.mtmlGpuGetTemperature(gpu))


def power_draw(device: Any = None) -> int:
    """The board's power draw in milliwatts (MTML reports mW, as NVML does).

    Example::

        >>> torch.cuda.power_draw(torch.device("cuda", 1))  # doctest: +SKIP
        152000
    """
    mtml, handle = _device("power_draw", device)
    return int(mtml.mtmlDeviceGetPowerUsage(handle))


def clock_rate(device: Any = None) -> int:
    """The GPU's clock in MHz (the SM clock torch reads from NVML).

    Example::

        >>> torch.cuda.clock_rate(0)  # doctest: +SKIP
        1750
    """
    mtml, handle = _device("clock_rate", device)
    with _part(mtml, handle, "Gpu") as gpu:
        return int(mtml.mtmlGpuGetClock(gpu))


def device_memory_used(device: Any = None) -> int:
    """Device memory in use, in bytes, as the driver counts it (every process's, not only this
    one's allocator).

    Example::

        >>> torch.cuda.device_memory_used(0)  # doctest: +SKIP
        4194304
    """
    mtml, handle = _device("device_memory_used", device)
    with _part(mtml, handle, "Memory") as memory:
        return int(mtml.mtmlMemoryGetUsed(memory))


def list_gpu_processes(device: Any = None) -> str:
    """A printout of the processes running on the device and their device memory, as torch's.
    Like torch's, it returns (rather than raises) the reason when the bindings or the driver's
    library are missing: it is called from out-of-memory handlers.

    Example::

        >>> print(torch.cuda.list_gpu_processes(0))  # doctest: +SKIP
        GPU:0
        no processes are running
    """
    try:
        mtml = _pymtml("list_gpu_processes")
    except ModuleNotFoundError:
        return f"pymtml module not found, please install {PACKAGE}"
    except RuntimeError:
        return f"{LIBRARY} can't be loaded, is the MUSA driver installed?"
    index = _mtml_index(mtml, device)
    handle = mtml.mtmlLibraryInitDeviceByIndex(index)
    # MTML has no per-process query; pymtml's NVML layer answers for it.
    running = getattr(mtml, "nvmlDeviceGetComputeRunningProcesses", None)
    procs = running(handle) if running is not None else []
    lines = [f"GPU:{index}"]
    if not procs:
        lines.append("no processes are running")
    for proc in procs:
        mem = proc.usedGpuMemory / (1024 * 1024)
        lines.append(f"process {proc.pid:>10d} uses {mem:>12.3f} MB GPU memory")
    return "\n".join(lines)
