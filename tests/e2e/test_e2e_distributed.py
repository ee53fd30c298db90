"""End-to-end: CUDA-written distributed training under torchrun (2 processes), unmodified, on the
simulated MUSA devices: ``python -m torchada.run --simulate -m torch.distributed.run ...`` and,
separately, ``python -m torch.distributed.run ...`` of the program with ``import torchada`` as
its first line. Each rank writes what it measured to a JSON file; the test compares the ranks."""

from __future__ import annotations

import json
import math
import os

import pytest
from conftest import E2E_MODES, REPO

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("mode", E2E_MODES)]


def _ranks(r, out_dir) -> list:
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    return [json.loads((out_dir / f"rank{i}.json").read_text()) for i in (0, 1)]


def test_ddp_nccl_script_under_torchrun(mode, cuda_program, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    prog = os.path.join(REPO, "examples", "ddp_cuda.py")
    r = cuda_program(mode, prog, ["--out", out_dir], workdir=tmp_path, torchrun=True)
    ranks = _ranks(r, out_dir)
    for i, res in enumerate(ranks):
        assert res["rank"] == res["local_rank"] == i and res["world"] == 2
        assert res["backend"] == "nccl"  # runs as MCCL, named as on CUDA (docs/distributed.md)
        assert res["device"] == f"musa:{i}"  # torch.cuda.set_device(local_rank), .cuda(i)
        assert res["all_reduce_sum"] == [3.0, 6.0] and res["all_reduce_max"] == 2.0
        assert res["all_gather"] == [0.0, 10.0]
        losses = res["losses"]
        assert all(math.isfinite(v) for v in losses) and losses[-1] < 0.8 * losses[0]
        # DDP's averaged gradients reproduce full-batch training on the CPU.
        assert res["max_diff_from_cpu_reference"] < 1e-5
    a, b = ranks
    assert a["weights"] == b["weights"] and a["checksum"] == b["checksum"]
    assert a["mean_last"] == b["mean_last"]
    assert a["mean_last"] == pytest.approx((a["losses"][-1] + b["losses"][-1]) / 2)
    assert a["losses"] != b["losses"]  # each rank trained on its own shard


def test_fsdp2_fully_shard_on_a_cuda_device_mesh(mode, cuda_program, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    prog = os.path.join(REPO, "tests", "e2e", "e2e_programs", "fsdp2_cuda.py")
    r = cuda_program(mode, prog, ["--out", out_dir], workdir=tmp_path, torchrun=True)
    ranks = _ranks(r, out_dir)
    for i, res in enumerate(ranks):
        assert res["mesh_device_type"] == "musa"  # init_device_mesh("cuda", ...)
        assert res["param_type"] == "DTensor" and res["local_shard_device"] == f"musa:{i}"
        assert res["local_shard_rows"] == 32  # a (64, 16) weight split over two ranks
        assert res["max_diff_from_cpu_reference"] < 1e-4
        losses = res["losses"]
        assert all(math.isfinite(v) for v in losses) and losses[-1] < 0.5 * losses[0]
    assert ranks[0]["checksum"] == ranks[1]["checksum"]


def check_backend_name_ranks(ranks, devices) -> None:
    """What each rank of e2e_programs/backend_name_cuda.py saw: CUDA's name, and the GPU path
    every branch on it takes."""
    for i, (res, device) in enumerate(zip(ranks, devices)):
        assert res["rank"] == i
        assert res["backend"] == "nccl" and res["is_NCCL"] and res["Backend_eq"]
        assert res["config"] == "cuda:nccl" and res["names"] == ["nccl", "nccl"]
        assert res["stats"] == [3.0, device]  # the all_reduce, on the GPU
        assert res["lightning_barrier_device_ids"] == [[int(device[-1])]]
        assert res["signal"] == [device, [0, 1]]
        assert res["grad_device"] == device and res["all_gather_grad"] == res["cpu_grad"]
        assert res["mixed"] == ["cuda:nccl,cpu:gloo"] * 2
        assert res["mixed_sums"] == [[2.0, 2.0], [2.0, 2.0]]
        assert res["plain"] == ["nccl", 4.0]  # new_group() with no backend: the default's
        assert res["objects"] == [{"rank": 0}, {"rank": 1}]
    assert ranks[0]["cpu_grad"] != ranks[1]["cpu_grad"]


def test_code_that_branches_on_the_backend_name(mode, cuda_program, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    prog = os.path.join(REPO, "tests", "e2e", "e2e_programs", "backend_name_cuda.py")
    r = cuda_program(mode, prog, [out_dir], workdir=tmp_path, torchrun=True)
    check_backend_name_ranks(_ranks(r, out_dir), ["musa:0", "musa:1"])
