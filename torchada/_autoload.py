"""The ``torch.backends`` entry point: runs at the end of every ``import torch``.

It must cost nothing unless asked: two environment lookups, then return. When simulation was asked
for (``TORCHADA_SIMULATE=1``) it brings the simulated torch_musa in, as the real torch_musa's own
entry point does.
"""

from __future__ import annotations

import os


def autoload() -> None:
    if os.environ.get("TORCHADA_DISABLE", "") not in ("", "0"):
        return
    if os.environ.get("TORCHADA_SIMULATE", "").strip().lower() in ("1", "true", "yes", "on"):
        from torchada import _simulator

        if _simulator.real_torch_musa_spec() is None:
            _simulator.activate()
