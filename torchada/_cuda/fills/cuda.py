"""Fills for top-level ``torch.cuda`` names torch_musa lacks.

Later torch_musa releases have some of them (2.9.1.post1: ``get_stream_from_external``, the
caching-allocator and host-memory statistics; 2.11.0.post2: ``get_gencode_flags``,
``set/get_sync_debug_mode``). Where the installed ``torch.musa`` has the name, its own function
answers (:func:`_native`); the fill serves the releases without it.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from ..._core.warn import warn_once
from ..._devices import rule

_fraction: dict = {}
_sync_debug_mode = 0
_blocks: dict = {}


def _musa():
    return torch.musa


def _native(name: str) -> Any:
    """torch.musa's own ``name`` where this release has it, else None."""
    return getattr(_musa(), name, None)


def init() -> None:
    _musa()._lazy_init()


def has_half() -> bool:
    return True


def default_generators() -> tuple:
    # torch_musa creates them at initialisation; reading them means the device is wanted.
    _musa()._lazy_init()
    return _musa().default_generators


def get_gencode_flags() -> str:
    native = _native("get_gencode_flags")
    if native is not None:
        return native()
    return " ".join(f"--offload-arch=mp_{arch}" for arch in _musa().get_arch_list())


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    _musa().set_per_process_memory_fraction(fraction, device)
    _fraction[_musa().core._utils._get_musa_device_index(device, optional=True)] = fraction


def get_per_process_memory_fraction(device: Any = None) -> float:
    idx = _musa().core._utils._get_musa_device_index(device, optional=True)
    return _fraction.get(idx, 1.0)


def get_sync_debug_mode() -> int:
    native = _native("get_sync_debug_mode")
    return native() if native is not None else _sync_debug_mode


