"""Fills for private ``torch._C`` CUDA bindings that torch_musa has no binding for
(tables/torch_c.json). Each takes the arguments torch's binding takes and answers for MUSA."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from . import cuda as _cuda

# torch.backends.cudnn keeps these through torch._C; muDNN has no counterpart to tune.
_kept: Dict[str, Any] = {"cudnn_benchmark_limit": 10}


def _stream_triple(stream: Any) -> Tuple[int, int, int]:
    return (stream.stream_id, stream.device_index, stream.device_type)


def get_default_stream(device_index: int) -> Tuple[int, int, int]:
    return _stream_triple(torch.musa.default_stream(device_index))


def get_current_raw_stream(device_index: int) -> int:
    return torch.musa.current_stream(device_index).musa_stream


def get_stream_from_external(data_ptr: int, device_index: int) -> Tuple[int, int, int]:
    return _stream_triple(torch.musa.ExternalStream(data_ptr, device_index))


def has_primary_context(device_index: int) -> bool:
    if not 0 <= int(device_index) < torch.musa.device_count():
        raise RuntimeError(f"hasPrimaryContext: invalid device index {device_index}")
    return bool(torch.musa.is_initialized())


def get_arch_flags() -> Optional[str]:
    arches = torch.musa.get_arch_list()
    return " ".join(f"mp_{a}" for a in arches) if arches else None


def reset_blas_workspace_size() -> None:
    return None


get_sync_debug_mode = _cuda.get_sync_debug_mode
set_sync_debug_mode = _cuda.set_sync_debug_mode


def get_cudnn_benchmark_limit() -> int:
    return _kept["cudnn_benchmark_limit"]


def set_cudnn_benchmark_limit(limit: int) -> None:
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise TypeError(f"benchmark_limit must be a non-negative int, not {limit!r}")
    _kept["cudnn_benchmark_limit"] = limit


def get_conv_benchmark_empty_cache() -> bool:
    return True


def get_memory_fraction(device_index: int) -> float:
    return _cuda.get_per_process_memory_fraction(device_index)


def raw_alloc(size: int, stream: Any = None) -> int:
    return _cuda.caching_allocator_alloc(size, None, stream)


def raw_delete(ptr: int) -> None:
    _cuda.caching_allocator_delete(ptr)


def host_memory_stats() -> dict:
    return {}


def reset_host_memory_stats() -> None:
    return None


def host_empty_cache() -> None:
    return None


def nccl_version_suffix() -> bytes:
    return b""


def _check_out(tensor: torch.Tensor, out: Sequence[torch.Tensor], what: str) -> None:
    if not out:
        raise RuntimeError(f"{what}: expected at least one output tensor")
    for i, t in enumerate(out):
        if t.dtype != tensor.dtype:
            raise RuntimeError(
                f"{what}: output tensor {i} has dtype {t.dtype}, expected {tensor.dtype}"
            )


def broadcast_out(tensor: torch.Tensor, out_tensors: Sequence[torch.Tensor]) -> List[torch.Tensor]:
    _check_out(tensor, out_tensors, "broadcast_out")
    for i, out in enumerate(out_tensors):
        if out.shape != tensor.shape:
            raise RuntimeError(
                f"broadcast_out: output tensor {i} has shape {tuple(out.shape)}, expected "
                f"{tuple(tensor.shape)} (the input's)"
            )
        out.copy_(tensor)
    return list(out_tensors)


def scatter_out(
    tensor: torch.Tensor,
    out_tensors: Sequence[torch.Tensor],
    dim: int = 0,
    streams: Optional[Sequence[Any]] = None,
) -> List[torch.Tensor]:
    _check_out(tensor, out_tensors, "scatter_out")
    sizes = [t.size(dim) for t in out_tensors]
    if sum(sizes) != tensor.size(dim):
        raise RuntimeError(
            f"scatter_out: the outputs' sizes along dim {dim} add up to {sum(sizes)}, but the "
            f"input has {tensor.size(dim)}"
        )
    for out, chunk in zip(out_tensors, tensor.split(sizes, dim)):
        out.copy_(chunk)
    return list(out_tensors)


def gather_out(
    tensors: Sequence[torch.Tensor], out_tensor: torch.Tensor, dim: int = 0
) -> torch.Tensor:
    if not tensors:
        raise RuntimeError("gather_out: expected at least one tensor to gather")
    moved = [t.to(out_tensor.device) for t in tensors]
    torch.cat(moved, dim, out=out_tensor)
    return out_tensor
