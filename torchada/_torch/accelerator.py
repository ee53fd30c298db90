"""``torch.accelerator`` on MUSA.

torch's generic accelerator API reaches the backend through hooks torch_musa does not provide:
the memory functions assert that musa's allocator is a ``DeviceAllocator`` (``empty_host_cache``
crashes the process), ``get_device_capability`` is "not supported" and ``Graph`` refuses the
musa device. Those are served by torch_musa here: its allocator statistics, a dtype probe and
``MUSAGraph``. torch_musa 2.11.0.post2 serves the memory functions itself: at the first call of
one, torchada asks torch's own ``memory_stats`` once, and where it answers, torch's functions are
put back and torchada is out of the way. ``current_stream`` checks the index as CUDA's does
(torch_musa's check names no index). The other device, stream and synchronisation functions work
as torch has them.

Device arguments also accept CUDA spellings ("cuda", "cuda:1", ``torch.device("cuda", 1)``),
read as the musa device of the same index, as everywhere in torchada.
"""

from __future__ import annotations

import collections
import importlib
import logging
import warnings
from typing import TYPE_CHECKING, Any

import torch
import torch.accelerator as _acc

from .._devices.rule import musa_spec

if TYPE_CHECKING:
    from .._core.patcher import Patcher

logger = logging.getLogger("torchada")


def _optional_module(name: str) -> Any:
    # Older torch releases have a smaller torch.accelerator (no memory or graph API).
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_acc_memory = _optional_module("torch.accelerator.memory")
_utils = _optional_module("torch.accelerator._utils")
_torch_get_device_index = getattr(_utils, "_get_device_index", None)


def _backend() -> str:
    return torch._C._get_privateuse1_backend_name()


def _get_device_index(device: Any, optional: bool = False) -> int:
    """torch's rule, with a cuda device read as the musa device of the same index."""
    device = musa_spec(device)
    if _torch_get_device_index is None:
        return torch.musa.core._utils._get_musa_device_index(device, optional)
    return _torch_get_device_index(device, optional)


def _index(device_index: Any) -> int:
    return _get_device_index(device_index, optional=True)


def empty_cache() -> None:
    torch.musa.empty_cache()


def empty_host_cache() -> None:
    # torch_musa exposes no control over its pinned-memory cache: nothing to release from here.
    logger.debug("torch.accelerator.empty_host_cache: no MUSA host cache control; ignored")


def memory_stats(device_index: Any = None, /) -> collections.OrderedDict[str, Any]:
    return collections.OrderedDict(torch.musa.memory_stats(_index(device_index)))


def memory_allocated(device_index: Any = None, /) -> int:
    return torch.musa.memory_allocated(_index(device_index))


def max_memory_allocated(device_index: Any = None, /) -> int:
    return torch.musa.max_memory_allocated(_index(device_index))


def memory_reserved(device_index: Any = None, /) -> int:
    return torch.musa.memory_reserved(_index(device_index))


def max_memory_reserved(device_index: Any = None, /) -> int:
    return torch.musa.max_memory_reserved(_index(device_index))


def reset_accumulated_memory_stats(device_index: Any = None, /) -> None:
    torch.musa.reset_accumulated_memory_stats(_index(device_index))


def reset_peak_memory_stats(device_index: Any = None, /) -> None:
    torch.musa.reset_peak_memory_stats(_index(device_index))


def get_memory_info(device_index: Any = None, /) -> tuple[int, int]:
    free, total = torch.musa.mem_get_info(_index(device_index))
    return int(free), int(total)


_torch_current_stream = getattr(_acc, "current_stream", None)


def current_stream(device: Any = None, /) -> torch.Stream:
    index = _get_device_index(device, optional=True)
    count = torch.musa.device_count()
    # torch_musa's stream lookup fails an internal assert that names no index (and the
    # simulator's does not check); CUDA's says which index and what range. -1: the current one.
    if index >= count or index < -1:
        raise RuntimeError(f"Device index value {index} is out of index range [0, {count})")
    return _torch_current_stream(index)


# Every scalar type torch's DeviceCapability can report, probed by allocation on musa.
_CANDIDATE_DTYPES = [
    getattr(torch, name)
    for name in (
        "uint8",
        "int8",
        "int16",
        "int32",
        "int64",
        "float16",
        "float32",
        "float64",
        "complex32",
        "complex64",
        "complex128",
        "bool",
        "qint8",
        "quint8",
        "qint32",
        "bfloat16",
        "quint4x2",
        "quint2x4",
        "bits1x8",
        "bits2x4",
        "bits4x2",
        "bits8",
        "bits16",
        "float8_e5m2",
        "float8_e4m3fn",
        "float8_e5m2fnuz",
        "float8_e4m3fnuz",
        "uint16",
        "uint32",
        "uint64",
    )
    if hasattr(torch, name)
]
_capabilities: dict[int, dict[str, Any]] = {}


def _probe_dtypes(index: int) -> set[torch.dtype]:
    device = torch.device(_backend(), index)
    supported = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "ComplexHalf support is experimental": a probe
        for dtype in _CANDIDATE_DTYPES:
            try:
                torch.empty(1, dtype=dtype, device=device)
            except (RuntimeError, TypeError, NotImplementedError):
                continue
            supported.add(dtype)
    return supported


def get_device_capability(device: Any = None, /) -> dict[str, Any]:
    index = _index(device)
    if index not in _capabilities:
        try:
            _capabilities[index] = torch._C._accelerator_getDeviceCapability(index)
        except RuntimeError:
            # torch_musa does not report capabilities: the dtypes musa tensors can be made of.
            _capabilities[index] = {"supported_dtypes": _probe_dtypes(index)}
    return _capabilities[index]


