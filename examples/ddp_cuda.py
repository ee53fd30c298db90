"""A CUDA-written DDP training script (torchrun --nproc-per-node N ddp_cuda.py [--out DIR]).

Nothing here knows about MUSA: it asks torch.cuda.is_available() and then takes backend "nccl",
device_ids=[local_rank] and torch.cuda.set_device (Gloo on the CPU otherwise), as CUDA examples do.
Each rank starts from different random weights (DDP makes rank 0's everyone's) and trains on its
own shard. It checks itself against a CPU reference: full-batch training on all shards from rank
0's initial weights is what DDP's gradient averaging must reproduce.

Prints one JSON line per rank (losses, all_reduce results, a checksum and the final weights) and,
with --out DIR, writes it to DIR/rank<N>.json.
"""

import argparse
import copy
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def shard(rank: int):
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own shard
    x = torch.randn(64, 8, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    use_cuda = torch.cuda.is_available()
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(local_rank)

    # Collectives: each rank contributes rank + 1.
    t = torch.tensor([rank + 1.0, 2.0 * (rank + 1)], device=device)
    dist.all_reduce(t)
    all_reduce_sum = t.tolist()
    t = torch.tensor([float(rank + 1)], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    all_reduce_max = t.item()
    gathered = [torch.empty(1, device=device) for _ in range(world)]
    dist.all_gather(gathered, torch.tensor([10.0 * rank], device=device))

    torch.manual_seed(1234 + rank)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
    ddp = DDP(model, device_ids=[local_rank] if use_cuda else None)
    reference = copy.deepcopy(model).cpu()  # rank 0's initial weights, after DDP's broadcast
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.05)

    x, y = shard(rank)
    x, y = x.to(device), y.to(device)
    shards = [shard(r) for r in range(world)]
    all_x = torch.cat([s[0] for s in shards])
    all_y = torch.cat([s[1] for s in shards])
    losses = []
    for _ in range(args.steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        ref_opt.zero_grad()
        nn.functional.mse_loss(reference(all_x), all_y).backward()
        ref_opt.step()

    total = torch.tensor([losses[-1]], device=device)
    dist.all_reduce(total)
    weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()
    ref_weights = torch.cat([p.detach().reshape(-1) for p in reference.parameters()])
    result = {
        "rank": rank,
        "world": world,
        "local_rank": local_rank,
        "backend": dist.get_backend(),
        "device": str(next(model.parameters()).device),
        "all_reduce_sum": all_reduce_sum,
        "all_reduce_max": all_reduce_max,
        "all_gather": [g.item() for g in gathered],
        "losses": losses,
        "mean_last": total.item() / world,
        "checksum": weights.double().sum().item(),
        "weights": weights.tolist(),
        "max_diff_from_cpu_reference": (weights - ref_weights).abs().max().item(),
    }
    print(json.dumps(result), flush=True)
    if args.out:
        with open(os.path.join(args.out, f"rank{rank}.json"), "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
