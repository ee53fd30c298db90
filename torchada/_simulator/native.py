"""Builds (once, cached) and loads the simulator's native pieces."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from .._build import build_shared_libraries, csrc_dir, headers_digest, load_torch_extension

EXTENSION_NAME = "torchada_musa_sim"
STUB_LIBRARIES = ("libmusart", "libmusa", "libmccl", "libmublas", "libmurand")


def load_extension() -> ModuleType:
    # The backend shares its stream and event records with libmusart (stubs/sim_handles.h).
    stubs = csrc_dir() / "simulator" / "stubs"
    return load_torch_extension(
        EXTENSION_NAME,
        [csrc_dir() / "simulator" / "musa_sim.cpp"],
        key_extra=[f"headers {headers_digest(stubs)}"],
    )


def stub_library_paths() -> "dict[str, Path]":
    """Paths of the simulated MUSA SDK libraries (``libmusart.so`` ...), built on first use."""
    stubs = csrc_dir() / "simulator" / "stubs"
    built = build_shared_libraries(
        "torchada_musa_sdk",
        [stubs / f"{name}.c" for name in STUB_LIBRARIES],
        depends=sorted(stubs.glob("*.h")),
    )
    return {f"{stem}.so": path for stem, path in built.items()}
