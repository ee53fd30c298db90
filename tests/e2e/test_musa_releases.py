"""What changes with the torch_musa release (2.7.1, 2.9.1.post1, 2.11.0.post2), seen from CUDA
programs: mm/bmm with out_dtype give the right values (the later releases' own kernels return
zeros and the untouched buffer), the torch.cuda names those releases gained work unchanged, and
graph rotation acts on the installed release's MUSAGraph layout or stays off."""

from __future__ import annotations

import os

import pytest
import torch

from tests.conftest import program_result

PROGRAMS = os.path.join(os.path.dirname(__file__), "e2e_programs")
NAMES = os.path.join(PROGRAMS, "release_names_cuda.py")


@pytest.mark.parametrize("mode", ["runner", "import"])
def test_cuda_program_with_release_names_and_out_dtype(mode, cuda_program, tmp_path):
    out = program_result(cuda_program(mode, NAMES, [], workdir=tmp_path))
    if hasattr(torch.ops.aten.mm, "dtype"):
        assert out["mm"][:2] == ["torch.float32", "musa"] and out["mm"][2] < 1e-3
        assert out["bmm"][0] == "torch.float32" and out["bmm"][1] < 1e-3
        assert out["mm_graph"] < 1e-3
    assert out["props"][1] is True and out["props"][0]
    assert out["sync_debug_mode"] == 0
    assert out["gencode"] is True and out["external_stream"] is True
    assert out["host_stats"] is True and out["alloc"] is True
    if hasattr(torch, "accelerator") and hasattr(torch.accelerator, "memory_allocated"):
        assert out["accelerator_allocated"] is True


# ---------------------------------------------------------------- the layout check itself
def _snap(flags: dict, graph: int = 0, exec_: int = 0) -> bytes:
    raw = bytearray(24)
    raw[0:8] = graph.to_bytes(8, "little")
    raw[8:16] = exec_.to_bytes(8, "little")
    for offset, value in flags.items():
        raw[offset] = value
    return bytes(raw)


def test_layout_check_accepts_2_7_1_and_refuses_2_9_1_post1_shape():
    from torchada._cuda import graph_rotation as gr

    before = _snap({})
    # torch_musa 2.7.1: capture_end sets has_graph_ (16) and has_graph_exec_ (17).
    assert gr._learn_plain(object, before, _snap({16: 1, 17: 1}, 0x10, 0x20)) == 17
    # 2.9.1.post1's layout seen without its API: has_graph_, capture_ended_, has_graph_exec_.
    with pytest.raises(gr._LayoutError, match=r"set flag bytes \[16, 17, 18\]"):
        gr._learn_plain(object, before, _snap({16: 1, 17: 1, 18: 1}, 0x10, 0x20))
    with pytest.raises(gr._LayoutError, match="graph_exec_ at bytes 0 and 8"):
        gr._learn_plain(object, before, _snap({16: 1, 17: 1}, 0x10, 0))
    with pytest.raises(gr._LayoutError, match="other than 0 -> 1"):
        gr._learn_plain(object, _snap({17: 3}), _snap({16: 1, 17: 1}, 0x10, 0x20))


def test_rotation_learns_the_installed_layout(torchada_on):
    import torch_musa

    from torchada._cuda import graph_rotation as gr

    x = torch.ones(2, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x * 3
    g.replay()
    assert y.tolist() == [3.0, 3.0]
    stats = gr.stats()
    if hasattr(torch_musa.MUSAGraph, "instantiate"):
        # 2.9.1.post1 and later: has_graph_exec_ follows capture_ended_ (MUSAGraph.h).
        assert stats["on"] and stats["has_graph_exec_offset"] == 18
    else:
        assert stats["on"] and stats["has_graph_exec_offset"] == 17


@pytest.mark.skipif(
    not hasattr(getattr(torch, "accelerator", None), "memory_allocated"),
    reason="this torch has no torch.accelerator memory functions (before 2.9)",
)
def test_accelerator_memory_native_where_the_release_serves_it(torchada_on):
    from torchada._torch import accelerator as served

    x = torch.empty(1 << 16, dtype=torch.uint8, device="cuda")
    allocated = torch.accelerator.memory_allocated()
    assert allocated == torch.musa.memory_allocated() and allocated >= 1 << 16
    native = served.native_memory()
    assert native in (True, False)
    if native:  # torch's own functions are back: torchada is out of the way
        assert torch.accelerator.memory_allocated is served._torch_memory["memory_allocated"]
    else:
        assert torch.accelerator.memory_allocated.__module__ == served.__name__
    del x


FSDP_CPU = os.path.join(PROGRAMS, "fsdp2_cpu_mesh.py")


# torch 2.7's DeviceMesh asks its own new_group for "cpu:gloo,cuda:nccl" here (CUDA is
# available): torchada's translation serves it (MCCL for the cuda part), as dist.new_group.
@pytest.mark.parametrize("mode", ["runner", "import"])
def test_fully_shard_on_a_cpu_mesh_takes_torchs_path(mode, cuda_program, tmp_path):
    out = program_result(cuda_program(mode, FSDP_CPU, [], workdir=tmp_path))
    assert out["mesh_device_type"] == "cpu" and out["param_type"] == "DTensor"
    assert out["local_device"] == "cpu" and out["gpu"] == "musa:0"
    assert out["loss_diff"] < 1e-6 and out["grad_diff"] < 1e-6


def test_fsdp2_routing_is_installed_exactly_where_torch_musa_wraps_fully_shard(torchada_on):
    import torch.distributed.fsdp as fsdp

    from torchada._distributed import fsdp2

    wrapped = fsdp2.musa_wrapper()
    if wrapped is None:  # a release that leaves fully_shard alone: torch's own function
        assert fsdp.fully_shard is fsdp._fully_shard._fully_shard.fully_shard
    else:
        assert fsdp.fully_shard.__code__.co_filename == fsdp2.__file__
