"""Implementation helpers of the simulated ``torch_musa.utils.musa_extension``, kept outside the
``torch_musa`` namespace (real torch_musa has none of these names): source and flag checks, the
errors for what the simulator cannot compile, and the directories an extension builds against."""

from __future__ import annotations

import collections.abc
import functools
import inspect
import json
import logging
import os
import re

import torch
from torch.utils import cpp_extension as _cpp

from . import native

logger = logging.getLogger("torchada")


MUSA_SOURCE_SUFFIXES = (".mu", ".muh")


# CUDA sources are not MUSA sources to torch_musa: they must be ported (renamed) first.
CUDA_SOURCE_SUFFIXES = (".cu", ".cuh")


SUPPORTED_ARCHS = ("10", "21", "22", "31", "32")


# The libraries torch_musa links every extension against; musa_python has no simulated counterpart.
TORCH_LIBRARIES = ("c10", "torch", "torch_cpu", "torch_python")


COMPILE_ARG_KEYS = ("cxx", "mcc", "mcc_dlink")


def find_mudnn_home() -> str | None:
    return os.environ.get("MUDNN_HOME") or os.environ.get("MUDNN_PATH") or None


def runtime_available() -> bool:
    musa = getattr(torch, "musa", None)
    return bool(musa is not None and musa.is_available())


class NoMusaCompilerError(RuntimeError):
    """MUSA device code was asked for; the simulator cannot compile it."""


def no_mcc_error(what: str, where: str) -> NoMusaCompilerError:
    return NoMusaCompilerError(
        f"{where}: cannot compile MUSA source(s) {what}: the torchada simulator has no MUSA "
        "compiler (mcc). Build the extension from host C++ (.cpp) sources only (their ATen calls "
        "on musa tensors run on the simulator), or build it on real MUSA hardware with the MUSA "
        "toolkit installed."
    )


def refuse_device_sources(sources: collections.abc.Sequence[str], where: str) -> None:
    musa = [str(s) for s in sources if os.path.splitext(str(s))[1] in MUSA_SOURCE_SUFFIXES]
    if musa:
        raise no_mcc_error(", ".join(musa), where)
    cuda = [str(s) for s in sources if os.path.splitext(str(s))[1] in CUDA_SOURCE_SUFFIXES]
    if cuda:
        # torch's machinery would hand these to nvcc; torch_musa knows only .mu/.muh device code.
        raise ValueError(
            f"{where}: {', '.join(cuda)}: .cu/.cuh are not MUSA sources; torch_musa compiles "
            "device code from .mu/.muh files only (port and rename them, e.g. with "
            "torchada.porting)"
        )


def parse_arch_list(value: str) -> list[str]:
    archs: list[str] = []
    for arch in value.split(";"):
        arch = arch.strip()
        if not arch:
            continue
        if arch not in SUPPORTED_ARCHS:
            raise ValueError(
                f"Unknown MUSA arch ({arch}) or GPU not supported; TORCH_MUSA_ARCH_LIST takes "
                f"';'-separated values from {', '.join(SUPPORTED_ARCHS)}"
            )
        if arch not in archs:
            archs.append(arch)
    return archs


def offload_archs(cflags: collections.abc.Sequence[str]) -> list[str]:
    """The archs of ``--offload-arch=mp_XX`` (or ``--offload-arch mp_XX``) flags, validated."""
    found: list[str] = []
    flags = list(cflags)
    for i, flag in enumerate(flags):
        if flag.startswith("--offload-arch="):
            value = flag.split("=", 1)[1]
        elif flag == "--offload-arch" and i + 1 < len(flags):
            value = flags[i + 1]
        else:
            continue
        arch = value.removeprefix("mp_")
        if arch not in SUPPORTED_ARCHS:
            raise ValueError(
                f"Unknown MUSA arch ({value}) or GPU not supported; --offload-arch takes "
                f"mp_<arch> with <arch> one of {', '.join(SUPPORTED_ARCHS)}"
            )
        found.append(arch)
    return found


def visible_device_archs() -> list[str]:
    archs: list[str] = []
    if not runtime_available():
        return archs
    for index in range(torch.musa.device_count()):
        major, minor = torch.musa.get_device_capability(index)
        arch = f"{major}{minor}"
        if arch not in archs:
            archs.append(arch)
    return archs


def check_musa_cflags(
    cflags: collections.abc.Sequence[str] | None, with_musa: bool | None = None
) -> None:
    # MUSA flags are never used (no device code gets compiled), but a bad arch is an error the
    # caller would hit on hardware, so it is reported here too. Host-only builds that pass no MUSA
    # flags are left alone, as torch_musa leaves them.
    if cflags or with_musa:
        # As for mcc: arch flags given in cflags take the place of TORCH_MUSA_ARCH_LIST.
        if not offload_archs(cflags or []) and os.environ.get("TORCH_MUSA_ARCH_LIST", "").strip():
            parse_arch_list(os.environ["TORCH_MUSA_ARCH_LIST"])
        logger.debug("MUSA compiler flags %s unused: the simulator builds host code only", cflags)


