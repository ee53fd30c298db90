import torch

import torch_musa

__all__ = ["amp_definitely_not_available", "get_amp_supported_dtype"]


def amp_definitely_not_available():
    return not torch_musa.is_available()


_torch_is_autocast_enabled = torch.is_autocast_enabled
_torch_set_autocast_enabled = torch.set_autocast_enabled


def _musa_is_autocast_enabled(*args, **kwargs):
    # torch_musa makes the no-argument form mean the musa device.
    if not args and not kwargs:
        return _torch_is_autocast_enabled("musa")
    return _torch_is_autocast_enabled(*args, **kwargs)


def _musa_set_autocast_enabled(*args, **kwargs):
    if len(args) + len(kwargs) == 1:
        return _torch_set_autocast_enabled("musa", *args, **kwargs)
    return _torch_set_autocast_enabled(*args, **kwargs)


def get_amp_supported_dtype():
    from torch_musa.core.device import is_bf16_supported

    if is_bf16_supported():
        return [torch.float16, torch.bfloat16]
    return [torch.float16]


def _hook_autocast_common():
    torch.is_autocast_enabled = _musa_is_autocast_enabled
    torch.set_autocast_enabled = _musa_set_autocast_enabled
