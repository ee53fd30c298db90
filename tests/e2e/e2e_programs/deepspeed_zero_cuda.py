"""DeepSpeed ZeRO (stages 1, 2 and 3; float32, bfloat16 and float16) on two ranks, written the
way CUDA DeepSpeed scripts are: the device comes from torch.cuda.is_available() and DeepSpeed
picks its accelerator by itself. Each rank trains on its half of a fixed batch; the result is
checked against the same model trained on the CPU in this process on the whole batch (data
parallel with averaged gradients is full-batch training). Every run is one engine in the same
process group; argv may name the runs ("1:fp32 3:bf16"), all nine by default. DeepSpeed allows
float16 only where the compute capability's major is 7 or more; it is checked against the float32
CPU run. Rank 0 prints one JSON line with a result per run."""

import json
import os
import sys

import torch
import torch.distributed as dist

STEPS = 4
LR = 1e-2


def make_model():
    torch.manual_seed(1234)
    layers = [torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(32, 1))


def batch():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(16, 8, generator=g)
    y = torch.sin(x.sum(dim=1, keepdim=True))
    return x, y


def cpu_reference(dtype):
    """Full-batch AdamW on the CPU with DeepSpeed's default gradient clipping (1.0). For bfloat16
    the forward and backward run on a bfloat16 copy of float32 master weights, as DeepSpeed keeps
    them; its per-rank bfloat16 gradients round differently, so that comparison is looser."""
    master = make_model()
    net = make_model().to(dtype)
    opt = torch.optim.AdamW(master.parameters(), lr=LR, weight_decay=0.0)
    x, y = batch()
    losses = []
    for _ in range(STEPS):
        net.load_state_dict({k: v.to(dtype) for k, v in master.state_dict().items()})
        net.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x.to(dtype)).float(), y)
        loss.backward()
        for p_master, p in zip(master.parameters(), net.parameters()):
            p_master.grad = p.grad.float()
        torch.nn.utils.clip_grad_norm_(master.parameters(), 1.0)  # DeepSpeed's default clipping
        opt.step()
        losses.append(loss.item())
    return {k: v.float() for k, v in master.state_dict().items()}, losses


def train(stage, dtype_name):
    import deepspeed
    from deepspeed.accelerator import get_accelerator

    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype_name, torch.float32)
    config = {
        "train_micro_batch_size_per_gpu": 16 // world,
        "gradient_accumulation_steps": 1,
        "zero_optimization": {"stage": stage},
        "bf16": {"enabled": dtype_name == "bf16"},
        "fp16": {"enabled": dtype_name == "fp16"},
        "steps_per_print": 10**6,
    }
    net = make_model()
    opt = torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=0.0)
    engine, _, _, _ = deepspeed.initialize(model=net, optimizer=opt, config=config)
    x, y = batch()
    shard = slice(rank * 16 // world, (rank + 1) * 16 // world)
    xb, yb = x[shard].to(engine.device).to(dtype), y[shard].to(engine.device)
    losses, devices = [], set()
    for _ in range(STEPS):
        out = engine(xb)
        devices.add(str(out.device))
        loss = torch.nn.functional.mse_loss(out.float(), yb)
        engine.backward(loss)
        engine.step()
        full = loss.detach().clone()
        dist.all_reduce(full)
        losses.append(full.item() / world)
    if stage == 3:
        with deepspeed.zero.GatheredParameters(list(engine.module.parameters())):
            state = engine.module.state_dict()
            weights = {k: v.detach().float().cpu().clone() for k, v in state.items()}
    else:
        weights = {k: v.detach().float().cpu() for k, v in engine.module.state_dict().items()}
    # bf16, fp16: compare the optimizer's float32 master weights where the engine exposes them.
    master = None
    if dtype_name != "fp32" and stage < 3:
        from deepspeed.utils import safe_get_full_fp32_param

        named = engine.module.named_parameters()
        master = {n: safe_get_full_fp32_param(p).detach().cpu() for n, p in named}
    every_rank = [None] * world
    dist.all_gather_object(every_rank, sorted(devices))
    result = None
    if rank == 0:
        ref, ref_losses = cpu_reference(torch.float32 if dtype_name == "fp16" else dtype)
        diff = max((weights[k] - ref[k]).abs().max().item() for k in ref)
        mdiff = None
        if master is not None:
            mdiff = max((master[n] - ref[n]).abs().max().item() for n in master)
        result = {
            "stage": stage,
            "dtype": dtype_name,
            "is_available": torch.cuda.is_available(),
            "accelerator": get_accelerator()._name,
            "capability": list(torch.cuda.get_device_capability()),
            "fp16_supported": get_accelerator().is_fp16_supported(),
            "engine_device": str(engine.device),
            "output_devices": sorted(d for ds in every_rank for d in ds),
            "param_dtype": str(next(engine.module.parameters()).dtype),
            "optimizer": type(engine.optimizer).__name__,
            "losses": losses,
            "cpu_losses": ref_losses,
            "max_weight_diff_vs_cpu": diff,
            "max_master_diff_vs_cpu": mdiff,
        }
    engine.destroy()
    dist.barrier()
    return result


def main():
    import deepspeed

    dtypes = ("fp32", "bf16", "fp16")
    everything = [(stage, dtype) for stage in ("1", "2", "3") for dtype in dtypes]
    # The deepspeed launcher adds --local_rank=N; torchrun passes LOCAL_RANK in the environment.
    runs = [a.split(":") for a in sys.argv[1:] if ":" in a] or everything
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    deepspeed.init_distributed()
    results = [train(int(stage), dtype) for stage, dtype in runs]
    if dist.get_rank() == 0:
        print(json.dumps({"device": device, "runs": results}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
