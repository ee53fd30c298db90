import functools

import torch

import torch_musa

_orig_is_autocast_enabled = torch.is_autocast_enabled
_orig_set_autocast_enabled = torch.set_autocast_enabled


def amp_definitely_not_available():
    return not torch_musa.is_available()


@functools.wraps(_orig_is_autocast_enabled)
def is_autocast_enabled(*args, **kwargs):
    # torch_musa makes the no-argument form mean the musa device.
    if not args and not kwargs:
        return _orig_is_autocast_enabled("musa")
    return _orig_is_autocast_enabled(*args, **kwargs)


@functools.wraps(_orig_set_autocast_enabled)
def set_autocast_enabled(*args, **kwargs):
    if len(args) == 1 and not kwargs and isinstance(args[0], bool):
        return _orig_set_autocast_enabled("musa", args[0])
    return _orig_set_autocast_enabled(*args, **kwargs)


def _hook_autocast_common():
    torch.is_autocast_enabled = is_autocast_enabled
    torch.set_autocast_enabled = set_autocast_enabled
