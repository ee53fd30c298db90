"""A CUDA-written DDP training script (torchrun --nproc-per-node N ddp_cuda.py).

Nothing here knows about MUSA: backend "nccl", device_ids=[local_rank], torch.cuda.set_device.
Prints one JSON line per rank: losses, and a checksum of the final weights.
"""

import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> None:
    dist.init_process_group(backend="nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)

    torch.manual_seed(0)  # identical initial weights on every rank
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1)).cuda(local_rank)
    ddp = DDP(model, device_ids=[local_rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)

    g = torch.Generator().manual_seed(100 + rank)  # each rank its own shard
    x = torch.randn(64, 8, generator=g).cuda(local_rank)
    y = x.sum(dim=1, keepdim=True).sin()
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())

    total = torch.tensor([losses[-1]], device=f"cuda:{local_rank}")
    dist.all_reduce(total)
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    print(
        json.dumps(
            {
                "rank": rank,
                "world": world,
                "first": losses[0],
                "last": losses[-1],
                "mean_last": total.item() / world,
                "checksum": checksum,
                "device": str(next(model.parameters()).device),
                "backend": dist.get_backend(),
            }
        ),
        flush=True,
    )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
