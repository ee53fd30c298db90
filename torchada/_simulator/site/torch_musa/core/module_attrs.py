"""nn.Module methods torch_musa adds (Module.musa)."""

from typing import TypeVar

import torch

T = TypeVar("T", bound="torch.nn.Module")


def _musa(self, device=None):
    return self._apply(lambda t: t.musa(device))


def set_module_attributes():
    torch.nn.Module.musa = _musa
