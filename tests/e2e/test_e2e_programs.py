"""End-to-end: unmodified CUDA-written programs on the simulated MUSA device, each run in a fresh
process through ``python -m torchada.run --simulate`` and, separately, with ``import torchada``
as its first line (see ``run_cuda_program`` in conftest.py). Each program prints one JSON line
of what it measured; the checks are on results (against CPU or eager references), not on the
program having run."""

from __future__ import annotations

import importlib.util
import json
import math
import os

import pytest
import torch
from conftest import E2E_MODES, REPO, decreasing, program_result

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("mode", E2E_MODES)]

EXAMPLES = os.path.join(REPO, "examples")
PROGRAMS = os.path.join(REPO, "tests", "e2e", "e2e_programs")


@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None,
    reason="transformers is not installed (it is in the 'test' extra)",
)
def test_hf_causal_lm_forward_generate_amp_training_and_checkpointing(mode, cuda_program, tmp_path):
    r = cuda_program(mode, os.path.join(EXAMPLES, "hf_causal_lm_cuda.py"), workdir=tmp_path)
    out = program_result(r)
    assert out["logits_device"] == "musa:0" and out["param_device"] == "musa:0"
    assert out["max_abs_logit_diff"] < 1e-4  # against the same model on the CPU
    assert out["tokens"] == out["ref_tokens"]  # greedy generation, CPU tokens
    assert len(out["tokens"][0]) == 12 + 8
    assert out["autocast_logits_dtypes"] == ["torch.float16"]  # autocast("cuda") took effect
    assert out["param_dtype"] == "torch.float32" and out["scale"] > 1
    assert decreasing(out["losses"]) and len(out["losses"]) == 6
    # Gradient checkpointing recomputes attention dropout with the forward's masks.
    assert out["checkpointing_grad_diff"] <= 1e-6


def test_programs_that_ask_is_available_run_on_the_gpu(mode, cuda_program, tmp_path):
    # No flag, no environment: the "auto" device, pinned batches, the scaler, bfloat16 where it
    # is supported, fused AdamW, Lightning's accelerator="auto" and accelerate's default device.
    out = program_result(
        cuda_program(mode, os.path.join(PROGRAMS, "auto_device_cuda.py"), workdir=tmp_path)
    )
    assert out["is_available"] is True and out["device"] == "cuda"
    assert out["version_cuda"] == torch.version.cuda  # None on MUSA's CPU build of torch
    assert out["fp32"] == {"pinned": True, "devices": ["musa:0"]}
    assert out["max_weight_diff_vs_cpu"] <= 1e-6  # the same training as on the CPU
    gpt = out["gpt_style"]
    assert gpt["dtype"] == "bfloat16" and gpt["autocast_dtypes"] == ["torch.bfloat16"]
    assert gpt["fused"] and not gpt["scaler_enabled"] and gpt["param_device"] == "musa:0"
    assert decreasing(gpt["losses"])
    assert out["scaler"] == {"enabled": True, "scale": 65536.0}
    assert out["lightning"] == {
        "accelerator": "CUDAAccelerator",
        "root_device": "cuda:0",
        "devices": ["musa:0"],
    }
    assert out["accelerate"]["param_device"] == out["accelerate"]["batch_device"] == "musa:0"


def test_dataloader_workers_side_stream_checkpoint_and_resume(mode, cuda_program, tmp_path):
    prog = os.path.join(EXAMPLES, "dataloader_resume_cuda.py")
    ckpt, full, resumed = (str(tmp_path / n) for n in ("ckpt.pt", "full.pt", "resumed.pt"))
    a = program_result(
        cuda_program(
            mode,
            prog,
            ["--epochs", 4, "--save-at", 2, "--ckpt", ckpt, "--final", full],
            workdir=tmp_path,
        )
    )
    b = program_result(
        cuda_program(
            mode, prog, ["--epochs", 4, "--resume", ckpt, "--final", resumed], workdir=tmp_path
        )
    )
    for run in (a, b):
        assert run["all_pinned"] and run["workers"] == [0, 1]  # pinned batches from 2 workers
        assert run["param_device"] == "musa:0"
        assert all(ms > 0 for ms in run["epoch_ms"])  # timed CUDA events
    assert decreasing(a["epoch_losses"]) and a["first_epoch"] == 0 and a["resumed_on"] is None
    assert b["first_epoch"] == 2 and b["resumed_on"] == "musa:0"  # map_location="cuda"
    # Resumed training is uninterrupted training: same epoch losses, same final weights.
    assert b["epoch_losses"] == a["epoch_losses"][2:]
    wa, wb = torch.load(full), torch.load(resumed)
    assert wa.keys() == wb.keys()
    for k in wa:
        assert wa[k].device.type == "cpu" and torch.equal(wa[k], wb[k]), k


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_torch_compile_matches_eager(mode, backend, cuda_program, tmp_path):
    prog = os.path.join(PROGRAMS, "compile_cuda.py")
    out = program_result(cuda_program(mode, prog, ["--backend", backend], workdir=tmp_path))
    assert out["backend"] == backend and out["device"] == "musa:0"
    assert out["fwd_diff"] < 1e-5 and out["grad_diff"] < 1e-5 and out["weight_diff"] < 1e-5
    for e, c in zip(out["losses_eager"], out["losses_compiled"]):
        assert c == pytest.approx(e, rel=1e-5)
    assert decreasing(out["losses_compiled"])
    # torch.arange(device="cuda"), torch.ones(device=x.device), x.is_cuda and a device comparison
    # inside compiled code give eager's result.
    assert out["created_device"] == "musa:0" and out["created_diff"] < 1e-5


