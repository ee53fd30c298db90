"""torch.cuda.nccl on MUSA: the version comes from MCCL; direct collectives go through
torch.distributed (backend "nccl" maps to mccl)."""

import torch


def version():
    return torch.musa.mccl.version()


def is_available(tensors) -> bool:
    return all(t.device.type == "musa" and t.is_contiguous() for t in tensors)
