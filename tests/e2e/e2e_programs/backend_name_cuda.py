"""CUDA code that branches on the process group's backend name, as training code writes it: the
device of its statistics (``"cuda" if dist.get_backend() == "nccl" else "cpu"``), Lightning's
DDP barrier (``device_ids`` only for NCCL), the device a distributed signal handler gathers its
flags on (NCCL: the local GPU, gloo: the CPU, anything else an error), autograd through
``torch.distributed.nn.functional.all_gather`` (whose backward reduce-scatters for NCCL), a
``"cuda:nccl,cpu:gloo"`` group and a group made with no backend. Run under torchrun with two
ranks; each writes what it saw to OUT/rank<N>.json."""

import json
import os
import sys

import torch
import torch.distributed as dist


def signal_device(local_rank):
    # A distributed signal handler's choice (Megatron-LM's --exit-signal-handler does this).
    backend = dist.get_backend()
    if backend == "nccl":
        return torch.device(f"cuda:{local_rank}")
    if backend == "gloo":
        return torch.device("cpu")
    raise RuntimeError(f"unsupported backend {backend}")


def lightning_barrier(local_rank):
    """Lightning's own DDPStrategy.barrier(), with the calls it makes recorded."""
    from lightning.fabric.plugins.environments import TorchElasticEnvironment
    from lightning.pytorch.strategies import DDPStrategy

    strategy = DDPStrategy(
        parallel_devices=[torch.device("cuda", i) for i in range(2)],
        cluster_environment=TorchElasticEnvironment(),
    )
    strategy.set_world_ranks()
    assert strategy.local_rank == local_rank
    calls = []
    barrier = torch.distributed.barrier

    def recorded(*args, **kwargs):
        calls.append(kwargs.get("device_ids"))
        return barrier(*args, **kwargs)

    torch.distributed.barrier = recorded
    try:
        strategy.barrier()
    finally:
        torch.distributed.barrier = barrier
    return calls


def all_gather_grads(rank, world):
    """Rank r's input x_r; each rank k's loss weighs every gathered x_i by (k + 1)(i + 2)."""
    from torch.distributed.nn.functional import all_gather

    def inputs():
        return [torch.arange(3.0) + 10 * r for r in range(world)]

    def loss(k, gathered):
        return sum(((k + 1) * (i + 2) * t**2).sum() for i, t in enumerate(gathered))

    x = inputs()[rank].to("cuda").requires_grad_()
    loss(rank, all_gather(x)).backward()
    cpu = [t.requires_grad_() for t in inputs()]  # every rank's loss, on the CPU
    sum(loss(k, cpu) for k in range(world)).backward()
    return x.grad.cpu().tolist(), cpu[rank].grad.tolist(), str(x.grad.device)


def main():
    out_dir = sys.argv[1]
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    group = dist.group.WORLD
    res = {"rank": rank, "backend": dist.get_backend()}
    res["is_NCCL"] = dist.get_backend() is dist.Backend.NCCL
    res["Backend_eq"] = dist.Backend(dist.get_backend()) == dist.Backend.NCCL
    res["config"] = dist.get_backend_config()
    res["names"] = [group.name(), group._get_backend_name()]

    # The program: statistics on the device the backend name picks.
    x = float(rank + 1)
    stats = torch.tensor([x], device="cuda" if dist.get_backend() == "nccl" else "cpu")
    dist.all_reduce(stats)
    res["stats"] = [stats.item(), str(stats.device)]

    res["lightning_barrier_device_ids"] = lightning_barrier(local_rank)

    flag = torch.tensor([rank], device=signal_device(local_rank))
    flags = [torch.empty_like(flag) for _ in range(world)]
    dist.all_gather(flags, flag)
    res["signal"] = [str(flag.device), [int(f.item()) for f in flags]]

    res["all_gather_grad"], res["cpu_grad"], res["grad_device"] = all_gather_grads(rank, world)

    mixed = dist.new_group(backend="cuda:nccl,cpu:gloo")
    on_gpu, on_cpu = torch.ones(2, device="cuda"), torch.ones(2)
    dist.all_reduce(on_gpu, group=mixed)
    dist.all_reduce(on_cpu, group=mixed)
    res["mixed"] = [dist.get_backend(mixed), dist.get_backend_config(mixed)]
    res["mixed_sums"] = [on_gpu.tolist(), on_cpu.tolist()]

    plain = dist.new_group()  # the default group's backend
    t = torch.full((1,), 2.0, device="cuda")
    dist.all_reduce(t, group=plain)
    res["plain"] = [dist.get_backend(plain), t.item()]

    gathered = [None] * world
    dist.all_gather_object(gathered, {"rank": rank})
    res["objects"] = gathered

    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(res, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
