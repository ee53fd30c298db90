"""Assembles ``torch_musa._MUSAC``: the simulator's C++ extension plus the types torch_musa's
C module defines (stream/event bases, device properties, the ``_musart`` submodule)."""

import ctypes
import enum
import sys
import types

import torch

from torchada._simulator import native, parallel_comm, sdk, state
from torchada._simulator.boards import MCCL_VERSION


class _MusaStreamBase(torch.Stream):
    pass


class _MusaEventBase(torch.Event):
    pass


class _MusaDeviceProperties:
    __slots__ = ("_name", "_major", "_minor", "_total_memory", "_mp_count")

    def __init__(self, name, major, minor, total_memory, multi_processor_count):
        self._name, self._major, self._minor = name, major, minor
        self._total_memory, self._mp_count = total_memory, multi_processor_count

    name = property(lambda self: self._name)
    major = property(lambda self: self._major)
    minor = property(lambda self: self._minor)
    total_memory = property(lambda self: self._total_memory)
    multi_processor_count = property(lambda self: self._mp_count)
    is_multi_gpu_board = property(lambda self: 0)
    is_integrated = property(lambda self: 0)

    def __repr__(self):
        # torch_musa's own repr, misplaced quote included.
        return (
            f"_MusaDeviceProperties(name='{self._name}', major='{self._major}, "
            f"minor={self._minor}, total_memory={self._total_memory // (1024 * 1024)}MB, "
            f"multi_processor_count={self._mp_count})"
        )


class musaError(enum.IntEnum):
    success = 0


def _make_musart(ext, libmusart):
    m = types.ModuleType("torch_musa._MUSAC._musart")
    m.musaError = musaError

    # The words are libmusart's own (its codes are written once, in musa_runtime_api.h).
    libmusart.musaGetErrorString.restype = ctypes.c_char_p

    def musaGetErrorString(code):
        return libmusart.musaGetErrorString(ctypes.c_int(int(code))).decode()

    m.musaGetErrorString = musaGetErrorString
    m.musaHostRegister = lambda ptr, size, flags: musaError.success
    m.musaHostUnregister = lambda ptr: musaError.success
    m.musaStreamCreate = lambda ptr: musaError.success
    m.musaStreamDestroy = lambda ptr: musaError.success

    def musaMemGetInfo(device):
        total = ext._musa_totalMemory()
        used = ext._musa_memoryStatsRaw(device)["bytes.all"][0]
        limit = int(total * ext._musa_getMemoryFraction(device))
        return (max(limit - used, 0), total)

    m.musaMemGetInfo = musaMemGetInfo
    return m


def _device_properties(index):
    return state.device_properties[index]


def _no_ipc(*args, **kwargs):
    # torch_musa shares device memory between processes through MUSA IPC; the simulated device
    # is host memory of one process, so it says so instead of handing out a handle that cannot
    # work.
    raise RuntimeError(
        "MUSA IPC (sharing a musa tensor's memory with another process) needs a MUSA device; the "
        "simulator cannot share device memory between processes. Move the tensor to the CPU "
        "before sending it, or use torch.distributed."
    )


def load(config):
    ext = native.load_extension()
    # The C module's IPC entry points (storage._share_musa_ and friends call them).
    for name in ("_share_musa_", "_new_shared_musa", "_release_ipc_counter_musa"):
        setattr(ext, name, _no_ipc)
    ext._get_device_properties = _device_properties
    # Work queued on a simulated stream runs at once: there is nothing to keep busy.
    ext._musa_sleep = lambda cycles: None
    # The simulated muBLAS keeps no workspaces to free.
    ext._musa_clearMublasWorkspaces = lambda: None
    ext._sim_configure(config.device_count, config.spec["total_memory"])
    parallel_comm.add_entry_points(ext)
    # torch_musa's C module registers the MCCL process group when it is imported.
    if torch.distributed.is_available():
        ext._sim_register_process_group_mccl()
    for cls in (_MusaStreamBase, _MusaEventBase, _MusaDeviceProperties):
        setattr(ext, cls.__name__, cls)
    # torch_musa's C extension links libmusart: it is loaded (mapped) once torch_musa is. Its
    # MUSAGraph (ext._MUSAGraph, sim_graph.cpp) instantiates and launches through it.
    musart = sdk.load("musart")
    ext._sim_graph_runtime(musart._name)
    ext._musart = _make_musart(ext, musart)
    # The simulated machine's driver provides libmtml.so.2 (MTML), found by its soname.
    sdk.load_driver_libraries()
    ext._musa_version = __import__(
        "torchada._simulator.boards", fromlist=["MUSA_VERSION"]
    ).MUSA_VERSION
    major, minor, patch = MCCL_VERSION
    ext._mccl_version = lambda: (major << 32) | (minor << 16) | patch
    sys.modules["torch_musa._MUSAC"] = ext
    return ext
