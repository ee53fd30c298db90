"""torch.backends.cuda and torch.backends.cudnn on MUSA (docs/backends.md)."""

from __future__ import annotations

import json
import os
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import torchada
from torchada._redirect import UnsupportedCUDAAPIError

B = torch.backends
_PRECISIONS = [
    ("cuda", "matmul"),
    ("cuda", "all"),
    ("cuda", "conv"),
    ("cuda", "rnn"),
    ("generic", "all"),
]
# The fp32_precision TF32 API; older torches have only the allow_tf32 flags.
_HAS_FP32_PRECISION = hasattr(torch._C, "_get_fp32_precision_getter")
# Split-K for reduced-precision reductions; older torches take a bool alone.
_HAS_SPLIT_K = hasattr(B.cuda.matmul, "allow_fp16_reduced_precision_reduction_split_k")


def _set_reduction(setter, value):
    # The getter's value back to the setter: (allow, split_k) where torch has split-K.
    if isinstance(value, tuple):
        setter(*value)
    else:
        setter(value)


pytestmark = pytest.mark.usefixtures("torchada_on")


@pytest.fixture(autouse=True)
def restore_flags():
    """Each test leaves torch's global flags and muDNN's switch as it found them."""
    saved = {
        "mudnn": B.mudnn.allow_tf32,
        "cublas": torch._C._get_cublas_allow_tf32(),
        "cudnn": (
            torch._C._get_cudnn_enabled(),
            torch._C._get_cudnn_benchmark(),
            torch._C._get_cudnn_deterministic(),
            torch._C._get_cudnn_allow_tf32(),
        ),
        "precisions": {
            p: torch._C._get_fp32_precision_getter(*p) for p in _PRECISIONS if _HAS_FP32_PRECISION
        },
        "sdp": (
            B.cuda.flash_sdp_enabled(),
            B.cuda.mem_efficient_sdp_enabled(),
            B.cuda.math_sdp_enabled(),
        ),
        "red": (
            torch._C._get_cublas_allow_fp16_reduced_precision_reduction(),
            torch._C._get_cublas_allow_bf16_reduced_precision_reduction(),
        ),
    }
    yield
    for p, value in saved["precisions"].items():
        torch._C._set_fp32_precision_setter(*p, value)
    torch._C._set_cublas_allow_tf32(saved["cublas"])
    B.mudnn.allow_tf32 = saved["mudnn"]
    enabled_, bench, det, tf32 = saved["cudnn"]
    torch._C._set_cudnn_enabled(enabled_)
    torch._C._set_cudnn_benchmark(bench)
    torch._C._set_cudnn_deterministic(det)
    torch._C._set_cudnn_allow_tf32(tf32)
    B.cuda.enable_flash_sdp(saved["sdp"][0])
    B.cuda.enable_mem_efficient_sdp(saved["sdp"][1])
    B.cuda.enable_math_sdp(saved["sdp"][2])
    _set_reduction(torch._C._set_cublas_allow_fp16_reduced_precision_reduction, saved["red"][0])
    _set_reduction(torch._C._set_cublas_allow_bf16_reduced_precision_reduction, saved["red"][1])


def test_cuda_is_built_and_cudnn_is_mudnn():
    assert B.cuda.is_built() is True
    assert B.cudnn.is_available() is True
    assert B.cudnn.version() == B.mudnn.version() == int(torch.musa.core.mudnn.version())
    assert isinstance(B.cudnn.version(), int)


@pytest.mark.parametrize("value", [True, False])
def test_matmul_allow_tf32_is_mudnn_switch(value):
    B.cuda.matmul.allow_tf32 = value
    assert B.mudnn.allow_tf32 is value and B.cuda.matmul.allow_tf32 is value
    # torch's own flag follows, as on CUDA.
    assert torch.get_float32_matmul_precision() == ("high" if value else "highest")
    B.mudnn.allow_tf32 = not value  # the MUSA switch is what is read back
    assert B.cuda.matmul.allow_tf32 is (not value)
    with pytest.raises(TypeError):
        B.cuda.matmul.allow_tf32 = "yes"


def test_cudnn_allow_tf32_is_the_same_switch():
    B.cudnn.allow_tf32 = False
    assert B.mudnn.allow_tf32 is False and B.cudnn.allow_tf32 is False
    B.cuda.matmul.allow_tf32 = True  # one switch for both: the last write wins
    assert B.cudnn.allow_tf32 is True


