"""torch_musa.core: the device runtime's Python side."""

import os.path as _osp

import torch_musa  # noqa: F401

# Aliased, as in torch_musa: the plain name is the submodule's (torch_musa.core._lazy_init).
from ._lazy_init import _lazy_init as _lazy_init_musa

__all__ = ["cmake_prefix_path", "current_blas_handle", "current_blaslt_handle"]

# Where torch_musa installs its CMake package (TorchMusaConfig.cmake). The simulator ships none:
# that package needs the MUSA toolkit, so find_package(TorchMusa) reports it missing here.
cmake_prefix_path = _osp.join(_osp.dirname(_osp.dirname(__file__)), "share", "cmake")


def current_blas_handle():
    _lazy_init_musa()
    return 0x6D75626C  # an opaque, stable non-zero handle, as mublasHandle_t would be


def current_blaslt_handle():
    _lazy_init_musa()
    return 0x6D756C74
