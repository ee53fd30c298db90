"""Assembles ``torch_musa._MUSAC``: the simulator's C++ extension plus the types torch_musa's
C module defines (stream/event bases, device properties, the ``_musart`` submodule)."""

import ctypes
import enum
import importlib
import sys
import types

import torch

from torchada._simulator import native, parallel_comm, releases, sdk, state
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


class _MusaUUID:
    """A device's UUID (2.11.0.post2's ``_MusaUUID``): 16 bytes, printed as hex groups."""

    __slots__ = ("_bytes",)

    def __init__(self, raw: bytes):
        self._bytes = bytes(raw)

    bytes = property(lambda self: self._bytes)

    def __str__(self):
        h = self._bytes.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def __repr__(self):
        return str(self)

    def __eq__(self, other):
        return isinstance(other, _MusaUUID) and other._bytes == self._bytes

    def __hash__(self):
        return hash(self._bytes)


_MusaUUID.__module__ = "torch_musa._MUSAC"


class _MusaDevicePropertiesExtended(_MusaDeviceProperties):
    """2.11.0.post2's device properties: 16 fields more than 2.7.1's 7, and a repr that names
    them (its misplaced quote fixed)."""

    __slots__ = ("_index", "_extra")

    def __init__(self, name, major, minor, total_memory, multi_processor_count, index, extra):
        super().__init__(name, major, minor, total_memory, multi_processor_count)
        self._index, self._extra = index, extra

    max_threads_per_multi_processor = property(lambda self: self._extra["max_threads_per_mp"])
    max_threads_per_block = property(lambda self: 1024)
    warp_size = property(lambda self: self._extra["warp_size"])
    shared_memory_per_block = property(lambda self: 48 * 1024)
    shared_memory_per_multiprocessor = property(lambda self: self._extra["smem_per_mp"])
    shared_memory_per_block_optin = property(lambda self: self._extra["smem_per_mp"])
    regs_per_multiprocessor = property(lambda self: 65536)
    clock_rate = property(lambda self: self._extra["clock_khz"])
    memory_clock_rate = property(lambda self: self._extra["memory_clock_khz"])
    memory_bus_width = property(lambda self: self._extra["memory_bus_width"])
    gcnArchName = property(lambda self: self._name)
    uuid = property(lambda self: _MusaUUID(self._extra["uuid"]))
    pci_bus_id = property(lambda self: self._extra["pci_bus_id"])
    pci_device_id = property(lambda self: 0)
    pci_domain_id = property(lambda self: 0)
    L2_cache_size = property(lambda self: self._extra["l2_cache_size"])

    def __repr__(self):
        return (
            f"_MusaDeviceProperties(name='{self._name}', major={self._major}, "
            f"minor={self._minor}, total_memory={self._total_memory // (1024 * 1024)}MB, "
            f"multi_processor_count={self._mp_count}, uuid={self.uuid}, "
            f"pci_bus_id={self.pci_bus_id}, pci_device_id={self.pci_device_id}, "
            f"pci_domain_id={self.pci_domain_id}, L2_cache_size="
            f"{self.L2_cache_size // (1024 * 1024)}MB)"
        )


# The C module's class keeps its name in 2.11.0.post2.
_MusaDevicePropertiesExtended.__name__ = "_MusaDeviceProperties"
_MusaDevicePropertiesExtended.__qualname__ = "_MusaDeviceProperties"


def device_properties(config, index: int):
    """Device ``index``'s properties as the simulated release's C module makes them."""
    spec = config.spec
    basic = (spec["name"], *spec["capability"], spec["total_memory"], spec["sm_count"])
    if config.facts["device_property_fields"] != "extended":
        return _MusaDeviceProperties(*basic)
    physical = config.visible[index]
    extra = {
        "max_threads_per_mp": 2048,
        "warp_size": 32 if spec["capability"][0] >= 3 else 128,
        "smem_per_mp": 192 * 1024,
        "clock_khz": 1_600_000,
        "memory_clock_khz": 7_000_000,
        "memory_bus_width": 384,
        # One UUID per physical board (the simulated machine's, stable across runs).
        "uuid": bytes([0x4D, 0x54, 0x54, 0x53] + [0] * 11 + [physical]),
        "pci_bus_id": 0x10 + physical,
        "l2_cache_size": 8 * 1024 * 1024,
    }
    return _MusaDevicePropertiesExtended(*basic, index, extra)


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


