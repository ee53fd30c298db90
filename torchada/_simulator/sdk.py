"""The simulated MUSA SDK's native libraries: where they are, and loading them.

The simulator ships small C stand-ins for the SDK's shared libraries (sources under
``csrc/simulator/stubs``), built on first use and cached like the simulator's C++ extension:

- ``libmusart.so`` (``musa*``): runtime; host-backed memory, devices, streams, events, errors
- ``libmusa.so`` (``mu*``): driver; init, device queries, memory
- ``libmccl.so`` (``mccl*``): collectives between the ranks of one process
- ``libmublas.so`` (``mublas*``): handles and a correct column-major SGEMM
- ``libmurand.so`` (``murand*``): seeded uniform and normal generators

Each exports only its own prefix, never a ``cuda*``/``nccl*``/``cublas*``/``curand*``/``cu*``
name, so code that looks CUDA symbols up in MUSA libraries fails here as it would on a real
machine. Error codes, enum values and struct layouts are documented at the top of each source.

The libraries read the same environment as the Python simulator (``TORCHADA_SIM_DEVICES``,
``MUSA_VISIBLE_DEVICES``, ``TORCHADA_SIM_BOARD``), so both agree on the device count.

Use :func:`library_paths` for explicit paths, :func:`library_dir` for ``LD_LIBRARY_PATH`` (all five
share one directory, so ``dlopen("libmusart.so")`` finds them), or :func:`load` for a ctypes handle.
"""

from __future__ import annotations

import ctypes
import logging
import os
from pathlib import Path

from . import native

logger = logging.getLogger("torchada")

__all__ = ["LIBRARIES", "library_dir", "library_paths", "load", "with_library_dir"]

LIBRARIES = tuple(f"{stem}.so" for stem in native.STUB_LIBRARIES)


def library_paths() -> dict[str, Path]:
    """``{"libmusart.so": Path, ...}`` for all five libraries, building them on first use."""
    return native.stub_library_paths()


def library_dir() -> Path:
    """The directory that holds all five libraries (for ``LD_LIBRARY_PATH``)."""
    dirs = {path.parent for path in library_paths().values()}
    if len(dirs) != 1:  # one build directory is what makes LD_LIBRARY_PATH enough
        raise RuntimeError(f"the simulated MUSA libraries are split across {sorted(dirs)}")
    return dirs.pop()


def _normalise(name: str) -> str:
    stem = name.removesuffix(".so")
    stem = stem if stem.startswith("lib") else "lib" + stem
    if stem not in native.STUB_LIBRARIES:
        raise ValueError(
            f"{name!r} is not a simulated MUSA library; expected one of {', '.join(LIBRARIES)}"
        )
    return stem + ".so"


def load(name: str) -> ctypes.CDLL:
    """Load one library by name (``"musart"``, ``"libmusart"`` or ``"libmusart.so"``)."""
    path = library_paths()[_normalise(name)]
    logger.debug("loading simulated %s from %s", path.name, path)
    return ctypes.CDLL(str(path))


def with_library_dir(environ: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``environ`` (default: ``os.environ``) with :func:`library_dir` first on
    ``LD_LIBRARY_PATH``, for child processes that load the libraries by name."""
    env = dict(os.environ if environ is None else environ)
    old = env.get("LD_LIBRARY_PATH", "")
    env["LD_LIBRARY_PATH"] = str(library_dir()) + (os.pathsep + old if old else "")
    return env
