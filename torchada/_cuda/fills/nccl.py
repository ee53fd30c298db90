"""torch.cuda.nccl on MUSA: the version comes from MCCL; direct collectives go through
torch.distributed (backend "nccl" maps to mccl)."""

import torch


def version():
    return torch.musa.mccl.version()


def is_available(tensors) -> bool:
    """False: torch.cuda.nccl's direct collectives have no MUSA counterpart (torch_musa binds no
    MCCL communicator API), so callers such as torch.cuda.comm.reduce_add take their other path."""
    return False
