"""torchada's native library (``csrc/torchada_native``): built once, cached, loaded on demand.

Subsystems ask :func:`load` for the module and fall back to pure Python when it answers None: the
library is an accelerator, never a requirement. It is None when ``TORCHADA_NATIVE=0`` asks for the
fallback, or when the build fails (no compiler, no ninja, a compile error); the failure is logged
once and recorded in :func:`state`, which ``doctor``-style commands can print.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Optional

logger = logging.getLogger("torchada")

NATIVE_ENV = "TORCHADA_NATIVE"
LIBRARY_NAME = "torchada_native"

_lock = threading.Lock()
_module: Optional[ModuleType] = None
_state: Dict[str, Any] = {"status": "not loaded"}


def requested() -> bool:
    """False when ``TORCHADA_NATIVE`` is 0/false/no/off: use the Python fallbacks."""
    return os.environ.get(NATIVE_ENV, "").strip().lower() not in ("0", "false", "no", "off")


def source_dir() -> Path:
    from ._build import csrc_dir

    return csrc_dir() / LIBRARY_NAME


def sources() -> List[Path]:
    return sorted(source_dir().glob("*.cpp"))


def _headers_digest() -> str:
    # The build key covers the compiled sources only; headers join it through a define.
    h = hashlib.sha256()
    for header in sorted(source_dir().glob("*.h")):
        h.update(header.name.encode() + b"\0" + header.read_bytes())
    return h.hexdigest()[:16]


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
        from ._build import load_torch_extension

        try:
            srcs = sources()
            if not srcs:
                raise FileNotFoundError(f"no native sources under {source_dir()}")
            module = load_torch_extension(
                LIBRARY_NAME,
                srcs,
                # NDEBUG as in torch's release builds: header-inlined debug asserts stay off.
                extra_cflags=["-DNDEBUG", f"-DTORCHADA_HEADERS={_headers_digest()}"],
            )
        except Exception as err:  # any build or import failure means: use the fallback
            _state.clear()
            _state.update(status="failed", reason=f"{type(err).__name__}: {err}")
            first_line = (
                str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            )
            logger.warning(
                "torchada: native library unavailable (%s); using the Python fallbacks. "
                "Set %s=0 to skip the build, TORCHADA_VERBOSE_BUILD=1 to see it.",
                first_line,
                NATIVE_ENV,
            )
            return None
        _module = module
        _state.clear()
        _state.update(status="loaded", path=getattr(module, "__file__", None))
        return module


def state() -> Dict[str, Any]:
    """``{"status": "not loaded" | "loaded" | "off" | "failed", ...}`` with a reason or path."""
    with _lock:
        return dict(_state)
