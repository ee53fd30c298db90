"""UntypedStorage methods torch_musa adds (is_musa, musa, is_cuda answering for musa, IPC,
edit_device)."""

import torch
from torch._utils import _get_async_or_non_blocking

from torch_musa import _MUSAC


@property
def _is_musa(self):
    return self.device.type == "musa"


def _musa(self, device=None, non_blocking=False, **kwargs):
    non_blocking = _get_async_or_non_blocking("musa", non_blocking, kwargs)
    if self.device.type == "musa":
        if device is None:
            device = torch.musa.current_device()
        if self.get_device() == device:
            return self
    elif device is None:
        device = -1
    with torch.musa.device(device):
        out = torch.UntypedStorage(self.size(), device=torch.device("musa"))
        out.copy_(self, non_blocking)
        return out


def _edit_device(self, device):
    # The storage keeps its memory and now belongs to `device` (no copy).
    _MUSAC._edit_device_musa(self, device)


@classmethod
def _new_shared_musa(cls, *args, **kwargs):
    return _MUSAC._new_shared_musa(*args, **kwargs)


def _share_musa(self, *args, **kwargs):
    return _MUSAC._share_musa_(self, *args, **kwargs)


def _is_shared(self):
    # Device memory counts as shared, as in torch_musa.
    return True if self.device.type == "musa" else self.is_shared()


@classmethod
def _release_ipc_counter_musa(cls, *args, device=None, **kwargs):
    return _MUSAC._release_ipc_counter_musa(*args, **kwargs)


def set_storage_attributes():
    torch.UntypedStorage._share_musa_ = _share_musa
    torch.UntypedStorage._share_cuda_ = _share_musa
    torch.UntypedStorage._new_shared_musa = _new_shared_musa
    torch.UntypedStorage._new_shared_cuda = _new_shared_musa
    torch.UntypedStorage.musa = _musa
    torch.UntypedStorage.is_musa = _is_musa
    torch.UntypedStorage.is_cuda = _is_musa
    torch.UntypedStorage.is_shared = _is_shared
    torch.UntypedStorage._release_ipc_counter_musa = _release_ipc_counter_musa
    torch.UntypedStorage._release_ipc_counter_cuda = _release_ipc_counter_musa
    torch.UntypedStorage.edit_device = _edit_device