def _graph_class() -> type:
    base = torch.musa.MUSAGraph
    _KEEPS_GRAPH = hasattr(base, "instantiate")

    class Graph(base):  # type: ignore[misc, valid-type]
        """``torch.accelerator.Graph`` over torch_musa's ``MUSAGraph``."""

        def __new__(
            cls,
            keep_graph: bool = False,
            *,
            pool: tuple[int, int] | None = None,
            capture_error_mode: str = "default",
        ) -> Any:
            if _KEEPS_GRAPH:  # torch_musa 2.9.1.post1+: MUSAGraph(keep_graph=...)
                return super().__new__(cls, keep_graph)
            return super().__new__(cls)

        def __init__(
            self,
            keep_graph: bool = False,
            *,
            pool: tuple[int, int] | None = None,
            capture_error_mode: str = "default",
        ) -> None:
            if _KEEPS_GRAPH:
                super().__init__(keep_graph)
            else:
                super().__init__()
            self.keep_graph = keep_graph
            self.graph_pool = pool
            self.capture_error_mode = capture_error_mode

        def capture_begin(self) -> None:  # type: ignore[override]
            # "default" is the generic API's spelling of the backend default, CUDA's "global".
            mode = "global" if self.capture_error_mode == "default" else self.capture_error_mode
            super().capture_begin(pool=self.graph_pool, capture_error_mode=mode)

        def instantiate(self) -> None:
            # Before 2.9.1.post1 MUSA graphs are instantiated by capture_end; keep_graph changes
            # nothing there. From it, the release's own instantiate().
            if _KEEPS_GRAPH:
                super().instantiate()

        def __enter__(self) -> None:
            torch.musa.synchronize()
            torch.musa.empty_cache()
            self.capture_begin()

        def __exit__(self, *exc_info: object) -> None:
            self.capture_end()

    Graph.__module__ = "torch.accelerator"
    Graph.__qualname__ = "Graph"
    return Graph


# The memory functions, which torch_musa may serve itself (2.11.0.post2): torch's own, and
# whether torch_musa answers them (None: not asked yet).
MEMORY = (
    "empty_cache",
    "empty_host_cache",
    "memory_stats",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "get_memory_info",
)
_torch_memory: dict[str, Any] = {}
_native_memory: dict[str, Any] = {"answers": None, "patcher": None}


def native_memory() -> bool | None:
    """Whether torch_musa serves ``torch.accelerator``'s memory functions itself (None: not
    asked yet; torchada asks at the first call of one).

    Example::

        >>> torch.accelerator.memory_allocated()  # doctest: +SKIP
        0
        >>> native_memory()  # doctest: +SKIP
        True
    """
    return _native_memory["answers"]


def _ask_native() -> bool:
    """Once: does torch's own memory_stats answer for musa? If so, torch's functions go back."""
    if _native_memory["answers"] is None:
        try:
            _torch_memory["memory_stats"](torch.musa.current_device())
            answers = True
        except RuntimeError as e:  # "Allocator for musa is not a DeviceAllocator."
            logger.debug("torch.accelerator memory functions: torch_musa does not serve: %s", e)
            answers = False
        _native_memory["answers"] = answers
        patcher = _native_memory["patcher"]
        if answers and patcher is not None:
            for name, original in _torch_memory.items():
                patcher.set_attr(_acc, name, original)
                if hasattr(_acc_memory, name):
                    patcher.set_attr(_acc_memory, name, original)
            logger.info("torchada: torch_musa serves torch.accelerator's memory functions")
    return _native_memory["answers"]


def _native_first(name: str, ours: Any) -> Any:
    def serve(*args: Any, **kwargs: Any) -> Any:
        return (_torch_memory[name] if _ask_native() else ours)(*args, **kwargs)

    serve.__name__ = serve.__qualname__ = name
    return serve


# Names this module serves (the rest of torch.accelerator is torch's, working as it is).
SERVED = MEMORY + ("get_device_capability", "current_stream")


def install(patcher: Patcher) -> None:
    # Only what this torch has is served: torchada mirrors the installed API, it adds none.
    this = globals()
    _torch_memory.clear()
    _native_memory.update(answers=None, patcher=patcher)
    patcher.on_undo(lambda: _native_memory.update(answers=None, patcher=None))
    for name in ("memory_stats",) + tuple(n for n in SERVED if n != "memory_stats"):
        original = getattr(_acc, name, None)
        if original is None:
            continue
        fn = this[name]
        # empty_host_cache stays torchada's: torch's reaches a host-allocator hook that no
        # release provides (the process crashes), whatever the device allocator serves.
        native_able = name in MEMORY and name != "empty_host_cache"
        if native_able and "memory_stats" in _torch_memory or name == "memory_stats":
            _torch_memory[name] = original
            fn = _native_first(name, fn)
        fn.__doc__ = original.__doc__
        patcher.set_attr(_acc, name, fn)
        if hasattr(_acc_memory, name):
            patcher.set_attr(_acc_memory, name, fn)
    if hasattr(_acc, "Graph"):
        patcher.set_attr(_acc, "Graph", _graph_class())
    # torch.accelerator's modules each imported torch's _get_device_index by name.
    for module in (_acc, _acc_memory, _utils):
        if module is not None and hasattr(module, "_get_device_index"):
            patcher.set_attr(module, "_get_device_index", _get_device_index)
