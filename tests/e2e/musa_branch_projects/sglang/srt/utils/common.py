"""Device helpers that ask CUDA first and MUSA later, in the same function (SGLang's
python/sglang/srt/utils/common.py does so)."""

from functools import lru_cache
from typing import Optional

import torch


@lru_cache(maxsize=1)
def is_musa() -> bool:
    try:
        import torchada  # noqa: F401
    except ImportError:
        return False
    return getattr(torch.version, "musa", None) is not None


@lru_cache(maxsize=1)
def is_cuda():
    return torch.cuda.is_available() and torch.version.cuda


@lru_cache(maxsize=8)
def get_device(device_id: Optional[int] = None) -> str:
    if hasattr(torch, "cuda") and torch.cuda.is_available():
        return "cuda" if device_id is None else f"cuda:{device_id}"
    if hasattr(torch, "xpu") and torch.xpu.is_available():
        return "xpu" if device_id is None else f"xpu:{device_id}"
    if is_musa():
        return "musa" if device_id is None else f"musa:{device_id}"
    raise RuntimeError("No accelerator is available.")


def get_device_sm() -> int:
    if torch.cuda.is_available() or is_musa():
        major, minor = torch.cuda.get_device_capability()
        return major * 10 + minor
    return 0


def get_device_memory_capacity(device: Optional[str] = None) -> Optional[float]:
    if is_cuda():
        return torch.cuda.mem_get_info()[1] // 1024 // 1024
    if device == "musa":
        return torch.musa.mem_get_info()[1] // 1024 // 1024
    return None  # not known yet, or no GPU
