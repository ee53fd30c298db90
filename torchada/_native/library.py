"""torchada's native library (``csrc/torchada_native``): built once, cached, loaded on demand.

Subsystems ask :func:`load` for the module and fall back to pure Python when it answers None: the
library is an accelerator, never a requirement. It is None when ``TORCHADA_NATIVE=0`` asks for the
fallback, or when the build fails (no compiler, no ninja, a compile error); the failure is logged
once and recorded in :func:`state`, which ``doctor``-style commands can print.

MUSA kernel sources (``*.mu``) are compiled only where a MUSA compiler (mcc) exists, for the target
``MTGPU_TARGET`` names or, by default, the one of device 0 (capability (2, 2) -> ``mp_22``);
elsewhere they are skipped, with an INFO log, and the C++ sources build without them.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Optional, Set

from .._core.records import field, record

logger = logging.getLogger("torchada")

NATIVE_ENV = "TORCHADA_NATIVE"
LIBRARY_NAME = "torchada_native"
ARCH_ENV = "MTGPU_TARGET"
# Shows the build of the native library, as TORCHADA_VERBOSE_BUILD does for every build.
VERBOSE_ENV = "TORCHADA_CPP_OPS_VERBOSE"
# Defined for the C++ sources when the .mu kernels are compiled with them.
WITH_MUSA_KERNELS = "TORCHADA_WITH_MUSA_KERNELS"

_lock = threading.Lock()
_module: Optional[ModuleType] = None
_state: Dict[str, Any] = {"status": "not loaded"}


def requested() -> bool:
    """False when ``TORCHADA_NATIVE`` is 0/false/no/off: use the Python fallbacks."""
    return os.environ.get(NATIVE_ENV, "").strip().lower() not in ("0", "false", "no", "off")


def source_dir() -> Path:
    from .build import csrc_dir

    return csrc_dir() / LIBRARY_NAME


def sources() -> List[Path]:
    from .build import files_ending

    return files_ending(source_dir(), ".cpp")


def musa_sources() -> List[Path]:
    from .build import files_ending

    return files_ending(source_dir(), ".mu")


def find_mcc() -> Optional[str]:
    """The MUSA compiler, where torch_musa's loader would look for it; None when there is none."""
    candidates = [os.environ.get("PYTORCH_MCC")]
    for home in (os.environ.get("MUSA_HOME"), os.environ.get("MUSA_PATH")):
        if home:
            candidates.append(os.path.join(home, "bin", "mcc"))
    candidates += [shutil.which("mcc"), "/usr/local/musa/bin/mcc"]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


_ARCH_RE = re.compile(r"mp_\d+")


def target_arch_from_env() -> Optional[str]:
    """``MTGPU_TARGET`` when set; raises ValueError when it is not ``mp_<digits>``."""
    value = os.environ.get(ARCH_ENV, "").strip()
    if not value:
        return None
    if not _ARCH_RE.fullmatch(value):
        raise ValueError(
            f"{ARCH_ENV}={value!r} is not a MUSA architecture: use mp_<digits>, for example "
            f"{ARCH_ENV}=mp_22 (MTT S4000) or {ARCH_ENV}=mp_31 (MTT S5000), or unset it to "
            "build for device 0"
        )
    return value


def target_arch() -> Optional[str]:
    """The MUSA architecture kernels are built for: ``MTGPU_TARGET`` (``mp_22``) when set, else
    the one of device 0 (capability (2, 2) -> ``mp_22``); None when neither is known.

    Raises ValueError for an ``MTGPU_TARGET`` that is not ``mp_<digits>``.
    """
    value = target_arch_from_env()
    if value:
        return value
    musa = sys.modules.get("torch_musa")
    if musa is None or not musa.device_count():
        return None
    major, minor = musa.get_device_capability(0)
    return f"mp_{major}{minor}"


def torch_musa_version() -> str:
    musa = sys.modules.get("torch_musa")
    return f"torch_musa {getattr(musa, '__version__', '?')}" if musa else "no torch_musa"


@record
class Plan:
    """What a build of the native library compiles."""

    sources: List[Path]
    musa_sources: List[Path] = field(default_factory=list)  # the .mu files found
    mcc: Optional[str] = None
    arch: Optional[str] = None  # set when the .mu files are compiled

    @property
    def compiles_musa(self) -> bool:
        return bool(self.musa_sources) and self.mcc is not None

    def musa_note(self) -> str:
        """One line about the MUSA kernels, for logs, ``build`` and ``doctor``."""
        names = ", ".join(p.name for p in self.musa_sources)
        if not self.musa_sources:
            return "none in the sources"
        if self.compiles_musa:
            return f"compiled for {self.arch} with {self.mcc}: {names}"
        return f"skipped (no MUSA compiler, mcc, found): {names}"