def set_sync_debug_mode(debug_mode: "int | str") -> None:
    global _sync_debug_mode
    native = _native("set_sync_debug_mode")
    if native is not None:
        return native(debug_mode)
    modes = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in modes:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`"
            )
        debug_mode = modes[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError("invalid value of debug_mode, expected one of 0, 1, 2")
    if debug_mode:
        warn_once(
            "sync_debug_mode",
            "torch.cuda.set_sync_debug_mode: MUSA has no synchronisation debug mode; "
            "synchronising calls are not reported",
        )
    _sync_debug_mode = 0


def get_stream_from_external(data_ptr: int, device: Any = None):
    native = _native("get_stream_from_external")
    if native is not None:
        return native(data_ptr, device)
    return _musa().ExternalStream(data_ptr, device)


def _allocation_stream(musa: Any, idx: int, stream: Any) -> Any:
    """The stream object an allocation for ``stream`` (torch.cuda's argument) is made on."""
    current = musa.current_stream(idx)
    if stream is None:
        return current
    if isinstance(stream, musa.Stream):
        return stream
    if not isinstance(stream, int):
        raise TypeError(
            "Invalid type for stream argument, must be `torch.cuda.Stream` or `int` representing "
            "a pointer to an existing stream"
        )
    # A raw handle: the allocator files blocks under the native stream, so one with that handle.
    return current if stream == current.musa_stream else musa.ExternalStream(stream, idx)


def caching_allocator_alloc(size: int, device: Any = None, stream: Any = None) -> int:
    native = _native("caching_allocator_alloc")
    if native is not None:
        return native(size, device, stream)
    # Emulated with a byte tensor kept alive until caching_allocator_delete. It comes from
    # torch_musa's caching allocator, so memory_allocated() and the memory stats count it, and
    # is made on the stream asked for: the allocator reuses a freed block on that stream only.
    musa = _musa()
    idx = musa.core._utils._get_musa_device_index(device, optional=True)
    on = _allocation_stream(musa, idx, stream)
    if int(size) == 0:
        return 0  # as CUDA's allocator answers a zero-byte request: no block, a null pointer
    with musa.device(idx), musa.stream(on):
        block = torch.empty(int(size), dtype=torch.uint8, device=rule.musa(idx))
    ptr = block.data_ptr()
    _blocks[ptr] = block
    return ptr


def caching_allocator_delete(mem_ptr: int) -> None:
    native = _native("caching_allocator_delete")
    if native is not None:
        return native(mem_ptr)
    if not mem_ptr:
        return  # the null pointer a zero-byte allocation gave: nothing to free, as on CUDA
    if _blocks.pop(mem_ptr, None) is None:
        raise RuntimeError(
            f"invalid device pointer: {mem_ptr:#x} (it was not allocated here, or freed already)"
        )


def host_memory_stats() -> dict:
    native = _native("host_memory_stats")
    return native() if native is not None else {}


def host_memory_stats_as_nested_dict() -> dict:
    native = _native("host_memory_stats_as_nested_dict")
    return native() if native is not None else {}


def reset_accumulated_host_memory_stats() -> None:
    native = _native("reset_accumulated_host_memory_stats")
    if native is not None:
        native()


def reset_peak_host_memory_stats() -> None:
    native = _native("reset_peak_host_memory_stats")
    if native is not None:
        native()


def is_available() -> bool:
    return bool(_musa().is_available())


def _get_device_index(device: Any, optional: bool = False, allow_cpu: bool = False) -> int:
    """torch.cuda._get_device_index for MUSA: "cuda" devices count as musa ones."""
    device = rule.musa_spec(device)
    return _musa().core._utils._get_musa_device_index(device, optional, allow_cpu)


def memory_cached(device: Any = None) -> int:
    return _musa().memory_reserved(device)


def max_memory_cached(device: Any = None) -> int:
    return _musa().max_memory_reserved(device)


def make_graphed_callables(
    callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None
):
    if pool is not None:
        warn_once(
            "graphed_pool",
            "torch.cuda.make_graphed_callables(pool=...): torch_musa shares no memory pool here; "
            "the pool argument is ignored",
        )
    return _musa().make_graphed_callables(
        callables,
        sample_args,
        num_warmup_iters=num_warmup_iters,
        allow_unused_input=allow_unused_input,
    )


def graph(cuda_graph=None, pool=None, stream=None, capture_error_mode: str = "global", **kwargs):
    """torch.cuda.graph: the graph argument is ``musa_graph`` on MUSA."""
    target = cuda_graph if cuda_graph is not None else kwargs.pop("musa_graph", None)
    if kwargs:
        raise TypeError(f"graph() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if target is None:
        raise TypeError("graph() missing required argument: 'cuda_graph'")
    return _musa().graph(target, pool=pool, stream=stream, capture_error_mode=capture_error_mode)


class _CudartView:
    """torch.cuda.cudart() on MUSA: the musart module under its CUDA names."""

    def __init__(self, musart: Any) -> None:
        self._musart = musart

    def __getattr__(self, name: str) -> Any:
        if name in ("cudaProfilerStart", "cudaProfilerStop"):
            raise AttributeError(
                f"torch.cuda.cudart().{name} is unsupported on MUSA: musart has no profiler "
                "start/stop; use torch.profiler.profile instead"
            )
        mapped = "musa" + name[4:] if name.startswith("cuda") else name
        try:
            value = getattr(self._musart, mapped)
        except AttributeError:
            raise AttributeError(
                f"torch.cuda.cudart() has no '{name}' on MUSA (looked for musart.{mapped})"
            ) from None
        setattr(self, name, value)
        return value

    def __dir__(self):
        return sorted({"cuda" + n[4:] for n in dir(self._musart) if n.startswith("musa")})


_cudart_view: Optional[_CudartView] = None


def cudart() -> _CudartView:
    global _cudart_view
    if _cudart_view is None:
        _cudart_view = _CudartView(_musa().musart())
    return _cudart_view


def _is_compiled() -> bool:
    # Libraries ask "was torch built with GPU support?" before touching torch.cuda; with torchada
    # on, torch runs with its MUSA backend.
    return True


def _device_count_nvml() -> int:
    # torch.cuda asks NVML for the count without initialising the device; MUSA has no NVML, and
    # torch_musa's count does not initialise the device either.
    return int(_musa().device_count())


def _jitted(name: str):
    def create(code_string: str, *args: Any, **kwargs: Any):
        from ..redirect import original_module

        # torch's own function object parses the code and checks the arguments; running it
        # reaches torch._C._cuda_jiterator_compile_and_launch_kernel, unsupported on MUSA.
        fn = getattr(original_module("torch.cuda.jiterator"), name)(code_string, *args, **kwargs)
        fn.is_cuda_available = is_available()
        return fn

    create.__name__ = create.__qualname__ = name
    create.__doc__ = (
        f"torch.cuda.jiterator.{name} on MUSA: defining the function succeeds (libraries do it "
        "at import), calling it raises UnsupportedCUDAAPIError (no NVRTC on MUSA)."
    )
    return create


jiterator_create_jit_fn = _jitted("_create_jit_fn")
jiterator_create_multi_output_jit_fn = _jitted("_create_multi_output_jit_fn")
