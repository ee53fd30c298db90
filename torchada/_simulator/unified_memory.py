"""torch's storage ``_to`` as torch_musa's build of torch has it.

torch_musa ships a patched torch whose ``torch._utils._to`` (behind ``UntypedStorage.to``) moves a
storage to a device in place, with ``edit_device``, while torch_musa's internal flag
``CPU_UNIFIED_FLAG`` is "True": the unified CPU allocator is in use, so the memory is managed and
the device can use it without a copy. ``torch.load(..., map_location="musa")`` then allocates no
device memory. The simulator runs on an unpatched torch, so the simulated torch_musa installs the
same behaviour at import; with the flag unset torch's own function runs.
"""

from __future__ import annotations

import functools
import os

import torch
import torch._utils
import torch.storage


def _in_place_when_unified(original):
    @functools.wraps(original)
    def _to(self, device, non_blocking=False):
        if (
            os.getenv("CPU_UNIFIED_FLAG", "False") != "True"
            or self.device == device
            or device.type == "cpu"
            or self.is_sparse
            or getattr(torch, device.type, None) is None
        ):
            return original(self, device, non_blocking)
        with getattr(torch, device.type).device(device):
            self.edit_device(device)
        return self

    _to._torchada_unified = True
    return _to


def install() -> None:
    """Make storages' ``to`` move in place under the unified CPU allocator (once per process)."""
    if getattr(torch._utils._to, "_torchada_unified", False):
        return
    patched = _in_place_when_unified(torch._utils._to)
    torch._utils._to = patched
    # torch.storage took the function by name at import: UntypedStorage.to calls this one.
    torch.storage._to = patched
