"""Which platform this process runs on. Cached; no device is probed to answer."""

from __future__ import annotations

import enum
import functools
import importlib.util
import logging
import os
import sys
from typing import Any, Optional

from ._env import choice

logger = logging.getLogger("torchada")


class Platform(str, enum.Enum):
    MUSA = "musa"
    CUDA = "cuda"
    CPU = "cpu"


def _torch_musa_present() -> bool:
    # Installed (the real package, or the simulator installed as one), loaded, or asked to be
    # simulated: which of these it is makes no difference to the platform.
    if "torch_musa" in sys.modules:
        return True
    from . import _simulator

    if _simulator.requested():
        return True
    try:
        return importlib.util.find_spec("torch_musa") is not None
    except (ImportError, ValueError):
        return False


@functools.lru_cache(maxsize=1)
def detect_platform() -> Platform:
    """MUSA if torch_musa is loaded or importable (or simulated), CUDA for a CUDA build of torch,
    else CPU. ``TORCHADA_PLATFORM=musa|cuda|cpu`` overrides; other values are an error."""
    forced = choice("TORCHADA_PLATFORM", normalise=lambda v: v.strip().lower())
    if forced:
        return Platform(forced)
    if _torch_musa_present():
        return Platform.MUSA
    torch = sys.modules.get("torch")
    version_cuda = getattr(getattr(torch, "version", None), "cuda", None) if torch else None
    if torch is None and importlib.util.find_spec("torch") is not None:
        import torch as _torch

        version_cuda = _torch.version.cuda
    return Platform.CUDA if version_cuda else Platform.CPU


def is_musa_platform() -> bool:
    return detect_platform() is Platform.MUSA


def is_cuda_platform() -> bool:
    return detect_platform() is Platform.CUDA


def is_cpu_platform() -> bool:
    return detect_platform() is Platform.CPU


def is_gpu_device(device: Any) -> bool:
    """True for a CUDA or MUSA device given as a torch.device, a string, or anything with
    ``.device`` (a tensor, a module parameter). Use it where code checks ``device.type == "cuda"``:
    on MUSA, tensors made with ``device="cuda"`` report ``device.type == "musa"``."""
    device = getattr(device, "device", device)
    dev_type: Optional[str] = getattr(device, "type", None)
    if dev_type is None and isinstance(device, str):
        dev_type = device.split(":", 1)[0]
    return dev_type in ("cuda", "musa")


def get_platform() -> Platform:
    """The platform this process runs on (the published torchada's name for
    :func:`detect_platform`).

    Example::

        >>> import torchada
        >>> torchada.get_platform() in (torchada.Platform.MUSA, torchada.Platform.CUDA,
        ...                             torchada.Platform.CPU)
        True
    """
    return detect_platform()


def get_backend() -> Any:
    """The device module of this platform: ``torch.musa`` on MUSA, ``torch.cuda`` on CUDA.

    Raises RuntimeError on a CPU-only platform, where there is no GPU module to return.

    Example::

        >>> import torchada
        >>> torchada.get_backend()  # on MUSA  # doctest: +SKIP
        <module 'torch_musa' ...>
    """
    platform = detect_platform()
    if platform is Platform.CPU:
        raise RuntimeError(
            "No GPU platform available: torchada.get_backend() needs torch_musa (MUSA) or a CUDA "
            "build of torch; check torchada.get_platform() first"
        )
    import torch

    if platform is Platform.MUSA:
        import torch_musa  # noqa: F401  (torch.musa exists once torch_musa is imported)

        return torch.musa
    return torch.cuda


is_cuda_like_device = is_gpu_device


def cuda_home() -> Optional[str]:
    """CUDA_HOME as CUDA-written build scripts expect it: MUSA_HOME on MUSA, torch's on CUDA."""
    if is_musa_platform():
        for var in ("MUSA_HOME", "MUSA_PATH"):
            if os.environ.get(var):
                return os.environ[var]
        for candidate in ("/usr/local/musa", "/opt/musa"):
            if os.path.isdir(candidate):
                return candidate
        return None
    if is_cuda_platform():
        from torch.utils.cpp_extension import CUDA_HOME

        return CUDA_HOME
    return None
