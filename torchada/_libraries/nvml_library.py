"""torchada's ``libnvidia-ml.so`` on MUSA: NVML's functions written over MTML's C API
(``csrc/nvml_shim``), built on first use and told where MTML and the MUSA driver are. ctypes'
translation (:mod:`torchada._libraries.ctypes_bindings`) loads it for ``libnvidia-ml.so.1`` and
passes itself in, so that neither module imports the other in a cycle."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from types import ModuleType
from typing import Dict, Optional

logger = logging.getLogger("torchada")

_built: Dict[str, Path] = {}  # CUDA library name -> its built and bound library


def _source(cuda_file: str) -> Path:
    from .._native.build import csrc_dir

    return csrc_dir() / "nvml_shim" / f"{cuda_file}.c"


def _mtml_path(_ctypes: ModuleType) -> Optional[str]:
    """The MTML library ctypes would load (``libmtml.so.2``, else ``libmtml.so``): beside the MUSA
    libraries where it is there, else the first the dynamic loader finds; None where neither is."""
    directory = _ctypes.musa_library_dir()
    for name in ("libmtml.so.2", "libmtml.so"):
        if directory and os.path.exists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    for name in ("libmtml.so.2", "libmtml.so"):
        try:
            return str(_ctypes.open_untranslated(name)._name)
        except OSError:
            continue
    return None


def library_path(ctypes_bindings: ModuleType, cuda_file: str = "libnvidia-ml") -> Path:
    """Path of torchada's ``libnvidia-ml.so`` (NVML over MTML), built on first use and told where
    MTML and the MUSA driver are.

    Example::

        >>> from torchada._libraries import ctypes_bindings
        >>> library_path(ctypes_bindings, "libnvidia-ml").name  # doctest: +SKIP
        'libnvidia-ml.so'
    """
    if cuda_file in _built:
        return _built[cuda_file]
    from .._native.build import build_shared_libraries

    _ctypes = ctypes_bindings  # passed in: it imports this module

    source = _source(cuda_file)
    path = build_shared_libraries("torchada_nvml_shim", [source])[cuda_file]
    lib = _ctypes.open_untranslated(str(path))
    mtml = _mtml_path(_ctypes)
    driver = _ctypes.musa_library_path("libcuda")
    if mtml is None:  # said at info level: nvmlInit's NVMLError_LibraryNotFound tells the program
        logger.info(
            "torchada: no MTML library (libmtml.so.2 or libmtml.so) was found for %s: NVML calls "
            "answer NVML_ERROR_LIBRARY_NOT_FOUND; install the MUSA driver's management library",
            cuda_file,
        )
    lib.torchada_nvml_bind(mtml.encode() if mtml else None, str(driver).encode())
    _built[cuda_file] = path
    return path
