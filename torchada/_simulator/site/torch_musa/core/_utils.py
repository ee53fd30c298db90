from typing import Union

import torch

import torch_musa

DeviceUnion = Union[torch.device, int, str, None]


def _get_musa_device_index(device, optional=False, allow_cpu=False):
    if device is None:
        if not torch_musa.is_available():
            raise ValueError("Moore Threads GPUs are not available")
        return torch_musa.current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if allow_cpu:
            if device.type not in ("musa", "cpu"):
                raise ValueError(f"Expected a musa or cpu device, but got: {device}")
        elif device.type != "musa":
            raise ValueError(f"Expected a musa device, but got: {device}")
        if device.type == "cpu":
            return -1
        if device.index is None:
            if optional:
                return torch_musa.current_device()
            raise ValueError(
                f"Expected a musa device with a specified index or an integer, but got:{device}"
            )
        return device.index
    if isinstance(device, int):
        return device
    raise ValueError(f"Expected a musa device, but got: {device!r}")
