"""The names of ``torchada.utils.cpp_extension``: ``torch.utils.cpp_extension`` as torchada shows
it, read from the same table as the proxy torchada installs on MUSA
(``torchada/tables/torch_cpp_extension.json``), whether or not torchada is on.

On MUSA a name resolves as the proxy resolves it (torchada's CUDA-to-MUSA build, torch_musa's
``MUSA_HOME`` for ``CUDA_HOME``, torch's own for the rest); elsewhere it is torch's own object,
so it has the installed torch's signature.
"""

from __future__ import annotations

import importlib
from typing import Any


def resolve(module_name: str, name: str) -> Any:
    """``module_name.name`` as torchada shows it on this platform."""
    from .._core.platform import is_musa_platform
    from .._cuda.redirect import Redirector, load_table, original_module

    original = original_module(module_name)
    if not is_musa_platform():
        try:
            return getattr(original, name)
        except AttributeError:
            raise AttributeError(
                f"module 'torchada.utils.cpp_extension' has no attribute {name!r} "
                f"({module_name} of torch {_torch_version()} has none)"
            ) from None
    from .._activation import preload

    spec = load_table()[module_name]
    for module in preload(spec):
        importlib.import_module(module)
    redirector = Redirector({module_name: original}, {module_name: spec}, notes=False)
    return redirector.resolve(module_name, name)


def _torch_version() -> str:
    import torch

    return torch.__version__