def test_fp32_precision_drives_tf32():
    if not _HAS_FP32_PRECISION:
        # torchada adds none of it: torch's own errors for an API this torch lacks.
        with pytest.raises(AttributeError, match="Unknown attribute fp32_precision"):
            B.cuda.matmul.fp32_precision = "tf32"
        assert not hasattr(B.cudnn, "fp32_precision") and not hasattr(B.cudnn, "conv")
        return
    B.cuda.matmul.fp32_precision = "tf32"
    assert B.mudnn.allow_tf32 is True and B.cuda.matmul.fp32_precision == "tf32"
    B.cuda.matmul.fp32_precision = "ieee"
    assert B.mudnn.allow_tf32 is False and B.cuda.matmul.fp32_precision == "ieee"
    B.cudnn.conv.fp32_precision = "tf32"
    assert B.mudnn.allow_tf32 is True and B.cudnn.conv.fp32_precision == "tf32"
    B.cudnn.fp32_precision = "ieee"
    assert B.mudnn.allow_tf32 is False and B.cudnn.fp32_precision == "ieee"
    B.cudnn.fp32_precision = "none"  # "inherit": says nothing about TF32
    assert B.mudnn.allow_tf32 is False
    with pytest.raises(RuntimeError):
        B.cuda.matmul.fp32_precision = "float16"


def test_reduced_precision_reductions_are_torchs_flags():
    for name in (
        "allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction",
    ):
        setattr(B.cuda.matmul, name, False)
        assert getattr(B.cuda.matmul, name) is False
        if _HAS_SPLIT_K:
            setattr(B.cuda.matmul, name, (False, False))
            assert getattr(B.cuda.matmul, name + "_split_k") is False
        else:  # no split-K switch in this torch: its own refusal of the pair
            with pytest.raises(RuntimeError, match="expects a bool"):
                setattr(B.cuda.matmul, name, (False, False))
        setattr(B.cuda.matmul, name, True)
        assert getattr(B.cuda.matmul, name) is True
    with pytest.raises(AttributeError, match="Unknown attribute"):
        _ = B.cuda.matmul.no_such_flag


def test_cudnn_flags_are_kept_and_benchmark_is_ignored():
    x = torch.randn(1, 2, 8, 8, device="musa")
    w = torch.randn(3, 2, 3, 3, device="musa")
    ref = F.conv2d(x, w)
    for name in ("enabled", "benchmark"):
        for value in (False, True):
            setattr(B.cudnn, name, value)
            assert getattr(B.cudnn, name) is value
            torch.testing.assert_close(F.conv2d(x, w), ref)  # convolutions unaffected


def test_cudnn_deterministic_warns_once():
    with pytest.warns(UserWarning, match="use_deterministic_algorithms") as record:
        B.cudnn.deterministic = True
    assert record[0].filename == __file__  # points at the assignment
    assert B.cudnn.deterministic is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        B.cudnn.deterministic = True  # once per process
        B.cudnn.deterministic = False


def test_cudnn_flags_context_switches_and_restores_mudnn():
    B.mudnn.allow_tf32 = False
    with B.cudnn.flags(enabled=True, benchmark=True, deterministic=False, allow_tf32=True):
        assert B.mudnn.allow_tf32 is True and B.cudnn.benchmark is True
    assert B.mudnn.allow_tf32 is False and B.cudnn.benchmark is False
    with B.cudnn.flags(enabled=False, allow_tf32=False):
        assert B.cudnn.enabled is False and B.mudnn.allow_tf32 is False


def test_cudnn_is_acceptable():
    assert B.cudnn.is_acceptable(torch.randn(2, device="musa"))
    assert not B.cudnn.is_acceptable(torch.randn(2))
    assert not B.cudnn.is_acceptable(torch.ones(2, dtype=torch.int64, device="musa"))


