"""Builds (once, cached) and loads the simulator's native pieces."""

from __future__ import annotations

import shlex
from pathlib import Path
from types import ModuleType

from .._native.build import build_shared_libraries, csrc_dir, headers_digest, load_torch_extension

EXTENSION_NAME = "torchada_musa_sim"
STUB_LIBRARIES = ("libmusart", "libmusa", "libmccl", "libmublas", "libmurand")
# The driver's management library, built apart: it carries its soname (libmtml.so.2), as the
# library a Moore Threads driver installs does.
MTML_SONAME = "libmtml.so.2"


# The backend's translation units: the runtime and the operators need no Python, so only
# musa_sim.cpp, sim_mccl.cpp and sim_graph.cpp pay for pybind11's headers; ninja compiles them
# side by side.
EXTENSION_SOURCES = (
    "sim_runtime.cpp",
    "sim_kernels.cpp",
    "sim_mccl.cpp",
    "sim_graph.cpp",
    "musa_sim.cpp",
)


def load_extension() -> ModuleType:
    simulator = csrc_dir() / "simulator"
    # The backend shares its stream and event records with libmusart (stubs/sim_handles.h), and
    # its files share sim_internal.h.
    stubs = simulator / "stubs"
    return load_torch_extension(
        EXTENSION_NAME,
        [simulator / name for name in EXTENSION_SOURCES],
        key_extra=[f"headers {headers_digest(stubs)} {headers_digest(simulator)}"],
    )


def include_dir() -> Path:
    """The simulated MUSA toolkit's and torch_musa's C/C++ headers: what extensions include, and
    what the SDK libraries are compiled against (one definition of ``musaError_t`` & co.)."""
    return csrc_dir() / "simulator" / "include"


def release_include_dir(release: str) -> Path:
    """The headers of torch_musa that differ between releases (``MUSAGraph.h``), as
    ``release`` declares them; put before :func:`include_dir`.

    Example::

        >>> release_include_dir("2.11.0.post2").name
        '2.9.1.post1'
    """
    from . import releases

    return csrc_dir() / "simulator" / "include_releases" / releases.facts(release)["graph_layout"]


def stub_library_paths() -> "dict[str, Path]":
    """Paths of the simulated MUSA SDK libraries (``libmusart.so`` ...), built on first use."""
    stubs = csrc_dir() / "simulator" / "stubs"
    built = build_shared_libraries(
        "torchada_musa_sdk",
        [stubs / f"{name}.c" for name in STUB_LIBRARIES],
        cflags=("-O2", "-I" + shlex.quote(str(include_dir()))),
        depends=sorted([*stubs.glob("*.h"), *include_dir().glob("*.h")]),
    )
    return {f"{stem}.so": path for stem, path in built.items()}


def mtml_library_path() -> Path:
    """Path of the simulated driver's ``libmtml.so`` (soname ``libmtml.so.2``), built on first
    use; a ``libmtml.so.2`` link beside it makes the directory loadable by the soname."""
    stubs = csrc_dir() / "simulator" / "stubs"
    built = build_shared_libraries(
        "torchada_mtml",
        [stubs / "libmtml.c"],
        cflags=(
            "-O2",
            "-fvisibility=hidden",
            "-Wl,-soname," + MTML_SONAME,
            "-I" + shlex.quote(str(include_dir())),
        ),
        depends=sorted(stubs.glob("musa_sim_sdk.h")),
    )
    path = built["libmtml"]
    link = path.with_name(MTML_SONAME)
    if not link.is_symlink():
        try:
            link.symlink_to(path.name)
        except OSError:  # a read-only cache: loading by path still works
            pass
    return path
