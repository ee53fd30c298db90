"""torch.musa.mccl: only version(), as in torch_musa."""

from torch_musa.core.boards_info import MCCL_VERSION


def version():
    return tuple(MCCL_VERSION)