def plan(cpp_sources: Optional[List[Path]] = None, mu_sources: Optional[List[Path]] = None) -> Plan:
    """What to compile (by default: this library's sources); ``.mu`` files only where mcc exists.

    Raises ValueError when ``.mu`` files are to be compiled and no valid target is known.
    """
    srcs = sources() if cpp_sources is None else list(cpp_sources)
    mus = musa_sources() if mu_sources is None else list(mu_sources)
    mcc = find_mcc() if mus else None
    if not mus or mcc is None:
        return Plan(srcs, mus, mcc)
    arch = target_arch()
    if arch is None:
        raise ValueError(
            f"no MUSA device is visible to choose the target of {', '.join(p.name for p in mus)}: "
            f"set {ARCH_ENV}, for example {ARCH_ENV}=mp_22"
        )
    return Plan([*srcs, *mus], mus, mcc, arch)


_skips_logged: Set[str] = set()


def log_musa_skip(name: str, build: Plan) -> None:
    """INFO, once per library: its .mu kernels are not compiled here."""
    if build.musa_sources and not build.compiles_musa and name not in _skips_logged:
        _skips_logged.add(name)
        logger.info("torchada: %s: MUSA kernels %s", name, build.musa_note())


def _build_arguments() -> "tuple[Plan, Dict[str, Any]]":
    """The plan, and the arguments of the library's ``load_torch_extension`` (less ``verbose``)."""
    from .build import headers_digest

    build = plan()
    if not build.sources:
        raise FileNotFoundError(f"no native sources under {source_dir()}")
    # NDEBUG as in torch's release builds: header-inlined debug asserts stay off.
    cflags = ["-DNDEBUG"] + ([f"-D{WITH_MUSA_KERNELS}"] if build.compiles_musa else [])
    return build, {
        "sources": build.sources,
        "extra_cflags": cflags,
        "key_extra": [f"headers {headers_digest(source_dir())}", torch_musa_version()],
        "musa_arch": build.arch,
    }


def cached_build() -> Dict[str, Any]:
    """Whether the cache in use holds this library's build for the torch, torch_musa and sources
    loaded now (built ahead of time, say into a container image, or by an earlier run): ``{"built":
    bool, "path": its directory}``, or ``{"built": False, "reason": ...}`` when the build's
    arguments cannot be known. Builds nothing.

    Example::

        >>> from torchada._native import library
        >>> library.cached_build()["built"]  # doctest: +SKIP
        True
    """
    from .build import is_built, torch_extension_dir

    try:
        _, args = _build_arguments()
        where = torch_extension_dir(LIBRARY_NAME, **args)
    except (OSError, ValueError) as err:
        return {"built": False, "reason": f"{type(err).__name__}: {err}"}
    return {"built": is_built(LIBRARY_NAME, where), "path": str(where)}


def load() -> Optional[ModuleType]:
    """The native module, building it on first use; None when unavailable (see :func:`state`)."""
    global _module
    if _module is not None:
        return _module
    with _lock:
        if _module is not None:
            return _module
        if not requested():
            _state.clear()
            _state.update(status="off", reason=f"{NATIVE_ENV}=0")
            return None
        if _state.get("status") == "failed":
            return None  # one attempt per process: a failed build is not retried on every call
        from .build import describe_failure, load_torch_extension, verbose_builds

        try:
            build, args = _build_arguments()
            log_musa_skip(LIBRARY_NAME, build)
            module = load_torch_extension(LIBRARY_NAME, **args, verbose=verbose_builds(VERBOSE_ENV))
        except Exception as err:  # any build or import failure means: use the fallback
            _state.clear()
            _state.update(status="failed", reason=f"{type(err).__name__}: {err}")
            logger.warning(
                "torchada: native library unavailable (%s); using the Python fallbacks. "
                "Set %s=0 to skip the build, TORCHADA_VERBOSE_BUILD=1 to see it.",
                describe_failure(err),
                NATIVE_ENV,
            )
            return None
        _module = module
        _state.clear()
        _state.update(
            status="loaded", path=getattr(module, "__file__", None), musa_kernels=build.musa_note()
        )
        return module


def state() -> Dict[str, Any]:
    """``{"status": "not loaded" | "loaded" | "off" | "failed", ...}`` with a reason or path."""
    with _lock:
        return dict(_state)
