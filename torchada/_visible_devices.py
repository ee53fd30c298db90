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
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional

from ._fills._warn import warn_once

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


def sync(patcher: Any) -> None:
    """Apply the rule to ``os.environ``; ``patcher`` records every change for undo."""
    cuda = os.environ.get(CUDA)
    musa = os.environ.get(MUSA)
    derived = os.environ.get(DERIVED)
    ours = musa is not None and musa == derived
    if cuda is None:
        if ours:  # CUDA_VISIBLE_DEVICES was unset after we derived from it: so is ours
            patcher.del_env(MUSA)
            patcher.del_env(DERIVED)
        return
    if musa is not None and not ours:
        message = disagreement()
        if message is not None:
            warn_once(f"visible:{cuda}:{musa}", message)
        return
    if musa != cuda:
        patcher.set_env(MUSA, cuda)
        patcher.set_env(DERIVED, cuda)
