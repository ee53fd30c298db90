"""The CPU-backed simulator of torch_musa that ships with torchada.

It is importable as ``torch_musa`` only after :func:`activate` (asked for with
``TORCHADA_SIMULATE=1``, ``python -m torchada.run --simulate`` or the test fixture), and never
when a real torch_musa can be imported. It behaves like the torch_musa release
``TORCHADA_SIM_RELEASE`` names (2.7.1, 2.9.1.post1 or 2.11.0.post2; by default the one paired
with the installed torch), including the names that release lacks (docs/simulator_releases.md).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import sys
from pathlib import Path
from types import ModuleType

logger = logging.getLogger("torchada")

SITE = str(Path(__file__).resolve().parent / "site")
ENV_SWITCH = "TORCHADA_SIMULATE"


def omitted_path() -> str:
    """The data file listing what the simulator leaves out of real torch_musa's surface."""
    return str(Path(__file__).resolve().parent / "omitted.json")


def requested(environ: "dict | None" = None) -> bool:
    from .._core.env import flag

    return flag(ENV_SWITCH, environ)


def real_torch_musa_spec():
    """The spec of a real torch_musa on sys.path (ignoring the simulator), or None."""
    if SITE in sys.path:
        saved = list(sys.path)
        sys.path[:] = [p for p in sys.path if p != SITE]
        try:
            return _find("torch_musa")
        finally:
            sys.path[:] = saved
    return _find("torch_musa")


def _find(name: str):
    mod = sys.modules.get(name)
    if mod is not None and not is_simulated(mod):
        return mod.__spec__
    if mod is not None:
        return None
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def is_simulated(module: "ModuleType | None" = None) -> bool:
    """Whether ``module`` (default: the loaded torch_musa) is this simulator, judged by where its
    code lives, so that it is known while its ``__init__`` still runs (an entry point of torch can
    see it half-imported)."""
    mod = sys.modules.get("torch_musa") if module is None else module
    origin = getattr(getattr(mod, "__spec__", None), "origin", None)
    return bool(origin) and _in_site(origin)


@functools.lru_cache(maxsize=16)
def _in_site(origin: str) -> bool:
    return os.path.realpath(origin).startswith(SITE + os.sep)


def is_active() -> bool:
    return is_simulated()


def activate() -> ModuleType:
    """Make the simulator importable as ``torch_musa``, import it, and return it.

    Refuses when a real torch_musa is importable: the simulator never shadows real hardware.
    """
    if is_active():
        return sys.modules["torch_musa"]
    spec = real_torch_musa_spec()
    if spec is not None:
        raise RuntimeError(
            "a real torch_musa is importable (%s); the MUSA simulator only runs where torch_musa "
            "is absent. Unset TORCHADA_SIMULATE to use the real device." % (spec.origin,)
        )
    if SITE not in sys.path:
        sys.path.append(SITE)
    # Children (torchrun workers, spawn, DataLoader workers) simulate too.
    os.environ[ENV_SWITCH] = "1"
    import torch_musa

    logger.debug("MUSA simulator active: %s", torch_musa.__file__)
    return torch_musa
