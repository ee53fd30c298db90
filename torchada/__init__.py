"""torchada: run CUDA-written PyTorch programs unchanged on Moore Threads GPUs (torch_musa).

``import torchada`` at the top of a program installs the redirects when the program runs on MUSA
(and does nothing on CUDA or CPU machines); ``python -m torchada.run script.py`` does the same with
no code change. ``torchada.disable()`` undoes everything; ``TORCHADA_DISABLE=1`` keeps it off.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._activation import disable, enable, is_enabled, is_patched
    from ._core.platform import (
        Platform,
        detect_platform,
        get_backend,
        get_platform,
        is_cpu_platform,
        is_cuda_like_device,
        is_cuda_platform,
        is_gpu_device,
        is_musa_platform,
    )
    from ._distributed.c10d import get_original_init_process_group
    from ._libraries.names import (
        cublas_to_mublas_name,
        cuda_to_musa_name,
        curand_to_murand_name,
        nccl_to_mccl_name,
    )

# Public names and the submodule each lives in. Resolved on first use: torch imports this package
# (its `torch.backends` entry point lives here) in every `import torch`, which must stay cheap.
_LAZY = {
    "disable": "_activation",
    "enable": "_activation",
    "is_enabled": "_activation",
    "is_patched": "_activation",
    "Platform": "_core.platform",
    "cuda_home": "_core.platform",
    "detect_platform": "_core.platform",
    "get_backend": "_core.platform",
    "get_platform": "_core.platform",
    "is_cpu_platform": "_core.platform",
    "is_cuda_like_device": "_core.platform",
    "is_cuda_platform": "_core.platform",
    "is_gpu_device": "_core.platform",
    "is_musa_platform": "_core.platform",
    "cuda_to_musa_name": "_libraries.names",
    "nccl_to_mccl_name": "_libraries.names",
    "cublas_to_mublas_name": "_libraries.names",
    "curand_to_murand_name": "_libraries.names",
    "get_original_init_process_group": "_distributed.c10d",
}

__version__ = "0.1.0"

__all__ = [
    "CUDA_HOME",
    "Platform",
    "__version__",
    "cublas_to_mublas_name",
    "cuda_home",
    "cuda_to_musa_name",
    "curand_to_murand_name",
    "detect_platform",
    "disable",
    "enable",
    "get_backend",
    "get_original_init_process_group",
    "get_platform",
    "get_version",
    "is_cpu_platform",
    "is_cuda_like_device",
    "is_cuda_platform",
    "is_enabled",
    "is_gpu_device",
    "is_musa_platform",
    "is_patched",
    "nccl_to_mccl_name",
]


def get_version() -> str:
    """torchada's version.

    Example::

        >>> import torchada
        >>> torchada.get_version() == torchada.__version__
        True
    """
    return __version__


def __getattr__(name: str) -> Any:
    home = name == "CUDA_HOME"  # resolving it may import torch's cpp_extension on CUDA machines
    if home or name in _LAZY:
        module = importlib.import_module(f"{__name__}.{_LAZY['cuda_home' if home else name]}")
        value = module.cuda_home() if home else getattr(module, name)
        globals()[name] = value
        return value
    # Submodules loaded before this package object existed (see _autoload) are still ours.
    module = sys.modules.get(f"{__name__}.{name}")
    if module is not None:
        globals()[name] = module
        return module
    raise AttributeError(f"module 'torchada' has no attribute {name!r}")


def _imported_by_torch_autoload() -> bool:
    # torch runs the `torch.backends` entry points (ours, torch_musa's) while `import torch` runs;
    # an import of this package from there must not activate anything by itself (our entry point
    # decides from the environment).
    frame = sys._getframe(1)
    for _ in range(32):
        if frame is None:
            return False
        if frame.f_code.co_name == "_import_device_backends":
            return True
        frame = frame.f_back
    return False


def _forget_autoloaded_package() -> None:
    # Forget the package object that an entry point brought in (its submodules stay loaded), so
    # that the program's own later `import torchada` runs this file again and turns torchada on.
    # Done once `import torch` has finished: earlier, another entry point could still be importing
    # one of our submodules (the simulated torch_musa reads its board tables from here).
    if sys.modules.get(__name__) is _this_package:
        del sys.modules[__name__]


_this_package = sys.modules[__name__]
if _imported_by_torch_autoload():
    from torchada_hooks.completion import when_imported

    when_imported("torch", _forget_autoloaded_package)
else:
    importlib.import_module(f"{__name__}._activation").enable()
