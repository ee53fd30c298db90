"""What projects that integrated the published torchada rely on, beyond devices and ctypes:
CUDA_VISIBLE_DEVICES, FlexAttention, mm/bmm with out_dtype, private torch hooks, CUDA_HOME of a
cpp_extension imported early, and the published package's public helpers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest
import torch
from conftest import REPO, run_python, user_warnings

from torchada._core.torch_features import has_operator

# A CUDA build of torch (PyPI's 2.7.1) is the CUDA platform without torch_musa, and keeps its own
# CUDA bindings; torch_musa pairs with a CPU build.
CUDA_BUILD = torch.version.cuda is not None

# TORCHADA_ACTIVE=0: these processes start fresh, not as children of this test process (which
# has torchada on for the in-process tests below).
SIM = {"TORCHADA_SIMULATE": "1", "TORCHADA_ACTIVE": "0"}
COUNT = (
    "import json, os, torch; print(json.dumps([torch.cuda.device_count(), "
    "os.environ.get('MUSA_VISIBLE_DEVICES')]))"
)


def _last(r):
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ 1. CUDA_VISIBLE_DEVICES
@pytest.mark.parametrize("way", ["import", "runner"])
def test_cuda_visible_devices_takes_effect(way, tmp_path):
    env = {**SIM, "CUDA_VISIBLE_DEVICES": "1"}
    if way == "import":
        r = run_python("import torchada\n" + COUNT, env=env)
    else:
        script = tmp_path / "count.py"
        script.write_text(COUNT + "\n")
        r = subprocess.run(
            [sys.executable, "-m", "torchada.run", "--simulate", str(script)],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            cwd=REPO,
        )
    assert _last(r) == [1, "1"]


def test_children_follow_their_own_cuda_visible_devices():
    # The parent derives MUSA_VISIBLE_DEVICES from CUDA_VISIBLE_DEVICES=0,1; a launcher then
    # gives each worker one device through CUDA_VISIBLE_DEVICES, which must win in the worker.
    code = f"""
        import json, os, subprocess, sys
        import torchada, torch
        assert torch.cuda.device_count() == 2
        child = {COUNT!r}
        out = []
        for visible in ("1", None):
            env = dict(os.environ)
            if visible is None:
                env.pop("CUDA_VISIBLE_DEVICES")
            else:
                env["CUDA_VISIBLE_DEVICES"] = visible
            r = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True,
                               text=True, check=True)
            out.append(json.loads(r.stdout.strip().splitlines()[-1]))
        print(json.dumps(out))
    """
    r = run_python(code, env={**SIM, "CUDA_VISIBLE_DEVICES": "0,1"})
    # With CUDA_VISIBLE_DEVICES unset in the child, the value torchada derived goes too.
    assert _last(r) == [[1, "1"], [2, None]]


def test_cuda_visible_devices_counts_within_the_users_musa_visible_devices():
    # A job given GPUs 2 and 3 through MUSA_VISIBLE_DEVICES; CUDA_VISIBLE_DEVICES=1 is its second.
    env = {**SIM, "TORCHADA_SIM_DEVICES": "4", "CUDA_VISIBLE_DEVICES": "1"}
    r = run_python("import torchada\n" + COUNT, env={**env, "MUSA_VISIBLE_DEVICES": "2,3"})
    assert _last(r) == [1, "3"] and not user_warnings(r.stderr)
    # The same value in both is one setting written twice.
    r = run_python("import torchada\n" + COUNT, env={**env, "MUSA_VISIBLE_DEVICES": "1"})
    assert _last(r) == [1, "1"] and not user_warnings(r.stderr)
    # An index the user's MUSA_VISIBLE_DEVICES does not have is an error, not GPU 0.
    r = run_python("import torchada\n" + COUNT, env={**env, "MUSA_VISIBLE_DEVICES": "0"})
    assert r.returncode != 0
    assert (
        "CUDA_VISIBLE_DEVICES='1' cannot choose this process's GPUs within "
        "MUSA_VISIBLE_DEVICES='0': it names GPU 1, and MUSA_VISIBLE_DEVICES gives this process "
        "1 GPU (GPU 0)."
    ) in r.stderr


def test_disable_restores_the_visible_devices_environment():
    code = """
        import json, os, torchada
        seen = os.environ.get("MUSA_VISIBLE_DEVICES")
        torchada.disable()
        print(json.dumps([seen, os.environ.get("MUSA_VISIBLE_DEVICES"),
                          "TORCHADA_MUSA_VISIBLE_FROM_CUDA" in os.environ]))
    """
    assert _last(run_python(code, env={**SIM, "CUDA_VISIBLE_DEVICES": "1"})) == ["1", None, False]


# ------------------------------------------------------------------ 2-4. in-process fills
@pytest.fixture(scope="module")
def on(torchada_on):
    return torch


def test_flex_attention_runs_on_musa_and_matches_the_cpu(on):
    import torch.nn.attention.flex_attention as fa
    from torch.nn.attention.flex_attention import flex_attention

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))

    def causal(score, b, h, q_idx, kv_idx):
        return torch.where(q_idx >= kv_idx, score, -float("inf"))

    # torch's own advice to compile it, as on CUDA, where torch gives it (its switch is
    # _FLEX_ATTENTION_DISABLE_COMPILE_DEBUG; torch 2.7 has neither).
    advises = hasattr(fa, "_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = flex_attention(q.cuda(), k.cuda(), v.cuda(), score_mod=causal)
    advice = [w for w in caught if "without torch.compile()" in str(w.message)]
    assert bool(advice) is advises
    want = flex_attention(q, k, v, score_mod=causal)
    assert got.device.type == "musa"
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)


# torch 2.7 has no out_dtype on CUDA either: the fill is left out there, as
# tests/core/test_torch_versions.py checks.
needs_mm_dtype = pytest.mark.skipif(
    not has_operator("aten::mm.dtype"), reason="this torch has no aten::mm.dtype (torch 2.7)"
)


@needs_mm_dtype
@pytest.mark.parametrize("op", ["mm", "bmm"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_mm_and_bmm_with_out_dtype_accumulate_in_fp32(on, op, dtype):
    torch.manual_seed(0)
    shape_a, shape_b = ((32, 64), (64, 16)) if op == "mm" else ((3, 32, 64), (3, 64, 16))
    a, b = torch.randn(shape_a).to(dtype), torch.randn(shape_b).to(dtype)
    fn = getattr(torch, op)
    got = fn(a.cuda(), b.cuda(), out_dtype=torch.float32)
    assert got.dtype == torch.float32 and got.device.type == "musa"
    # fp32 accumulation of the exact fp16/bf16 values: the CPU product of the widened inputs.
    torch.testing.assert_close(got.cpu(), fn(a.float(), b.float()), rtol=1e-6, atol=1e-5)
    same = fn(a.cuda(), b.cuda(), out_dtype=dtype)
    assert same.dtype == dtype and torch.equal(same.cpu(), fn(a.cuda(), b.cuda()).cpu())
    out = torch.empty(0, device="cuda")
    assert fn(a.cuda(), b.cuda(), out_dtype=torch.float32, out=out) is out
    assert torch.equal(out, got)


@needs_mm_dtype
def test_mm_out_dtype_refuses_what_cuda_refuses(on):
    a = torch.randn(4, 4, device="cuda")
    with pytest.raises(
        RuntimeError, match=r"out_dtype must be the inputs' dtype, or torch.float32"
    ):
        torch.mm(a, a, out_dtype=torch.float16)
    out = torch.empty(4, 4, device="cuda", dtype=torch.float16)
    with pytest.raises(RuntimeError, match="out has dtype torch.float16"):
        torch.mm(a.half(), a.half(), out_dtype=torch.float32, out=out)


def test_private_torch_hooks_answer_for_musa(on):
    assert torch.cuda._is_compiled() is True
    assert torch.cuda._device_count_nvml() == torch.musa.device_count() == 2
    # On every build of torch: a CUDA build's own binding would reach for a CUDA device.
    _raw_stream_answers_for_musa()
    import torch._inductor.autotune_process as autotune

    assert autotune.CUDA_VISIBLE_DEVICES == "MUSA_VISIBLE_DEVICES"


def _raw_stream_answers_for_musa():
    side = torch.cuda.Stream(device=1)
    with torch.musa.stream(side):
        assert torch._C._cuda_getCurrentRawStream(1) == side.musa_stream != 0
    assert torch._C._cuda_getCurrentRawStream(0) == torch.musa.current_stream(0).musa_stream


def test_private_hooks_are_undone():
    code = """
        import json, torch, torchada
        import torch._inductor.autotune_process as autotune
        torchada.disable()
        print(json.dumps([torch.cuda._is_compiled(), hasattr(torch._C, "_cuda_getCurrentRawStream"),
                          autotune.CUDA_VISIBLE_DEVICES]))
    """
    # torch's own answers: a CUDA build is compiled with CUDA and has the raw-stream binding.
    assert _last(run_python(code, env=SIM)) == [CUDA_BUILD, CUDA_BUILD, "CUDA_VISIBLE_DEVICES"]


# ------------------------------------------------------------------ 5. CUDA_HOME
def test_cuda_home_of_a_cpp_extension_module_imported_before_torchada(tmp_path):
    (tmp_path / "include").mkdir()
    code = """
        import json, torch, torch.utils.cpp_extension as early
        own = early.CUDA_HOME
        import torchada
        paths = early.include_paths(device_type="cuda")
        home = early.CUDA_HOME
        torchada.disable()
        print(json.dumps([home, [p for p in paths if p.startswith(home)], early.CUDA_HOME, own]))
    """
    home = str(tmp_path)
    r = run_python(code, env={**SIM, "MUSA_HOME": home})
    *got, own = _last(r)
    # disable() gives torch's own back: none on a CPU build, a CUDA build's where it finds one.
    assert got == [home, [os.path.join(home, "include")], own]
    if not CUDA_BUILD:
        assert own is None


# ------------------------------------------------------------------ 6. public helpers
def test_published_helpers_on_musa(on):
    import torchada

    assert torchada.get_platform() is torchada.Platform.MUSA
    assert torchada.get_backend() is torch.musa
    assert torchada.get_version() == torchada.__version__
    assert torchada.is_patched() is True
    assert torchada.is_cuda_like_device is torchada.is_gpu_device
    assert [torchada.is_cuda_like_device(x) for x in ("cuda:1", "musa", "cpu", 0)] == [
        True,
        True,
        False,
        False,
    ]
    assert torchada.cuda_to_musa_name("cudaMemcpyAsync") == "musaMemcpyAsync"
    assert torchada.nccl_to_mccl_name("ncclCommInitRank") == "mcclCommInitRank"
    assert torchada.cublas_to_mublas_name("cublasGemmEx") == "mublasGemmEx"
    assert torchada.curand_to_murand_name("curandSetSeed") == "murandSetSeed"
    assert torchada.cuda_to_musa_name("mallocCuda") == "mallocCuda"  # prefixes only
    with pytest.raises(TypeError, match="expected a function name as str"):
        torchada.cuda_to_musa_name(b"cudaMalloc")
    original = torchada.get_original_init_process_group()
    assert original is torch.distributed.distributed_c10d.init_process_group
    assert original is not torch.distributed.init_process_group  # ours translates 'nccl'


def test_published_helpers_off_musa():
    code = """
        import json, torchada
        try:
            torchada.get_backend()
            error = None
        except RuntimeError as exc:
            error = str(exc)
        print(json.dumps([torchada.get_platform().value, torchada.is_patched(),
                          torchada.get_original_init_process_group(), error]))
    """
    platform, patched, original, error = _last(run_python(code, env={"TORCHADA_ACTIVE": "0"}))
    if CUDA_BUILD:  # the CUDA platform: torch.cuda is its backend
        assert (platform, patched, original, error) == ("cuda", True, None, None)
        return
    assert (platform, patched, original) == ("cpu", True, None)
    assert error.startswith("No GPU platform available")
