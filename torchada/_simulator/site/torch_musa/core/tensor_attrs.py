"""Tensor/Module/Storage attributes torch_musa hand-writes (core/tensor_attrs.py and friends)."""

import torch

import torch_musa


def _is_musa(self):
    return self.device.type == "musa"


def _musa(self, device=None, non_blocking=False, *, memory_format=torch.preserve_format, **kwargs):
    if "async" in kwargs:
        non_blocking = kwargs.pop("async")
    if kwargs:
        raise TypeError(f"musa() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if device is None:
        device = torch.device("musa", torch_musa.current_device())
    elif isinstance(device, int):
        device = torch.device("musa", device)
    else:
        device = torch.device(device)
    if device.type != "musa":
        raise RuntimeError("Invalid device, must be musa device")
    return self.to(device, non_blocking=non_blocking, memory_format=memory_format)


orig_to = torch.Tensor.to


def _to(self, *args, **kwargs):
    # torch_musa reads an int device as musa:<int>.
    if args and isinstance(args[0], int) and not isinstance(args[0], bool):
        args = (torch.device("musa", args[0]),) + args[1:]
    if isinstance(kwargs.get("device"), int):
        kwargs["device"] = torch.device("musa", kwargs["device"])
    return orig_to(self, *args, **kwargs)


orig_pin_memory = torch.Tensor.pin_memory
orig_is_pinned = torch.Tensor.is_pinned


def _pin_memory(self, device="musa"):
    return orig_pin_memory(self)


def _is_pinned(self, device="musa"):
    return orig_is_pinned(self)


def _module_musa(self, device=None):
    return self._apply(lambda t: t.musa(device))


def _storage_is_cuda(self):
    return self.device.type in ("cuda", "musa")


def _storage_musa(self, device=None, non_blocking=False):
    idx = torch_musa.current_device() if device is None else torch.device(device, 0).index
    if self.device.type == "musa" and (device is None or self.device.index == idx):
        return self
    out = torch.UntypedStorage(self.nbytes(), device=torch.device("musa", idx))
    out.copy_(self, non_blocking)
    return out


def set_tensor_attributes():
    torch.Tensor.is_musa = property(_is_musa)
    torch.Tensor.musa = _musa
    torch.Tensor.to = _to
    torch.Tensor.orig_to = orig_to
    torch.Tensor.pin_memory = _pin_memory
    torch.Tensor.is_pinned = _is_pinned
    torch.Tensor.orig_pin_memory = orig_pin_memory
    torch.Tensor.orig_is_pinned = orig_is_pinned


def set_module_attributes():
    torch.nn.Module.musa = _module_musa


def set_storage_attributes():
    torch.UntypedStorage.is_cuda = property(_storage_is_cuda)
    torch.UntypedStorage.is_musa = property(lambda self: self.device.type == "musa")
    torch.UntypedStorage.musa = _storage_musa