@pytest.mark.parametrize(
    "backend", [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
)
def test_sdpa_switches(backend):
    q = torch.randn(2, 4, 8, 16, device="musa")
    ref = F.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel(backend):
        assert B.cuda.flash_sdp_enabled() is (backend == SDPBackend.FLASH_ATTENTION)
        assert B.cuda.math_sdp_enabled() is (backend == SDPBackend.MATH)
        out = F.scaled_dot_product_attention(q, q, q)
    assert out.device.type == "musa"
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    assert B.cuda.flash_sdp_enabled() and B.cuda.math_sdp_enabled()


def test_sdp_toggles_and_deprecated_sdp_kernel():
    B.cuda.enable_flash_sdp(False)
    B.cuda.enable_mem_efficient_sdp(False)
    assert not B.cuda.flash_sdp_enabled() and not B.cuda.mem_efficient_sdp_enabled()
    B.cuda.enable_math_sdp(True)
    assert B.cuda.math_sdp_enabled()
    with pytest.warns(FutureWarning, match="sdp_kernel"):
        ctx = B.cuda.sdp_kernel(enable_flash=True, enable_math=False, enable_mem_efficient=False)
    with ctx:
        assert B.cuda.flash_sdp_enabled() and not B.cuda.math_sdp_enabled()
    assert not B.cuda.flash_sdp_enabled() and B.cuda.math_sdp_enabled()


def test_preferred_libraries_are_kept_not_applied():
    L, Bl = torch._C._LinalgBackend, torch._C._BlasBackend
    assert B.cuda.preferred_linalg_library("magma") == L.Magma  # torch would refuse it
    assert B.cuda.preferred_linalg_library() == L.Magma
    assert B.cuda.preferred_linalg_library(L.Cusolver) == L.Cusolver
    assert B.cuda.preferred_linalg_library("default") == L.Default
    with pytest.raises(RuntimeError, match="Choose from: default, cusolver, magma"):
        B.cuda.preferred_linalg_library("lapack")
    with pytest.raises(RuntimeError, match="Unknown input value type"):
        B.cuda.preferred_linalg_library(3)
    assert B.cuda.preferred_blas_library("cublaslt") == Bl.Cublaslt
    assert B.cuda.preferred_blas_library() == Bl.Cublaslt
    assert B.cuda.preferred_blas_library("cublas") == Bl.Cublas
    a = torch.randn(4, 4, device="musa")
    spd = a @ a.T + 4 * torch.eye(4, device="musa")
    torch.testing.assert_close(
        torch.linalg.inv(spd) @ spd, torch.eye(4, device="musa"), atol=1e-4, rtol=1e-4
    )


def test_cufft_plan_cache():
    cache = B.cuda.cufft_plan_cache
    assert cache.size == 0 and cache[0].size == 0 and cache["cuda:1"].size == 0
    cache.max_size = 32
    assert cache.max_size == 32 and cache[0].max_size == 32 and cache[1].max_size == 4096
    cache[torch.device("musa", 1)].max_size = 8
    assert cache[1].max_size == 8
    cache.clear()
    with pytest.raises(RuntimeError, match="read-only"):
        cache.size = 3
    with pytest.raises(RuntimeError, match="expected 0 <= device index < 2"):
        cache[2]
    cache.max_size = 4096
    cache[1].max_size = 4096
    spectrum = torch.fft.rfft(torch.randn(64, device="musa"))  # FFTs run regardless
    assert spectrum.shape == (33,)


def test_workspace_sizes_unsupported():
    for name in ("cublas_workspace_size", "cublaslt_workspace_size", "blas_workspace_size"):
        if not hasattr(B.cuda, name):
            continue  # not in every torch (2.7 has none): torchada adds none
        with pytest.raises(UnsupportedCUDAAPIError, match=f"{name} is unsupported on MUSA"):
            getattr(B.cuda, name)()


def test_disable_restores_backends():
    torchada.disable()
    try:
        assert B.cuda.is_built() is torch._C._has_cuda
        assert B.cudnn.is_available() is torch._C._has_cudnn
        assert type(B.cuda.matmul).__name__ == "cuBLASModule"
        assert type(B.cuda.cufft_plan_cache).__name__ == "cuFFTPlanCacheManager"
        source = os.path.dirname(torchada.__file__) + os.sep  # a venv's path may say "torchada"
        assert source not in B.cuda.preferred_linalg_library.__code__.co_filename
        B.mudnn.allow_tf32 = False
        B.cudnn.allow_tf32 = True  # torch's flag alone again
        assert B.mudnn.allow_tf32 is False
    finally:
        assert torchada.enable()


def test_torch_modules_that_import_cuda_symbols_still_import(py):
    # Inductor's CUDA graph trees import CUDA-only names from torch._C when is_built() is true;
    # with torchada on they import as in this CUDA-less build (fresh process: imported once).
    code = """
        import json, torch
        import torchada
        assert torch.backends.cuda.is_built() is True
        torch.compiler.cudagraph_mark_step_begin()  # imports torch._inductor.cudagraph_trees
        from torch._inductor import cudagraph_trees
        torch._dynamo.reset()
        state = cudagraph_trees.AllocatorState
        # A CUDA build of torch has the class itself: that is torch's answer then.
        own = hasattr(torch._C, "_cuda_CUDAAllocator_AllocatorState")
        print(json.dumps([torch.backends.cuda.is_built(), state.__module__, own]))
    """
    r = py(code, env={"TORCHADA_SIMULATE": "1", "TORCHADA_FORCE_CUDA_AVAILABLE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    built, module, own = json.loads(r.stdout.strip().splitlines()[-1])
    assert built is True
    assert module == ("torch._C" if own else "torch._inductor.cudagraph_trees")
