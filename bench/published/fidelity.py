# Exercises the published adapter's advertised features on the simulator; prints what fails.
import torch

import torchada  # noqa: F401

checks = {
    "factory device=cuda": lambda: torch.zeros(2, device="cuda").device.type,
    "tensor.cuda(1)": lambda: torch.ones(2).cuda(1).device,
    "Module.cuda()": lambda: next(torch.nn.Linear(2, 2).cuda().parameters()).device,
    "torch.cuda.Stream/Event": lambda: (
        torch.cuda.Stream().cuda_stream,
        torch.cuda.Event().query(),
    ),
    "torch.cuda.amp.autocast": lambda: torch.cuda.amp.autocast()(lambda: 1)(),
    "torch.autocast('cuda') matmul dtype": lambda: _autocast(),
    "GradScaler": lambda: torch.cuda.amp.GradScaler().get_scale(),
    "torch.cuda.CUDAGraph": lambda: torch.cuda.CUDAGraph(),
    "torch.cuda.graph(cuda_graph=)": lambda: _graph(),
    "torch.cuda.nvtx.range_push": lambda: torch.cuda.nvtx.range_push("x"),
    "torch.cuda.memory_allocated": lambda: torch.cuda.memory_allocated(),
    "torch.cuda.cudart().cudaMemGetInfo": lambda: torch.cuda.cudart().cudaMemGetInfo(0),
    "torch.cuda.get_device_properties": lambda: torch.cuda.get_device_properties(0).name,
    "torch.cuda.nccl (attribute)": lambda: torch.cuda.nccl.version(),
    "torch.cuda.memory_cached": lambda: torch.cuda.memory_cached(),
    "torch.cuda.get_stream_from_external": lambda: torch.cuda.get_stream_from_external(1),
    "torch.cuda.default_generators": lambda: len(torch.cuda.default_generators),
    "torch.backends.cuda.is_built": lambda: torch.backends.cuda.is_built(),
    "ProfilerActivity.CUDA profile": lambda: _profile(),
    "dist nccl->mccl (world 1)": lambda: _dist(),
}


def _autocast():
    with torch.autocast("cuda", dtype=torch.float16):
        return (torch.ones(2, 2, device="cuda") @ torch.ones(2, 2, device="cuda")).dtype


def _graph():
    g = torch.cuda.CUDAGraph()
    x = torch.zeros(2, device="cuda")
    with torch.cuda.graph(cuda_graph=g):
        y = x + 1
    x.fill_(2)
    g.replay()
    return y.tolist()


def _profile():
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        torch.ones(2, device="cuda").sum()
    return "ok"


def _dist():
    import os

    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=0, world_size=1)
    t = torch.ones(2, device="cuda")
    dist.all_reduce(t)
    backend = dist.get_backend()
    dist.destroy_process_group()
    return backend, t.tolist()


for name, fn in checks.items():
    try:
        print(f"OK    {name}: {fn()}")
    except Exception as e:  # noqa: BLE001 - a report of what fails
        print(f"FAIL  {name}: {type(e).__name__}: {str(e).splitlines()[0][:150]}")
