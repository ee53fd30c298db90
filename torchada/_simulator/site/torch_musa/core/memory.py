"""Memory API (torch_musa/core/memory.py) over the simulator's exact allocation counters.

The simulator has no caching allocator: reserved == allocated, and empty_cache frees nothing.
"""

import collections
import contextlib
import ctypes
import importlib

import torch

import torch_musa
from torchada._simulator import support as _support

from ._lazy_init import _lazy_init, is_initialized
from ._utils import _get_musa_device_index

__all__ = [
    "set_per_process_memory_fraction",
    "empty_cache",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_snapshot",
    "memory_summary",
    "mem_get_info",
    "get_allocator_backend",
    "MUSAPluggableAllocator",
    "change_current_allocator",
    "MemPool",
    "MemPoolContext",
    "use_mem_pool",
    "memory_stats_all",
]


def set_per_process_memory_fraction(fraction, device=None):
    _lazy_init()
    device = _get_musa_device_index(device, optional=True)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    torch_musa._MUSAC._musa_setMemoryFraction(fraction, device)


def empty_cache():
    if is_initialized():
        pass  # nothing is cached


def memory_stats_as_nested_dict(device=None):
    if not is_initialized():
        return {}
    device = _get_musa_device_index(device, optional=True)
    raw = torch_musa._MUSAC._musa_memoryStatsRaw(device)
    out = {}
    for kind in _support.STAT_KINDS:
        out[kind] = {
            pool: dict(zip(("current", "peak", "allocated", "freed"), raw[f"bytes.{pool}"]))
            for pool in _support.POOLS
        }
    for kind in _support.COUNT_KINDS:
        out[kind] = {
            pool: dict(zip(("current", "peak", "allocated", "freed"), raw[f"count.{pool}"]))
            for pool in _support.POOLS
        }
    zero = {"current": 0, "peak": 0, "allocated": 0, "freed": 0}
    out["inactive_split"] = {pool: dict(zero) for pool in _support.POOLS}
    out["inactive_split_bytes"] = {pool: dict(zero) for pool in _support.POOLS}
    out["oversize_allocations"] = dict(zero)
    out["oversize_segments"] = dict(zero)
    out["num_alloc_retries"] = 0
    out["num_ooms"] = raw["num_ooms"]
    out["num_sync_all_streams"] = 0
    out["num_device_alloc"] = raw["num_device_alloc"]
    out["num_device_free"] = raw["num_device_free"]
    out["max_split_size"] = -1
    return out


def memory_stats(device=None):
    return _support.flat_stats(memory_stats_as_nested_dict(device=device))


def memory_stats_all():
    merged = collections.OrderedDict()
    for i in range(torch_musa.device_count()):
        for k, v in memory_stats(i).items():
            if k.endswith(".peak"):
                merged[k] = max(merged.get(k, 0), v)
            else:
                merged[k] = merged.get(k, 0) + v
    return merged


def reset_accumulated_memory_stats(device=None):
    _lazy_init()
    torch_musa._MUSAC._musa_resetAccumulatedMemoryStats(
        _get_musa_device_index(device, optional=True)
    )


def reset_peak_memory_stats(device=None):
    _lazy_init()
    torch_musa._MUSAC._musa_resetPeakMemoryStats(_get_musa_device_index(device, optional=True))


def reset_max_memory_allocated(device=None):
    return reset_peak_memory_stats(device=device)


def reset_max_memory_cached(device=None):
    return reset_peak_memory_stats(device=device)


def memory_allocated(device=None):
    return memory_stats(device=device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None):
    return memory_stats(device=device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None):
    return memory_stats(device=device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None):
    return memory_stats(device=device).get("reserved_bytes.all.peak", 0)


def memory_snapshot():
    return []


def memory_summary(device=None, abbreviated=False):
    # torch_musa prints torch's CUDA table with MUSA wording: render it with torch's own
    # formatter, fed with this device's statistics.
    device = _get_musa_device_index(device, optional=True)
    stats = memory_stats(device=device)
    render = _support.with_globals(
        _support.TORCH_MEMORY_SUMMARY, memory_stats=lambda device=None: stats
    )
    text = render(device=device, abbreviated=abbreviated)
    for cuda, musa in (
        ("PyTorch CUDA memory summary", "Torch MUSA memory summary"),
        ("CUDA OOMs", "MUSA OOMs"),
        ("cudaMalloc retries", "musaMalloc retries"),
    ):
        text = text.replace(cuda, musa)
    return text


def mem_get_info(device=None):
    _lazy_init()
    return torch_musa.musart().musaMemGetInfo(_get_musa_device_index(device, optional=True))


def get_allocator_backend():
    return "native"


class _MUSAAllocator:
    def __init__(self, allocator):
        self._allocator = allocator

    def allocator(self):
        return self._allocator


class MUSAPluggableAllocator(_MUSAAllocator):
    def __init__(self, path_to_so_file, alloc_fn_name, free_fn_name):
        lib = ctypes.CDLL(path_to_so_file)
        self._alloc_fn = getattr(lib, alloc_fn_name)
        self._free_fn = getattr(lib, free_fn_name)
        super().__init__((path_to_so_file, alloc_fn_name, free_fn_name))


def change_current_allocator(allocator):
    if is_initialized():
        raise RuntimeError("Can't swap an already initialized allocator")
    # The simulator keeps allocating host memory itself; the allocator is recorded, not used.
    torch_musa._sim_current_allocator = allocator