def test_lightning_trainer_cuda_and_gpu_16_mixed(mode, cuda_program, tmp_path):
    out = program_result(
        cuda_program(mode, os.path.join(PROGRAMS, "lightning_fit_cuda.py"), workdir=tmp_path)
    )
    for run, precision, dtype in (("full", "32-true", "float32"), ("mixed", "16-mixed", "float16")):
        got = out[run]
        assert got["accelerator"] == "CUDAAccelerator" and got["root_device"] == "cuda:0"
        assert got["precision"] == precision
        assert got["devices"] == ["musa:0"]  # batches and weights, seen in training_step
        assert got["dtypes"] == [f"torch.{dtype}"] and got["is_cuda"] == [True]
        assert got["steps"] == 3 * 8 and got["last_loss"] < got["first_loss"] / 10
    assert out["memory_allocated"] > 0


def test_lightning_ddp_on_two_devices_starts_its_own_ranks(mode, cuda_program, tmp_path):
    # Lightning runs the script again for rank 1, in a child process of the program: with the
    # runner, that child has no torchada of its own but the one it inherits.
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    prog = os.path.join(PROGRAMS, "lightning_ddp_cuda.py")
    r = cuda_program(mode, prog, [out_dir], workdir=tmp_path)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    ranks = [json.loads((out_dir / f"rank{i}.json").read_text()) for i in (0, 1)]
    assert ranks[0]["pid"] != ranks[1]["pid"]
    for i, res in enumerate(ranks):
        assert res["rank"] == i and res["world"] == 2
        assert res["accelerator"] == "CUDAAccelerator" and res["root_device"] == f"cuda:{i}"
        assert res["backend"] == "nccl"  # strategy "ddp" asks for nccl, which MCCL runs
        assert res["seen"] == [[f"musa:{i}", True, f"musa:{i}"]]
        # 128 samples, 2 ranks, batches of 8, 3 epochs
        assert res["steps"] == 3 * 8 and res["last_loss"] < res["first_loss"] / 4
    # DDP keeps the replicas equal: averaged gradients, one update.
    assert ranks[0]["weights"] == ranks[1]["weights"]


# PyPI's torch other than 2.13.0 is a CUDA build, which torch_musa never runs on: its own NCCL
# bindings (torch._C._nccl_*) and NVIDIA's libcudart are in the process, and torch's CUDA code
# reaches them first. The programs below meet them there only.
CUDA_BUILD = torch.version.cuda is not None
on_cpu_build = pytest.mark.skipif(
    CUDA_BUILD, reason="a CUDA build of torch: its own NCCL bindings and libcudart come first"
)


