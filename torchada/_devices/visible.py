"""``CUDA_VISIBLE_DEVICES`` on MUSA: launchers and schedulers written for NVIDIA pick devices with
it, while the MUSA driver reads ``MUSA_VISIBLE_DEVICES``.

The rule, applied when torchada turns on (before torch_musa first uses a device):

- only ``CUDA_VISIBLE_DEVICES`` set: ``MUSA_VISIBLE_DEVICES`` takes its value;
- ``MUSA_VISIBLE_DEVICES`` set by the user: it wins (it is the MUSA-specific setting, and the one
  the driver reads); when ``CUDA_VISIBLE_DEVICES`` says otherwise, a warning names both;
- a value torchada derived follows ``CUDA_VISIBLE_DEVICES``: a child process whose launcher set
  another ``CUDA_VISIBLE_DEVICES`` (one device per worker, say) gets that one, not its parent's.

``TORCHADA_MUSA_VISIBLE_FROM_CUDA`` remembers what was derived, so that a child can tell the two
apart. ``CUDA_VISIBLE_DEVICES`` itself is never changed.

When it must happen: before torch_musa is imported. torch_musa counts the devices while it imports
(so the MUSA driver reads ``MUSA_VISIBLE_DEVICES`` then, once) and keeps the count, and ``import
torch`` imports it through its entry point. A ``CUDA_VISIBLE_DEVICES`` set after that, or met by a
torchada turned on after that, cannot change this process's devices; torchada then says so
(processes started from it still follow the rule). Unlike CUDA's, the count is not re-read before
the device is first used.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping, Optional

from .._core.warn import warn_once

CUDA = "CUDA_VISIBLE_DEVICES"
MUSA = "MUSA_VISIBLE_DEVICES"
DERIVED = "TORCHADA_MUSA_VISIBLE_FROM_CUDA"


def disagreement(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The warning for a user-set ``MUSA_VISIBLE_DEVICES`` that contradicts
    ``CUDA_VISIBLE_DEVICES`` (``MUSA_VISIBLE_DEVICES`` is used), or None when they agree.

    Example::

        >>> disagreement({"CUDA_VISIBLE_DEVICES": "1", "MUSA_VISIBLE_DEVICES": "0"}) is not None
        True
    """
    env = os.environ if environ is None else environ
    cuda, musa = env.get(CUDA), env.get(MUSA)
    if cuda is None or musa is None or musa == env.get(DERIVED) or musa.strip() == cuda.strip():
        return None
    return (
        f"{CUDA}={cuda!r} and {MUSA}={musa!r} disagree; {MUSA} is used, as the MUSA driver "
        f"reads it. Unset one of them or make them equal."
    )


def _devices_chosen() -> bool:
    """Whether this process's MUSA devices are chosen already: torch_musa has been imported (not
    merely begun to be). It counts the devices while it imports (its dynamo registration), and the
    MUSA driver reads ``MUSA_VISIBLE_DEVICES`` then, once; the simulator reads it then too."""
    from torchada_hooks.completion import is_importing

    return "torch_musa" in sys.modules and not is_importing("torch_musa")


def _too_late(cuda: Optional[str], seen: Optional[str]) -> str:
    wanted = f"{CUDA}={cuda!r}" if cuda is not None else f"{CUDA} unset"
    read = f"{MUSA}={seen!r}" if seen is not None else f"{MUSA} unset (every device)"
    return (
        f"{wanted} does not choose this process's devices: torch_musa was imported before "
        f"torchada (`import torch` imports it, through its entry point) and the MUSA driver has "
        f"read {read} already. Import torchada before torch, run the program with "
        f"`python -m torchada.run`, or set {MUSA} before starting it; processes started from "
        f"here follow {CUDA}."
    )


def sync(patcher: Any) -> None:
    """Apply the rule to ``os.environ``; ``patcher`` records every change for undo. A change made
    after torch_musa was imported reaches only child processes: a warning says so."""
    cuda = os.environ.get(CUDA)
    musa = os.environ.get(MUSA)
    derived = os.environ.get(DERIVED)
    ours = musa is not None and musa == derived
    if cuda is None:
        if ours:  # CUDA_VISIBLE_DEVICES was unset after we derived from it: so is ours
            if _devices_chosen():
                warn_once(f"visible-late::{musa}", _too_late(None, musa))
            patcher.del_env(MUSA)
            patcher.del_env(DERIVED)
        return
    if musa is not None and not ours:
        message = disagreement()
        if message is not None:
            warn_once(f"visible:{cuda}:{musa}", message)
        return
    if musa != cuda:
        if _devices_chosen():
            warn_once(f"visible-late:{cuda}:{musa}", _too_late(cuda, musa))
        patcher.set_env(MUSA, cuda)
        patcher.set_env(DERIVED, cuda)
