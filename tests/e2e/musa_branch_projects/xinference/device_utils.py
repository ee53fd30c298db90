"""An accelerator registry that probes CUDA before MUSA on every call, with the MUSA probe in a
function of its own that imports torchada (Xinference's xinference/device_utils.py does so)."""

import os
from dataclasses import dataclass
from typing import Callable, Optional

import torch


@dataclass
class Accelerator:
    name: str
    probe: Callable[[], bool]
    visible_devices_variable: Optional[str]
    count: Callable[[], int]


def is_rocm_available() -> bool:
    return torch.cuda.is_available() and torch.version.hip is not None


def is_cuda_available() -> bool:
    try:
        return torch.cuda.is_available()
    except ImportError:
        return False


def is_musa_available() -> bool:
    try:
        import torch_musa  # noqa: F401
        import torchada  # noqa: F401
    except ImportError:
        return False
    return torch.musa.is_available()


def get_nvidia_gpu_info() -> dict:
    if not torch.cuda.is_available():
        return {}
    count = torch.cuda.device_count()
    return {f"gpu-{i}": {"name": f"CUDA GPU {i}", "total": 1} for i in range(count)}


def _cuda_count() -> int:
    return torch.cuda.device_count()


def _musa_count() -> int:
    count = torch.musa.device_count()
    visible = os.environ.get("MUSA_VISIBLE_DEVICES")
    return count if visible is None else min(count, len([v for v in visible.split(",") if v]))


# In the order of detection: CUDA before MUSA.
REGISTRY = [
    Accelerator("rocm", is_rocm_available, "HIP_VISIBLE_DEVICES", lambda: _cuda_count()),
    Accelerator("cuda", is_cuda_available, "CUDA_VISIBLE_DEVICES", lambda: _cuda_count()),
    Accelerator("musa", is_musa_available, "MUSA_VISIBLE_DEVICES", _musa_count),
]


def _find() -> Optional[Accelerator]:
    for accelerator in REGISTRY:
        if accelerator.probe():
            return accelerator
    return None


def get_available_device() -> str:
    found = _find()
    return "cpu" if found is None else found.name


def get_available_device_env_name() -> Optional[str]:
    found = _find()
    return None if found is None else found.visible_devices_variable


def gpu_count() -> int:
    found = _find()
    return 0 if found is None else found.count()


def get_gpu_info() -> dict:
    found = _find()
    return get_nvidia_gpu_info() if found is not None and found.name == "cuda" else {}
