"""``CUDA_HOME`` in torch's own ``torch.utils.cpp_extension`` module object.

Through torchada, ``torch.utils.cpp_extension.CUDA_HOME`` is torch_musa's ``MUSA_HOME``. A build
script that imported ``torch.utils.cpp_extension`` before torchada turned on holds torch's module
object itself, whose ``CUDA_HOME`` (None on a machine without CUDA) its functions read as a global:
``include_paths(device_type="cuda")`` then raised OSError. The module's ``CUDA_HOME`` and
``CUDNN_HOME`` therefore take the MUSA values too, for as long as torchada is on.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._core.patcher import Patcher


def install(patcher: Patcher) -> None:
    original = sys.modules.get("torch.utils.cpp_extension")
    original = vars(original).get("__torchada_original__", original) if original else None
    musa_extension = sys.modules.get("torch_musa.utils.musa_extension")
    if original is None or musa_extension is None:
        return
    for name, musa_name in (("CUDA_HOME", "MUSA_HOME"), ("CUDNN_HOME", "MUDNN_HOME")):
        value = getattr(musa_extension, musa_name, None)
        if value is not None:
            patcher.set_attr(original, name, value)
