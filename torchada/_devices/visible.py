"""``CUDA_VISIBLE_DEVICES`` on MUSA: launchers and schedulers written for NVIDIA pick devices with
it, while the MUSA driver reads ``MUSA_VISIBLE_DEVICES``.

The rule is ``torchada_startup.plan`` (its docstring and docs/devices.md say it in full):
``CUDA_VISIBLE_DEVICES`` chooses GPUs within the ``MUSA_VISIBLE_DEVICES`` the user set
(``MUSA_VISIBLE_DEVICES=2,3`` with ``CUDA_VISIBLE_DEVICES=1`` is physical GPU 3), read as CUDA reads
it; what cannot be read that way (an index out of range, a UUID) is an error naming both.
``TORCHADA_MUSA_VISIBLE_FROM_CUDA`` and ``TORCHADA_MUSA_VISIBLE_BASE`` remember what torchada
derived and the user's value it replaced. ``CUDA_VISIBLE_DEVICES`` itself is never changed.

When it must happen: before torch_musa is imported. torch_musa counts the devices while it imports
(so the MUSA driver reads ``MUSA_VISIBLE_DEVICES`` then, once) and keeps the count, and ``import
torch`` imports it through its entry point, before or after torchada's. So the rule is applied
twice: at interpreter start by torchada's ``.pth`` file in every process that inherits
``TORCHADA_ACTIVE`` (whatever the entry-point order), and here, when torchada turns on (for the
process that turns it on first). A ``CUDA_VISIBLE_DEVICES`` set after torch_musa was imported, or
met by a torchada turned on after that, cannot change this process's devices; torchada then says so
(processes started from it still follow the rule). Unlike CUDA's, the count is not re-read before
the device is first used.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping, Optional

from torchada_startup import CUDA, DERIVED, MUSA, VisibleDevicesError, plan

from .._core.warn import warn_once

__all__ = ["CUDA", "DERIVED", "MUSA", "problem", "sync"]


def problem(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """Why ``CUDA_VISIBLE_DEVICES`` cannot be read within ``MUSA_VISIBLE_DEVICES`` (the error
    torchada raises when it turns on), or None when it can.

    Example::

        >>> problem({"CUDA_VISIBLE_DEVICES": "1", "MUSA_VISIBLE_DEVICES": "0"}) is not None
        True
        >>> problem({"CUDA_VISIBLE_DEVICES": "1", "MUSA_VISIBLE_DEVICES": "0,1"}) is None
        True
    """
    try:
        plan(dict(os.environ if environ is None else environ))
    except VisibleDevicesError as err:
        return str(err)
    return None


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
    after torch_musa was imported reaches only child processes: a warning says so. Raises
    :class:`torchada_startup.VisibleDevicesError` (a ValueError) for a setting that cannot be
    read, before anything is changed."""
    changes = plan()
    if not changes:
        return
    musa = os.environ.get(MUSA)
    if changes[MUSA] != musa and _devices_chosen():
        warn_once(
            f"visible-late:{os.environ.get(CUDA)}:{musa}",
            _too_late(os.environ.get(CUDA), musa),
        )
    for name, value in changes.items():
        if value is None:
            patcher.del_env(name)
        else:
            patcher.set_env(name, value)