class MemPool:
    _next_id = 1

    def __init__(self, allocator=None):
        self.allocator = allocator
        self.id = (0, MemPool._next_id)
        MemPool._next_id += 1

    def use_count(self):
        return 1

    def snapshot(self):
        return []


class MemPoolContext:
    _active = None

    def __init__(self, pool):
        self.pool = pool
        self._prev = None

    @staticmethod
    def active_pool():
        return MemPoolContext._active

    def __enter__(self):
        self._prev, MemPoolContext._active = MemPoolContext._active, self.pool
        return self

    def __exit__(self, *exc):
        MemPoolContext._active = self._prev


@contextlib.contextmanager
def use_mem_pool(pool, device=None):
    with MemPoolContext(pool):
        yield


def _record_memory_history(enabled="all", *args, **kwargs):
    pass


def _snapshot(device=None):
    return {"segments": [], "device_traces": []}


def _dump_snapshot(filename="dump_snapshot.pickle"):
    import pickle

    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


def _set_allocator_settings(env):
    pass


_MEMORY_NAMES = importlib.import_module("torchada._simulator.state").config.facts["memory_names"]

if _MEMORY_NAMES != "2.7.1":
    # From 2.9.1.post1 (core/memory.py): torch.cuda's caching-allocator and host-memory
    # functions, MemPool(use_on_oom=...), memory_snapshot(mempool_id=...); memory_stats_all and
    # the private helpers are no longer re-exported at the top level.
    __all__ = [n for n in __all__ if n != "memory_stats_all"] + [
        "caching_allocator_alloc",
        "caching_allocator_delete",
        "caching_allocator_enable",
        "get_per_process_memory_fraction",
        "host_memory_stats",
        "host_memory_stats_as_nested_dict",
        "reset_accumulated_host_memory_stats",
        "reset_peak_host_memory_stats",
        "memory_cached",
        "max_memory_cached",
        "list_gpu_processes",
    ]

    def caching_allocator_alloc(size, device=None, stream=None):
        # torch.cuda's, with musa's names (a raw allocation on the stream asked for).
        if device is None:
            device = torch.musa.current_device()
        device = _get_musa_device_index(device)
        if stream is None:
            stream = torch.musa.current_stream(device)
        if isinstance(stream, torch.musa.Stream):
            stream = stream.musa_stream
        if not isinstance(stream, int):
            raise TypeError(
                "Invalid type for stream argument, must be "
                "`torch.musa.Stream` or `int` representing a pointer "
                "to an existing stream"
            )
        with torch.musa.device(device):
            # The C module's raw_alloc, kept off _MUSAC: its binding's name is not on record.
            return importlib.import_module("torchada._simulator.musac").raw_alloc(size, stream)

    def caching_allocator_delete(mem_ptr):
        torch_musa._MUSAC._musa_musaCachingAllocator_raw_delete(mem_ptr)

    def caching_allocator_enable(value=True):
        if is_initialized():
            pass  # the simulated allocator caches nothing either way

    def get_per_process_memory_fraction(device=None):
        _lazy_init()
        device = _get_musa_device_index(device, optional=True)
        return torch_musa._MUSAC._musa_getMemoryFraction(device)

    def host_memory_stats_as_nested_dict():
        def stat():
            return {"current": 0, "peak": 0, "allocated": 0, "freed": 0}

        def duration():
            return {"total": 0, "max": 0, "min": 0, "count": 0, "avg": 0}

        return {
            "num_host_alloc": 0,
            "num_host_free": 0,
            "allocations": stat(),
            "active_requests": stat(),
            "allocated_bytes": stat(),
            "active_bytes": stat(),
            "host_alloc_time": duration(),
            "host_free_time": duration(),
        }

    def host_memory_stats():
        return _support.flat_stats(host_memory_stats_as_nested_dict())

    def reset_accumulated_host_memory_stats():
        pass  # pinned memory keeps no statistics on the simulator

    def reset_peak_host_memory_stats():
        pass

    def memory_cached(device=None):
        return memory_reserved(device=device)

    def max_memory_cached(device=None):
        return max_memory_reserved(device=device)

    def list_gpu_processes(device=None):
        # torch_musa asks mthreads-gmi, which the simulated machine does not have.
        return "mthreads-gmi not found"


if _MEMORY_NAMES == "2.9.1.post1":

    class MemPool:
        _next_id = 1

        def __init__(self, allocator=None, use_on_oom=False):
            self.allocator = allocator
            self.use_on_oom = use_on_oom
            self.id = (0, MemPool._next_id)
            MemPool._next_id += 1

        def use_count(self):
            return 1

        def snapshot(self):
            return []

    def memory_snapshot(mempool_id=None):
        return []

elif _MEMORY_NAMES == "2.11.0.post2":
    # 2.11.0.post2: MemPool(no_split=...) without its allocator property, no MemPoolContext,
    # no _dump_snapshot.
    __all__ = [n for n in __all__ if n != "MemPoolContext"]

    class MemPool:
        _next_id = 1

        def __init__(self, allocator=None, use_on_oom=False, no_split=False):
            self._allocator = allocator
            self.use_on_oom = use_on_oom
            self.no_split = no_split
            self.id = (0, MemPool._next_id)
            MemPool._next_id += 1

        def use_count(self):
            return 1

        def snapshot(self, include_traces=True):
            return []

    def memory_snapshot(mempool_id=None, include_traces=True):
        return []

    @contextlib.contextmanager
    def use_mem_pool(pool, device=None):
        yield

    del MemPoolContext, _dump_snapshot

del _MEMORY_NAMES
