"""FSDP2 on a CPU mesh over gloo, in a program that also has the GPU: CPU-offload set-ups and
unit tests shard on the CPU. One process (world size 1). Prints one JSON line."""

import copy
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
dist.init_process_group("gloo", rank=0, world_size=1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
reference = copy.deepcopy(model)
mesh = init_device_mesh("cpu", (1,))
fully_shard(model, mesh=mesh)
x = torch.randn(4, 8)
loss = model(x).sum()
loss.backward()
ref_loss = reference(x).sum()
ref_loss.backward()
weight = model[0].weight
out = {
    "mesh_device_type": mesh.device_type,
    "param_type": type(weight).__name__,
    "local_device": str(weight.to_local().device),
    "loss_diff": abs(float(loss) - float(ref_loss)),
    "grad_diff": float((weight.grad.full_tensor() - reference[0].weight.grad).abs().max()),
    "gpu": str(torch.ones(1, device="cuda").device),
}
dist.destroy_process_group()
print(json.dumps(out))
