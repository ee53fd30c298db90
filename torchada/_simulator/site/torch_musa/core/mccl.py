"""torch.musa.mccl: only version(), as in torch_musa."""

import torch_musa


def version():
    v = torch_musa._MUSAC._mccl_version()
    return (v >> 32, (v >> 16) & 0xFFFF, v & 0xFFFF)
