"""Which platform this process runs on. Cached; no device is probed to answer."""

from __future__ import annotations

import enum
import functools
import importlib.util
import logging
import os
import sys
from typing import Any, Optional

from .env import choice

logger = logging.getLogger("torchada")


class Platform(str, enum.Enum):
    """The platforms torchada tells apart: what :func:`detect_platform` returns.

    A ``str`` enum: each member equals its value, the name ``TORCHADA_PLATFORM`` takes.

    Example::

        >>> import torchada
        >>> torchada.Platform.MUSA == "musa"
        True
        >>> torchada.Platform("cpu")
        <Platform.CPU: 'cpu'>
    """

    MUSA = "musa"
    CUDA = "cuda"
    CPU = "cpu"


def _torch_musa_present() -> bool:
    # Installed (the real package, or the simulator installed as one), loaded, or asked to be
    # simulated: which of these it is makes no difference to the platform.
    if "torch_musa" in sys.modules:
        return True
    from .. import _simulator

    if _simulator.requested():
        return True
    try:
        return importlib.util.find_spec("torch_musa") is not None
    except (ImportError, ValueError):
        return False


def _forced_platform() -> Optional[Platform]:
    """``TORCHADA_PLATFORM``'s platform, None when unset; another value raises ValueError."""
    forced = choice("TORCHADA_PLATFORM", normalise=lambda v: v.strip().lower())
    return Platform(forced) if forced else None


@functools.lru_cache(maxsize=1)
def detect_platform() -> Platform:
    """MUSA if torch_musa is loaded or importable (or simulated), CUDA for a CUDA build of torch,
    else CPU. ``TORCHADA_PLATFORM=musa|cuda|cpu`` overrides; other values are an error.

    The answer is cached for the process (``detect_platform.cache_clear()`` forgets it). No device
    is probed; without torch_musa, torch is imported (if it is not yet) to read
    ``torch.version.cuda``.

    Raises ValueError when ``TORCHADA_PLATFORM`` holds another value.

    Example::

        >>> import torchada
        >>> torchada.detect_platform()  # a machine with torch_musa  # doctest: +SKIP
        <Platform.MUSA: 'musa'>
        >>> torchada.detect_platform() in list(torchada.Platform)
        True
    """
    forced = _forced_platform()
    if forced is not None:
        return forced
    if _torch_musa_present():
        return Platform.MUSA
    torch = sys.modules.get("torch")
    version_cuda = getattr(getattr(torch, "version", None), "cuda", None) if torch else None
    if torch is None and importlib.util.find_spec("torch") is not None:
        import torch as _torch

        version_cuda = _torch.version.cuda
    return Platform.CUDA if version_cuda else Platform.CPU


def is_musa_platform() -> bool:
    """Whether :func:`detect_platform` answers ``Platform.MUSA``.

    Raises ValueError as :func:`detect_platform` does, for a bad ``TORCHADA_PLATFORM``.

    Example::

        >>> import torchada
        >>> torchada.is_musa_platform()  # with torch_musa (or the simulator)  # doctest: +SKIP
        True
        >>> torchada.is_musa_platform() == (torchada.detect_platform() == "musa")
        True
    """
    if detect_platform.cache_info().currsize:
        return detect_platform() is Platform.MUSA
    # The same answer without importing torch (detect_platform needs it only to tell CUDA from
    # CPU): `python -m torchada --help` and an early `import torchada` stay cheap off MUSA.
    forced = _forced_platform()
    return forced is Platform.MUSA if forced is not None else _torch_musa_present()


def is_cuda_platform() -> bool:
    """Whether :func:`detect_platform` answers ``Platform.CUDA``.

    Raises ValueError as :func:`detect_platform` does, for a bad ``TORCHADA_PLATFORM``.

    Example::

        >>> import torchada
        >>> torchada.is_cuda_platform()  # a CUDA build of torch  # doctest: +SKIP
        True
        >>> torchada.is_cuda_platform() == (torchada.detect_platform() == "cuda")
        True
    """
    return detect_platform() is Platform.CUDA


def is_cpu_platform() -> bool:
    """Whether :func:`detect_platform` answers ``Platform.CPU``.

    Raises ValueError as :func:`detect_platform` does, for a bad ``TORCHADA_PLATFORM``.

    Example::

        >>> import torchada
        >>> torchada.is_cpu_platform()  # a CPU-only torch  # doctest: +SKIP
        True
        >>> torchada.is_cpu_platform() == (torchada.detect_platform() == "cpu")
        True
    """
    return detect_platform() is Platform.CPU


def is_gpu_device(device: Any) -> bool:
    """True for a CUDA or MUSA device given as a torch.device, a string, or anything with
    ``.device`` (a tensor, a module parameter). Use it where code checks ``device.type == "cuda"``:
    on MUSA, tensors made with ``device="cuda"`` report ``device.type == "musa"``. Anything else
    (including ``None``) is False. ``is_cuda_like_device`` is the same function.

    Example::

        >>> import torch, torchada
        >>> torchada.is_gpu_device("cuda:0"), torchada.is_gpu_device("musa")
        (True, True)
        >>> torchada.is_gpu_device(torch.device("cpu")), torchada.is_gpu_device(torch.zeros(1))
        (False, False)
        >>> torchada.is_cuda_like_device(torch.ones(1, device="cuda"))  # doctest: +SKIP
        True
    """
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
    """CUDA_HOME as CUDA-written build scripts expect it: MUSA_HOME on MUSA, torch's on CUDA.

    On MUSA: ``$MUSA_HOME``, else ``$MUSA_PATH``, else ``/usr/local/musa`` or ``/opt/musa`` when
    that directory exists, else None. On CUDA: ``torch.utils.cpp_extension.CUDA_HOME``. On CPU:
    None. ``torchada.CUDA_HOME`` is this value, computed on first access.

    Example::

        >>> import torchada
        >>> torchada.cuda_home()  # on MUSA, with the SDK in /usr/local/musa  # doctest: +SKIP
        '/usr/local/musa'
    """
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