# Blocks handed out by raw allocations, by address: the caching allocator's allocated blocks.
_raw_blocks: "dict[int, torch.Tensor]" = {}


def raw_alloc(size: int, stream: int) -> int:
    """MUSACachingAllocator::raw_alloc on the current device, filed under the native stream
    ``stream`` (a handle): a byte tensor from the simulated allocator, kept until
    ``_musa_musaCachingAllocator_raw_delete``, so memory_allocated() and the statistics count it."""
    if int(size) == 0:
        return 0  # the allocator answers a zero-byte request with a null pointer
    idx = torch.musa.current_device()
    current = torch.musa.current_stream(idx)
    on = current if stream == current.musa_stream else torch.musa.ExternalStream(stream, idx)
    with torch.musa.stream(on):
        block = torch.empty(int(size), dtype=torch.uint8, device=torch.device("musa", idx))
    _raw_blocks[block.data_ptr()] = block
    return block.data_ptr()


def _raw_delete(mem_ptr: int) -> None:
    # THCPModule_musaCachingAllocator_raw_delete: raw_delete(nullptr) does nothing; an address
    # the allocator did not hand out fails its TORCH_CHECK.
    if mem_ptr and _raw_blocks.pop(mem_ptr, None) is None:
        raise RuntimeError(f"invalid device pointer: {mem_ptr:#x}")


def load(config):
    ext = native.load_extension()
    ext._musa_musaCachingAllocator_raw_delete = _raw_delete
    # The C module's IPC entry points (storage._share_musa_ and friends call them).
    for name in ("_share_musa_", "_new_shared_musa", "_release_ipc_counter_musa"):
        setattr(ext, name, _no_ipc)
    ext._get_device_properties = _device_properties
    # Work queued on a simulated stream runs at once: there is nothing to keep busy.
    ext._musa_sleep = lambda cycles: None
    # The simulated muBLAS keeps no workspaces to free.
    ext._musa_clearMublasWorkspaces = lambda: None
    ext._sim_configure(config.device_count, config.spec["total_memory"])
    if config.facts["accelerator_memory"]:
        # 2.11.0.post2: the allocator is a c10::DeviceAllocator, so torch.accelerator's memory
        # functions work; before it they fail in torch ("... is not a DeviceAllocator.").
        ext._sim_use_device_allocator()
    parallel_comm.add_entry_points(ext)
    # torch_musa's C module registers the MCCL process group when it is imported.
    if torch.distributed.is_available():
        ext._sim_register_process_group_mccl()
    for cls in (_MusaStreamBase, _MusaEventBase, _MusaDeviceProperties):
        setattr(ext, cls.__name__, cls)
    if config.facts["device_property_fields"] == "extended":
        ext._MusaUUID = _MusaUUID
        ext._MusaDeviceProperties = _MusaDevicePropertiesExtended
    if config.facts["device_api_2_11"]:
        # torch's synchronisation debug mode, which 2.11.0.post2 binds for musa.
        ext._sim_sync_debug_mode = 0
        ext._musa_set_sync_debug_mode = lambda mode: setattr(ext, "_sim_sync_debug_mode", int(mode))
        ext._musa_get_sync_debug_mode = lambda: ext._sim_sync_debug_mode
    # torch_musa's C extension links libmusart: it is loaded (mapped) once torch_musa is. Its
    # MUSAGraph (ext._MUSAGraph, sim_graph.cpp) instantiates and launches through it.
    musart = sdk.load("musart")
    ext._sim_graph_runtime(musart._name)
    # _MUSAGraph: the release's C++ MUSAGraph (its members' layout and methods).
    ext._sim_bind_graph(ext, releases.facts(config.release)["graph_layout"])
    ext._musart = _make_musart(ext, musart)
    # The simulated machine's driver provides libmtml.so.2 (MTML), found by its soname.
    sdk.load_driver_libraries()
    ext._musa_version = __import__(
        "torchada._simulator.boards", fromlist=["MUSA_VERSION"]
    ).MUSA_VERSION
    major, minor, patch = MCCL_VERSION
    ext._mccl_version = lambda: (major << 32) | (minor << 16) | patch
    # The release's own operator kernels (its defects with them).
    importlib.import_module("torchada._simulator.matmul").register(config.facts)
    sys.modules["torch_musa._MUSAC"] = ext
    return ext
