"""CUDA library function names and their MUSA counterparts, for code that builds names itself.

The prefixes come from the one library table (tables/libraries.json, whose "ctypes" rows also
drive the ctypes translation): a name that starts with the CUDA prefix gets the MUSA one, any
other name is returned unchanged, as in the published torchada.
"""

from __future__ import annotations

import functools
from typing import Dict


@functools.lru_cache(maxsize=1)
def _prefixes() -> Dict[str, str]:
    from .ctypes_bindings import _rules

    return {cuda: musa for _, lib in _rules() for cuda, musa in lib.symbols}


def _rewrite(name: str, prefix: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"expected a function name as str, got {type(name).__name__}: {name!r}")
    musa = _prefixes()[prefix]
    return musa + name[len(prefix) :] if name.startswith(prefix) else name


def cuda_to_musa_name(name: str) -> str:
    """The MUSA runtime name of a CUDA runtime function name; other names unchanged.

    Raises TypeError when ``name`` is not a str.

    Example::

        >>> cuda_to_musa_name("cudaMalloc")
        'musaMalloc'
        >>> cuda_to_musa_name("malloc")
        'malloc'
    """
    return _rewrite(name, "cuda")


def nccl_to_mccl_name(name: str) -> str:
    """The MCCL name of an NCCL function name; other names unchanged.

    Raises TypeError when ``name`` is not a str.

    Example::

        >>> nccl_to_mccl_name("ncclAllReduce")
        'mcclAllReduce'
    """
    return _rewrite(name, "nccl")


def cublas_to_mublas_name(name: str) -> str:
    """The muBLAS name of a cuBLAS function name; other names unchanged.

    Raises TypeError when ``name`` is not a str.

    Example::

        >>> cublas_to_mublas_name("cublasCreate_v2")
        'mublasCreate_v2'
    """
    return _rewrite(name, "cublas")


def curand_to_murand_name(name: str) -> str:
    """The muRAND name of a cuRAND function name; other names unchanged.

    Raises TypeError when ``name`` is not a str.

    Example::

        >>> curand_to_murand_name("curandCreateGenerator")
        'murandCreateGenerator'
    """
    return _rewrite(name, "curand")
