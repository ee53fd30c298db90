"""A CUDA program using torch.cuda names that torch_musa gained in 2.9.1.post1 and 2.11.0.post2,
and torch.mm/torch.bmm with out_dtype, eagerly and inside a CUDA graph. Prints one JSON line."""

import json

import torch

out = {}
a = torch.randn(8, 16, device="cuda", dtype=torch.float16)
b = torch.randn(16, 4, device="cuda", dtype=torch.float16)
want = a.float().cpu() @ b.float().cpu()
if hasattr(torch.ops.aten.mm, "dtype"):  # torch 2.8+: out_dtype
    mm = torch.mm(a, b, out_dtype=torch.float32)
    ba, bb = a.unsqueeze(0).repeat(3, 1, 1), b.unsqueeze(0).repeat(3, 1, 1)
    bmm = torch.bmm(ba, bb, out_dtype=torch.float32)
    out["mm"] = [str(mm.dtype), mm.device.type, float((mm.cpu() - want).abs().max())]
    out["bmm"] = [str(bmm.dtype), float((bmm.cpu() - want).abs().max())]
    g = torch.cuda.CUDAGraph()
    static_a = a.clone()
    with torch.cuda.graph(g):
        captured = torch.mm(static_a, b, out_dtype=torch.float32)
    static_a.mul_(2)
    g.replay()
    out["mm_graph"] = float((captured.cpu() - 2 * want).abs().max())
props = torch.cuda.get_device_properties()  # device=None, as torch.cuda allows
out["props"] = [props.name, props.total_memory > 0]
out["uuid"] = str(getattr(props, "uuid", None)) if hasattr(props, "uuid") else None
torch.cuda.set_sync_debug_mode(0)
out["sync_debug_mode"] = torch.cuda.get_sync_debug_mode()
out["gencode"] = isinstance(torch.cuda.get_gencode_flags(), str)
stream = torch.cuda.Stream()
external = torch.cuda.get_stream_from_external(stream.cuda_stream)
out["external_stream"] = external.cuda_stream == stream.cuda_stream
out["host_stats"] = isinstance(torch.cuda.host_memory_stats(), dict)
ptr = torch.cuda.caching_allocator_alloc(1024)
torch.cuda.caching_allocator_delete(ptr)
out["alloc"] = ptr != 0
if hasattr(torch, "accelerator") and hasattr(torch.accelerator, "memory_allocated"):
    x = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
    out["accelerator_allocated"] = torch.accelerator.memory_allocated() >= 1 << 20
    del x
print(json.dumps(out))
