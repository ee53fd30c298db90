import os
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


def _get_musa_arch() -> int:
    """The MUSA architecture as a number (21: QY1, 22: QY2, 31: PH1): TORCH_MUSA_ARCH where set
    (21, 22 or 31), else device 0's capability; 22 when that cannot be read (torch_musa says why
    on stdout and goes on, with or without a MUSA device)."""
    chosen = os.getenv("TORCH_MUSA_ARCH", None)
    if chosen is None:
        try:
            props = torch_musa.get_device_properties(0)
            return int(props.major * 10 + props.minor)
        except Exception as err:
            print("get_devie_properties failed, reason:")
            print(err)
            print("Users can set default musa arch with environment variable: 'TORCH_MUSA_ARCH'")
            print("Default musa arch properties is: 22")
            return 22
    # torch_musa fails a value that is not a number while it reports it (an UnboundLocalError);
    # here the int() conversion's ValueError says so.
    arch = int(chosen)
    print(f"Using pre-defined musa arch: {arch}")
    if arch not in (21, 22, 31):
        print("'TORCH_MUSA_ARCH' should be a string of int: 21, 22, or 31, got ")
        print(f"  {arch}\nwhich is not supported")
        raise ValueError
    return arch