@functools.cache
def cxx_std() -> str:
    # torch_musa 2.7.1 compiles as C++17, the standard of the torch it pairs with. The simulator
    # runs on whatever torch is installed, whose headers may need a newer standard: take torch's.
    try:
        source = inspect.getsource(_cpp.BuildExtension.build_extensions)
    except (OSError, TypeError):
        return "c++17"
    years = [int(y) for y in re.findall(r"c\+\+(\d\d)\b", source)]
    return f"c++{max([17, *years])}"


def append_std_if_missing(cflags: list[str]) -> None:
    if not any(flag.startswith("-std=") for flag in cflags):
        cflags.append(f"-std={cxx_std()}")


def existing(paths: collections.abc.Sequence[str]) -> list[str]:
    found = []
    for path in paths:
        if os.path.isdir(path):
            found.append(path)
        else:
            logger.debug("skipping missing directory %s", path)
    return found


# torch_musa's C++ headers as far as the simulator implements them (streams, guards, checks, the
# runtime API subset), shipped as data beside this package; the headers that differ between
# releases (MUSAGraph.h) come first, from the simulated release's own directory.
TORCH_MUSA_INCLUDE_DIR = str(native.include_dir())


def torch_musa_include_dirs() -> list[str]:
    """The simulated release's torch_musa header directories, its own first.

    Example::

        >>> torch_musa_include_dirs()[-1] == TORCH_MUSA_INCLUDE_DIR
        True
    """
    from . import releases, state

    release = state.config.release if state.config is not None else releases.resolve()
    return [str(native.release_include_dir(release)), TORCH_MUSA_INCLUDE_DIR]


# From 2.9.1: the SDK versions torch_musa was built with (share/musa_versions.json, written at its
# build) become macros of every MUSAExtension; without them it refuses to build.
MUSA_VERSION_MACROS = ("MUSA_COMP_VERSION", "MUSPARSE_VERSION", "REAL_MUSA_VERSION")


def musa_version_macros(package_dir: str) -> list[tuple[str, str]]:
    """``(name, value)`` of each version macro in ``package_dir``/share/musa_versions.json;
    RuntimeError("Missing MUSA version macro: NAME") for one the file (or a missing file) lacks.

    Example::

        >>> musa_version_macros("/nonexistent")
        Traceback (most recent call last):
        ...
        RuntimeError: Missing MUSA version macro: MUSA_COMP_VERSION
    """
    path = os.path.join(package_dir, "share", "musa_versions.json")
    try:
        with open(path, encoding="utf-8") as f:
            versions = json.load(f)
    except (OSError, ValueError):
        versions = {}
    macros = []
    for name in MUSA_VERSION_MACROS:
        if name not in versions:
            raise RuntimeError(f"Missing MUSA version macro: {name}")
        macros.append((name, str(versions[name])))
    return macros


def check_compile_args(args: dict, name: str) -> None:
    unknown = sorted(set(args) - set(COMPILE_ARG_KEYS))
    if unknown:
        # Only cxx flags reach a compiler here; an nvcc key usually means an unported setup.py.
        logger.warning(
            "extension %s: extra_compile_args keys %s are ignored; torch_musa uses %s",
            name,
            unknown,
            ", ".join(COMPILE_ARG_KEYS),
        )


def ensure_ninja() -> None:
    # The ninja wheel installs a binary torch cannot find unless its directory is on PATH.
    from torchada._native.build import NativeBuildError, ensure_ninja_on_path

    try:
        ensure_ninja_on_path()
    except NativeBuildError:
        pass  # torch reports a missing ninja itself


def musa_dirs_for(
    with_musa: bool | None, include_paths, library_paths
) -> tuple[list[str], list[str]]:
    """The MUSA include directories and -L flags ``with_musa`` adds (toolkit ones only)."""
    if not with_musa:
        return [], []
    logger.info("with_musa=True: no MUSA toolkit is simulated; building and linking host code only")
    torch_includes = {*_cpp.include_paths(), *torch_musa_include_dirs()}
    torch_libs = set(_cpp.library_paths())
    includes = [p for p in include_paths(musa=True) if p not in torch_includes]
    ldflags = [f"-L{p}" for p in library_paths(musa=True) if p not in torch_libs]
    return includes, ldflags


def refuse_sycl(sources, cflags, with_sycl, where: str) -> None:
    # torch_musa compiles SYCL sources with a SYCL compiler; none is simulated.
    if isinstance(sources, str):
        sources = [sources]
    if with_sycl or cflags or (sources and any(str(s).strip() for s in sources)):
        raise RuntimeError(
            f"{where}: SYCL sources need a SYCL compiler, which this machine does not have"
        )
