"""torch.musa.mccl: only version(), as in torch_musa."""

import torch


def version():
    v = torch.musa._MUSAC._mccl_version()
    return (v >> 32, (v >> 16) & 0xFFFF, v & 0xFFFF)
