"""torch.cuda.nccl on MUSA: the version comes from MCCL; direct collectives go through
torch.distributed (backend "nccl" maps to mccl)."""

import torch


def version():
    return torch.musa.mccl.version()


def is_available(tensors) -> bool:
    backend = torch._C._get_privateuse1_backend_name()
    return all(t.device.type == backend and t.is_contiguous() for t in tensors)
