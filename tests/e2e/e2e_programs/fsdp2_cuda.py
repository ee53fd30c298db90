"""FSDP2 (``fully_shard``) on a CUDA device mesh, as written for NVIDIA GPUs.

torchrun --nproc-per-node 2 fsdp2_cuda.py --out DIR

Every rank builds the same model, shards it over ``init_device_mesh("cuda", (world,))`` and
trains on its own data; a CPU reference trained on all ranks' data from the same initial weights
must end with the same (gathered) weights. Each rank writes DIR/rank<N>.json.
"""

import argparse
import copy
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


def shard(rank: int):
    g = torch.Generator().manual_seed(200 + rank)
    x = torch.randn(32, 16, generator=g)
    return x, x[:, :4].cos()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    dist.init_process_group(backend="nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    mesh = init_device_mesh("cuda", (world,))

    torch.manual_seed(0)  # the same initial weights everywhere
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
    model.append(nn.Linear(64, 4))
    reference = copy.deepcopy(model)
    model.cuda()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    ref_opt = torch.optim.Adam(reference.parameters(), lr=1e-2)

    x, y = (t.cuda() for t in shard(rank))
    shards = [shard(r) for r in range(world)]
    all_x, all_y = torch.cat([s[0] for s in shards]), torch.cat([s[1] for s in shards])
    losses = []
    for _ in range(args.steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        ref_opt.zero_grad()
        nn.functional.mse_loss(reference(all_x), all_y).backward()
        ref_opt.step()

    local = next(iter(model.parameters()))
    full = [p.full_tensor().detach().cpu().reshape(-1) for p in model.parameters()]
    weights = torch.cat(full)
    ref_weights = torch.cat([p.detach().reshape(-1) for p in reference.parameters()])
    result = {
        "rank": rank,
        "mesh_device_type": mesh.device_type,
        "param_type": type(local).__name__,
        "local_shard_device": str(local.to_local().device),
        "local_shard_rows": local.to_local().shape[0],
        "losses": losses,
        "checksum": weights.double().sum().item(),
        "max_diff_from_cpu_reference": (weights - ref_weights).abs().max().item(),
    }
    print(json.dumps(result), flush=True)
    if args.out:
        with open(os.path.join(args.out, f"rank{rank}.json"), "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