@on_cpu_build
def test_data_parallel_and_cuda_comm(mode, cuda_program, tmp_path):
    # nn.DataParallel scatters, replicates, gathers and reduces gradients through
    # torch.nn.parallel.comm, which torch_musa's build of torch runs on musa devices.
    prog = os.path.join(PROGRAMS, "data_parallel_cuda.py")
    out = program_result(cuda_program(mode, prog, workdir=tmp_path))
    assert out["device_ids"] == [0, 1] and out["param_device"] == "musa:0"
    assert decreasing(out["losses"]) and out["weight_diff"] < 1e-5  # as one device on the CPU
    assert out["broadcast"] == [["musa:0", [0.0, 1.0, 2.0]], ["musa:1", [0.0, 1.0, 2.0]]]
    assert out["scatter"] == [["musa:0", [0.0, 1.0, 2.0]], ["musa:1", [3.0, 4.0, 5.0]]]
    assert out["gather"] == ["musa:1", [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]


def test_hf_pipeline_and_device_map_cuda(mode, cuda_program, tmp_path):
    prog = os.path.join(PROGRAMS, "hf_pipeline_cuda.py")
    out = program_result(cuda_program(mode, prog, [tmp_path], workdir=tmp_path))
    assert out["pipeline_model_device"] == "musa:0" and out["pipeline0_device"] == "musa:0"
    for key in ("scores", "scores0"):
        assert len(out[key]) == 3
        for got, ref in zip(out[key], out["ref_scores"]):
            assert got.keys() == {"POSITIVE", "NEGATIVE"}
            for label in got:
                assert got[label] == pytest.approx(ref[label], abs=1e-5)
    assert out["device_map_device"] == "musa:0" and out["logits_device"] == "musa:0"
    assert out["max_logit_diff"] < 1e-4


def test_diffusers_cuda_generator_and_model_cpu_offload(mode, cuda_program, tmp_path):
    out = program_result(
        cuda_program(mode, os.path.join(PROGRAMS, "diffusers_cuda.py"), workdir=tmp_path)
    )
    assert out["unet_device"] == "musa:0" and out["generator_device"] == "musa:0"
    assert out["shape"] == [2, 8, 8, 3]
    assert out["repeat_diff"] == 0.0 and out["other_seed_diff"] > 0.01  # seeded by the generator
    # With the model offloaded to the CPU between calls, it still runs on musa: same images.
    assert out["execution_device"] == "musa:0" and out["unet_device_after_offload"] == "cpu"
    assert out["offload_diff"] < 1e-5


def test_accelerate_fp16_training_loop(mode, cuda_program, tmp_path):
    prog = os.path.join(PROGRAMS, "accelerate_fp16_cuda.py")
    out = program_result(cuda_program(mode, prog, workdir=tmp_path))
    assert out["is_cuda_device"] and out["inputs"] == ["musa:0"]
    assert out["param_device"] == "musa:0" and out["param_dtype"] == "torch.float32"
    assert out["inner_dtypes"] == ["torch.float16"] and out["output_dtypes"] == ["torch.float32"]
    assert out["scaler"] == "GradScaler" and out["scale"] > 1
    # The optimizer made before prepare() moved the model trains the model's own parameters.
    assert decreasing(out["epoch_losses"]) and out["epoch_losses"][-1] < out["epoch_losses"][0] / 2
    assert out["memory_allocated"] > 0


def test_cuda_graphs_capture_replay_and_graphed_callables(mode, cuda_program, tmp_path):
    out = program_result(
        cuda_program(mode, os.path.join(PROGRAMS, "cuda_graphs_cuda.py"), workdir=tmp_path)
    )
    assert out["inference_diff"] < 1e-6
    # A captured training iteration, replayed, trains exactly as the eager loop does.
    assert out["training_weight_diff"] < 1e-6
    assert len(out["training_losses"]) == 5
    assert all(math.isfinite(v) for v in out["training_losses"])
    assert out["graphed_callables_weight_diff"] < 1e-6
    assert out["capturing_after"] is False


@pytest.mark.parametrize(
    "route", ["env:musa", "env:default", "find_library", pytest.param("maps", marks=on_cpu_build)]
)
def test_serving_style_ctypes_wrappers_find_and_drive_the_runtime_and_nccl(
    mode, route, cuda_program, tmp_path, monkeypatch
):
    from torchada._simulator import sdk

    libs = sdk.library_dir()
    if route == "env:musa":  # a MUSA user points the variables at the MUSA libraries
        monkeypatch.setenv("VLLM_CUDART_SO_PATH", str(libs / "libmusart.so"))
        monkeypatch.setenv("VLLM_NCCL_SO_PATH", str(libs / "libmccl.so"))
    elif route == "env:default":  # left at the CUDA names a CUDA machine would use
        monkeypatch.setenv("VLLM_CUDART_SO_PATH", "/usr/local/cuda/lib64/libcudart.so.12")
        monkeypatch.delenv("VLLM_NCCL_SO_PATH", raising=False)
    prog = os.path.join(PROGRAMS, "serving_ctypes_cuda.py")
    out = program_result(cuda_program(mode, prog, [route.split(":")[0]], workdir=tmp_path))
    assert out["errors"] == []
    found = {
        "env:musa": ("libmusart.so", "libmccl.so"),
        "env:default": ("libcudart.so.12", "libnccl.so.2"),
        "find_library": ("libmusart.so", "libmccl.so"),
        "maps": ("libcudart.so", "libmccl.so"),  # torchada's forwarding library, found loaded
    }[route]
    assert (out["cudart"], out["nccl"]) == found
    assert out["round_trip"] is True  # cudaMemcpy to and from torch's musa and CPU tensors
    # IPC needs the hardware: the simulated runtime answers as documented, and the 64-byte
    # handle passed by value does not crash the process.
    assert out["ipc"] == "CUDART error: operation not supported"
    assert out["nccl_version"].count(".") == 2
    assert out["ranks"] == {
        "0": {"device": "musa:0", "all_reduce": [3.0] * 8, "received": [20.0] * 4},
        "1": {"device": "musa:1", "all_reduce": [3.0] * 8, "received": [10.0] * 4},
    }
