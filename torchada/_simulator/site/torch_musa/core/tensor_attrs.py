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


def _to(self, *args, **kwargs):
    # torch_musa reads an int device as musa:<int>.
    if args and isinstance(args[0], int) and not isinstance(args[0], bool):
        args = (torch.device("musa", args[0]),) + args[1:]
    if isinstance(kwargs.get("device"), int):
        kwargs["device"] = torch.device("musa", kwargs["device"])
    return self.orig_to(*args, **kwargs)


def _pin_memory(self, device="musa"):
    return self.orig_pin_memory()


def _is_pinned(self, device="musa"):
    return self.orig_is_pinned()


def set_torch_attributes():
    torch.Tensor.is_musa = property(_is_musa)
    torch.Tensor.musa = _musa
    # As torch_musa: the methods it replaces stay on Tensor as orig_*, which its own call.
    torch.Tensor.orig_pin_memory = torch.Tensor.pin_memory
    torch.Tensor.orig_is_pinned = torch.Tensor.is_pinned
    torch.Tensor.orig_to = torch.Tensor.to
    torch.Tensor.pin_memory = _pin_memory
    torch.Tensor.is_pinned = _is_pinned
    torch.Tensor.to = _to
