"""The simulated MUSA SDK's native libraries: where they are, and loading them.

The simulator ships small C stand-ins for the SDK's shared libraries (sources under
``csrc/simulator/stubs``), built on first use and cached like the simulator's C++ extension:

- ``libmusart.so`` (``musa*``): runtime; host-backed memory, devices, streams, events, errors
- ``libmusa.so`` (``mu*``): driver; init, device queries, memory
- ``libmccl.so`` (``mccl*``): collectives between the ranks of one process
- ``libmublas.so`` (``mublas*``): handles and a correct column-major SGEMM
- ``libmurand.so`` (``murand*``): seeded uniform and normal generators

and the driver's management library, which a real machine gets from the driver, not the SDK:

- ``libmtml.so.2`` (``mtml*``): MTML, the devices' telemetry (docs/mtml_simulator.md); memory used
  per device is the simulator's allocator's

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

__all__ = [
    "LIBRARIES",
    "driver_library_dir",
    "library_dir",
    "library_paths",
    "load",
    "load_driver_libraries",
    "with_library_dir",
]

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


def driver_library_dir() -> Path:
    """The directory of the simulated driver's ``libmtml.so.2`` (for ``LD_LIBRARY_PATH`` of a child
    process that runs without torchada), building it on first use.

    Example::

        >>> from torchada._simulator import sdk
        >>> (sdk.driver_library_dir() / "libmtml.so.2").exists()  # doctest: +SKIP
        True
    """
    return native.mtml_library_path().parent


_driver_handles: "dict[str, ctypes.CDLL | None]" = {}  # soname: handle (None: unavailable)


def load_driver_libraries() -> None:
    """Map the simulated driver's libraries into this process, as the simulated torch_musa does
    when it is imported: a driver installs ``libmtml.so.2`` where the dynamic loader looks, so
    ``ctypes.CDLL("libmtml.so.2")`` (pymtml's way) finds it; here the loader finds the mapped
    library by its soname. Loaded once; a library that cannot be built is logged and left out
    (then MTML is missing, as on a machine without the driver's management library), and so is
    one turned off with ``TORCHADA_SIM_MTML=0``.

    Example::

        >>> from torchada._simulator import sdk
        >>> sdk.load_driver_libraries()  # doctest: +SKIP
        >>> import ctypes; ctypes.CDLL("libmtml.so.2").mtmlLibraryInit  # doctest: +SKIP
        <_FuncPtr object at 0x...>
    """
    if native.MTML_SONAME in _driver_handles:
        return
    _driver_handles[native.MTML_SONAME] = None  # tried: warned once at most
    from .._core.env import flag

    if not flag("TORCHADA_SIM_MTML", default=True):  # a driver installed without MTML
        logger.debug("the simulated driver has no %s (TORCHADA_SIM_MTML=0)", native.MTML_SONAME)
        return
    try:
        path = native.mtml_library_path()
        _driver_handles[native.MTML_SONAME] = ctypes.CDLL(str(path))
    except Exception as err:  # a missing compiler must not stop torch_musa's import
        logger.warning("the simulated libmtml.so.2 is unavailable: %s", err)
        return
    logger.debug("loaded simulated %s from %s", native.MTML_SONAME, path)
