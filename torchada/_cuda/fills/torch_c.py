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


def _on_device(t: torch.Tensor) -> bool:
    return t.device.type == torch._C._get_privateuse1_backend_name()


def _shape(t: torch.Tensor) -> str:
    return str(list(t.shape))


def _require_on_device(t: torch.Tensor, role: str, i: int) -> None:
    if not _on_device(t):
        raise RuntimeError(
            f"Expected all {role} tensors to be CUDA tensors, but {role} tensor at index {i} "
            f"has device '{t.device}'"
        )


# torch.cuda.comm's out= forms, with the checks and words of torch's own (torch/csrc/cuda/comm.cpp):
# a program calling torch.cuda.comm reads CUDA's messages.
def broadcast_out(tensor: torch.Tensor, out_tensors: Sequence[torch.Tensor]) -> List[torch.Tensor]:
    for i, out in enumerate(out_tensors):
        _require_on_device(out, "output", i)
        if out.shape != tensor.shape:
            raise RuntimeError(
                "Expected all output tensors to have same shape as the source tensor "
                f"{_shape(tensor)}, but output tensor at index {i} has shape {_shape(out)}"
            )
    for out in out_tensors:
        out.copy_(tensor)
    return list(out_tensors)


def scatter_out(
    tensor: torch.Tensor,
    out_tensors: Sequence[torch.Tensor],
    dim: int = 0,
    streams: Optional[Sequence[Any]] = None,
) -> List[torch.Tensor]:
    if not out_tensors:
        raise RuntimeError("Expected at least one output tensor to scatter to")
    dim = dim % max(tensor.dim(), 1)
    total = 0
    for i, out in enumerate(out_tensors):
        _require_on_device(out, "output", i)
        expected = list(tensor.shape)
        expected[dim] = out.size(dim) if out.dim() == tensor.dim() else expected[dim]
        if list(out.shape) != expected:
            raise RuntimeError(
                f"Output tensor at index {i} has incorrect shape: {_shape(out)}. Expected same "
                f"shape except for scatter dim {dim} as the source tensor: {_shape(tensor)}."
            )
        total += out.size(dim)
    if total != tensor.size(dim):
        raise RuntimeError(
            f"Total size for output tensors along scatter dim {dim} does not match that of the "
            f"input tensor {_shape(tensor)}."
        )
    for out, chunk in zip(out_tensors, tensor.split([o.size(dim) for o in out_tensors], dim)):
        out.copy_(chunk)
    return list(out_tensors)


def gather_out(
    tensors: Sequence[torch.Tensor], out_tensor: torch.Tensor, dim: int = 0
) -> torch.Tensor:
    if not tensors:
        raise RuntimeError("Expected at least one tensor to gather from")
    dim = dim % max(out_tensor.dim(), 1)
    total = 0
    for i, t in enumerate(tensors):
        _require_on_device(t, "input", i)
        if t.dim() != out_tensor.dim():
            raise RuntimeError(
                "Expected all input tensors to have the same number of dimensions as the output "
                f"tensor {_shape(out_tensor)}, but input tensor at index {i} has shape "
                f"{_shape(t)}"
            )
        expected = list(out_tensor.shape)
        expected[dim] = t.size(dim)
        if list(t.shape) != expected:
            raise RuntimeError(
                f"Input tensor at index {i} has invalid shape {_shape(t)}, but expected "
                f"{expected}"
            )
        total += t.size(dim)
    if total != out_tensor.size(dim):
        raise RuntimeError(
            f"Total size for input tensors along gather dim {dim} does not match that of the "
            f"output tensor {_shape(out_tensor)}."
        )
    torch.cat([t.to(out_tensor.device) for t in tensors], dim, out=out_tensor)
    return out_tensor
