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


def _no_ipc(*args, **kwargs):
    # torch_musa shares device memory between processes through MUSA IPC; the simulated device
    # is host memory of one process, so it says so instead of handing out a handle that cannot
    # work.
    raise RuntimeError(
        "MUSA IPC (sharing a musa tensor's memory with another process) needs a MUSA device; the "
        "simulator cannot share device memory between processes. Move the tensor to the CPU "
        "before sending it, or use torch.distributed."
    )


def set_storage_attributes():
    for name in ("_share_musa_", "_share_cuda_"):
        setattr(torch.UntypedStorage, name, _no_ipc)
    for name in ("_new_shared_musa", "_release_ipc_counter_musa", "_new_shared_cuda"):
        setattr(torch.UntypedStorage, name, classmethod(_no_ipc))
    torch.UntypedStorage.is_cuda = property(_storage_is_cuda)
    torch.UntypedStorage.is_musa = property(lambda self: self.device.type == "musa")
    torch.UntypedStorage.musa = _storage_musa
