"""``torch.utils.cpp_extension`` under torchada's own name, for build scripts written against the
published adapter (``from torchada.utils.cpp_extension import CUDAExtension, load, ...``).

Each name is what ``torch.utils.cpp_extension`` shows through torchada, from the one table that
describes it (``torchada/tables/torch_cpp_extension.json``): on MUSA, torchada's CUDA-to-MUSA
build (``torchada._extensions``); elsewhere, torch's own object, with the installed torch's
signature. Names resolve on first use, so importing this module imports no torch_musa, installs
nothing and ports nothing. ``stable_compat_include_dir()`` and ``stable_compat_box_header()``
locate the stable-ABI kit (docs/extensions.md, "Stable-ABI extensions").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._extensions.stable_kit import box_header as _box_header
from .._extensions.stable_kit import include_dir as _include_dir

__all__ = [
    "BuildExtension",
    "CUDA_HOME",
    "CUDAExtension",
    "CppExtension",
    "include_paths",
    "library_paths",
    "load",
    "load_inline",
    "stable_compat_box_header",
    "stable_compat_include_dir",
]

if TYPE_CHECKING:  # resolved on first use by __getattr__, per platform
    from torch.utils.cpp_extension import (
        CUDA_HOME,
        BuildExtension,
        CppExtension,
        CUDAExtension,
        include_paths,
        library_paths,
        load,
        load_inline,
    )

_MODULE = "torch.utils.cpp_extension"


def stable_compat_include_dir() -> str:
    """The stable-ABI kit's include directory: CUDA-named headers (``cuda_runtime.h``,
    ``cuda_fp16.h``, ``cuda_bf16.h``, ``cuda_fp8.h``, ``cublas_v2.h``) that include their MUSA
    counterparts, and the stable-ABI headers older torches lack. A header the installed torch has
    is torch's own, wherever this directory sits on the include path.

    Example::

        >>> import os
        >>> from torchada.utils.cpp_extension import stable_compat_include_dir
        >>> os.path.isfile(os.path.join(stable_compat_include_dir(), "cuda_runtime.h"))
        True
    """
    return _include_dir()


def stable_compat_box_header() -> str:
    """The header to force-include (``-include <path>``) in a stable-ABI extension's sources: it
    gives ``TORCH_BOX`` to torches whose ``torch/csrc/stable/library.h`` lacks it, and is torch's
    own ``library.h`` on the others.

    Example::

        >>> import os
        >>> from torchada.utils.cpp_extension import stable_compat_box_header
        >>> os.path.basename(stable_compat_box_header())
        'torchada_stable_box.h'
    """
    return _box_header()


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._extensions.public_names import resolve

    value = resolve(_MODULE, name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
