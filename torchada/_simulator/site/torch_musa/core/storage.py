"""UntypedStorage methods torch_musa adds (is_musa, musa, is_cuda answering for musa)."""

import torch


def _storage_is_cuda(self):
    return self.device.type in ("cuda", "musa")


def _storage_musa(self, device=None, non_blocking=False):
    idx = torch.musa.current_device() if device is None else torch.device(device, 0).index
    if self.device.type == "musa" and (device is None or self.device.index == idx):
        return self
    out = torch.UntypedStorage(self.nbytes(), device=torch.device("musa", idx))
    out.copy_(self, non_blocking)
    return out


def set_storage_attributes():
    torch.UntypedStorage.is_cuda = property(_storage_is_cuda)
    torch.UntypedStorage.is_musa = property(lambda self: self.device.type == "musa")
    torch.UntypedStorage.musa = _storage_musa
