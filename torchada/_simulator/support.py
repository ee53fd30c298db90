"""Implementation helpers of the simulated torch_musa, kept outside the ``torch_musa`` namespace:
real torch_musa has no such names, so a program (or torchada) that reached for one would pass on
the simulator and fail on the hardware."""

import collections
import types

import torch

# c10::DeviceType::PrivateUse1, the device type torch_musa's streams are created with.
MUSA_DEVICE_TYPE = 20

# What the memory statistics count, as torch's CUDA caching allocator names them.
STAT_KINDS = ("allocated_bytes", "reserved_bytes", "active_bytes", "requested_bytes")
COUNT_KINDS = ("allocation", "segment", "active")
POOLS = ("all", "small_pool", "large_pool")

# torch's own formatter, taken while torch.cuda is still torch's (torch_musa loads before any
# adapter); memory_summary renders MUSA statistics with it.
TORCH_MEMORY_SUMMARY = torch.cuda.memory.memory_summary


def generator_index(device) -> int:
    """The device index of a random-state call's ``device`` ("musa", "musa:1", 1, a device)."""
    import torch_musa

    if isinstance(device, str):
        device = torch.device(device)
    elif isinstance(device, int):
        device = torch.device("musa", device)
    return torch_musa.current_device() if device.index is None else device.index


def mean_time(stmt: str, **values) -> float:
    """Mean seconds of 10 runs of ``stmt`` (torch.utils.benchmark) with ``values`` in scope."""
    from torch.utils import benchmark

    return benchmark.Timer(stmt=stmt, globals={"torch": torch, **values}).timeit(10).mean


def with_globals(fn: types.FunctionType, **names) -> types.FunctionType:
    """A copy of ``fn`` whose global lookups of ``names`` find the given objects: torch's own code
    run with torch_musa's pieces in place of the CUDA ones it names."""
    copy = types.FunctionType(
        fn.__code__, {**fn.__globals__, **names}, fn.__name__, fn.__defaults__, fn.__closure__
    )
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


def flat_stats(nested: dict) -> "collections.OrderedDict":
    """torch's flattening of nested memory statistics: dotted keys, sorted.

    Example::

        >>> flat_stats({"a": {"b": 1}, "c": 2})
        OrderedDict([('a.b', 1), ('c', 2)])
    """
    result = []

    def _flatten(prefix, obj):
        if isinstance(obj, dict):
            if prefix:
                prefix += "."
            for k, v in obj.items():
                _flatten(prefix + k, v)
        else:
            result.append((prefix, obj))

    _flatten("", nested)
    result.sort()
    return collections.OrderedDict(result)
