"""torch.backends.cuda and torch.backends.cudnn on MUSA (docs/backends.md)."""

from __future__ import annotations

import contextlib
import json
import os
import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import E2E_MODES
from torch.nn.attention import SDPBackend, sdpa_kernel

import torchada
from torchada._cuda.redirect import UnsupportedCUDAAPIError

B = torch.backends
# torch's fp32_precision settings, parents before the ops that inherit from them (setting a parent
# resets its children).
_PRECISIONS = [
    ("generic", "all"),
    ("cuda", "all"),
    ("mkldnn", "all"),
    ("cuda", "matmul"),
    ("cuda", "conv"),
    ("cuda", "rnn"),
    ("mkldnn", "matmul"),
    ("mkldnn", "conv"),
    ("mkldnn", "rnn"),
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
        "matmul_precision": torch.get_float32_matmul_precision(),
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
    # The legacy settings first: on torch >= 2.9 they also set the matmul fp32_precision values.
    torch._C._set_cublas_allow_tf32(saved["cublas"])
    torch._C._set_float32_matmul_precision(saved["matmul_precision"])
    for p, value in saved["precisions"].items():
        torch._C._set_fp32_precision_setter(*p, value)
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


def test_tf32_defaults_are_cudas_and_disable_gives_mudnn_back(py):
    # A fresh process: what a CUDA program reads at start, and muDNN's switch following it.
    code = """
        import json, torch
        import torchada
        B = torch.backends
        seen = [B.cuda.matmul.allow_tf32, B.cudnn.allow_tf32, torch.get_float32_matmul_precision()]
        seen.append(B.mudnn.allow_tf32)
        torchada.disable()
        seen.append(B.mudnn.allow_tf32)  # torch_musa's own default again
        print(json.dumps(seen))
    """
    r = py(code, env={"TORCHADA_SIMULATE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [False, True, "highest", False, True]


@pytest.mark.parametrize("before", [True, False])
def test_activation_follows_matmul_flag_and_disable_restores(before):
    torchada.disable()
    try:
        torchs = torch.set_float32_matmul_precision
        assert not hasattr(torchs, "__wrapped__")
        torch._C._set_cublas_allow_tf32(not before)
        B.mudnn.allow_tf32 = before
        assert torchada.enable()
        assert B.mudnn.allow_tf32 is (not before)  # torch's matmul flag, not torch_musa's value
        assert torch.set_float32_matmul_precision.__wrapped__ is torchs
        torch.set_float32_matmul_precision("highest")
        torch.set_float32_matmul_precision("high")
        torchada.disable()
        assert B.mudnn.allow_tf32 is before  # the value muDNN had before activation
        assert torch.set_float32_matmul_precision is torchs
        torch.set_float32_matmul_precision("highest")  # torch's alone now
        assert B.mudnn.allow_tf32 is before
    finally:
        if not torchada.is_enabled():
            assert torchada.enable()


@pytest.mark.parametrize("value", [True, False])
def test_matmul_allow_tf32_reads_torchs_flag_and_writes_mudnn(value):
    B.cuda.matmul.allow_tf32 = value
    assert torch._C._get_cublas_allow_tf32() is value and B.cuda.matmul.allow_tf32 is value
    assert B.mudnn.allow_tf32 is value
    assert torch.get_float32_matmul_precision() == ("high" if value else "highest")
    if _HAS_FP32_PRECISION:
        assert B.cuda.matmul.fp32_precision == ("tf32" if value else "ieee")
    B.mudnn.allow_tf32 = not value  # muDNN's switch is not what the flag reads
    assert B.cuda.matmul.allow_tf32 is value
    with pytest.raises(RuntimeError, match="expects a bool, but got str"):
        B.cuda.matmul.allow_tf32 = "yes"
    assert B.mudnn.allow_tf32 is (not value)  # torch refused it: muDNN untouched


def test_cudnn_allow_tf32_reads_torchs_flag_and_shares_mudnn():
    B.cudnn.allow_tf32 = False
    assert torch._C._get_cudnn_allow_tf32() is False and B.cudnn.allow_tf32 is False
    assert B.mudnn.allow_tf32 is False
    B.cuda.matmul.allow_tf32 = True  # one muDNN switch: the last write wins
    assert B.mudnn.allow_tf32 is True
    assert B.cudnn.allow_tf32 is False and B.cuda.matmul.allow_tf32 is True  # torch's stay apart
    B.cudnn.allow_tf32 = True
    B.cuda.matmul.allow_tf32 = False
    assert B.mudnn.allow_tf32 is False and B.cudnn.allow_tf32 is True
    with pytest.raises(RuntimeError, match="expects a bool, but got int"):
        B.cudnn.allow_tf32 = 1
    assert B.cudnn.allow_tf32 is True and B.mudnn.allow_tf32 is False


def test_cudnn_flags_context_sets_torch_flag_and_mudnn():
    B.cudnn.allow_tf32 = True
    B.cuda.matmul.allow_tf32 = False
    benchmark = B.cudnn.benchmark
    for inside in (False, True):
        with B.cudnn.flags(enabled=None, benchmark=None, deterministic=None, allow_tf32=inside):
            assert B.cudnn.allow_tf32 is inside and B.mudnn.allow_tf32 is inside
            assert B.cuda.matmul.allow_tf32 is False  # cuDNN's flags leave cuBLAS's alone
        assert B.cudnn.allow_tf32 is True and B.mudnn.allow_tf32 is False
    with B.cudnn.flags(enabled=True, benchmark=True, deterministic=False, allow_tf32=True):
        assert B.cudnn.benchmark is True and B.mudnn.allow_tf32 is True
    assert B.cudnn.benchmark is benchmark and B.mudnn.allow_tf32 is False


def test_fp32_precision_is_torchs_and_writes_mudnn():
    if not _HAS_FP32_PRECISION:
        # torchada adds none of it: torch's own errors for an API this torch lacks.
        with pytest.raises(AttributeError, match="Unknown attribute fp32_precision"):
            B.cuda.matmul.fp32_precision = "tf32"
        assert not hasattr(B.cudnn, "fp32_precision") and not hasattr(B.cudnn, "conv")
        return
    get = torch._C._get_fp32_precision_getter
    B.cuda.matmul.fp32_precision = "tf32"
    assert get("cuda", "matmul") == B.cuda.matmul.fp32_precision == "tf32"
    assert B.mudnn.allow_tf32 is True
    B.cuda.matmul.fp32_precision = "ieee"
    assert get("cuda", "matmul") == "ieee" and B.mudnn.allow_tf32 is False
    B.cudnn.conv.fp32_precision = "tf32"
    assert get("cuda", "conv") == B.cudnn.conv.fp32_precision == "tf32"
    assert B.mudnn.allow_tf32 is True
    B.cudnn.fp32_precision = "ieee"
    assert get("cuda", "all") == B.cudnn.fp32_precision == "ieee" and B.mudnn.allow_tf32 is False
    B.cudnn.fp32_precision = "none"  # "inherit": says nothing about TF32
    assert B.cudnn.fp32_precision == "none" and B.mudnn.allow_tf32 is False
    B.cudnn.rnn.fp32_precision = "tf32"  # no muDNN counterpart: torch's alone
    assert B.cudnn.rnn.fp32_precision == "tf32" and B.mudnn.allow_tf32 is False
    # An unknown precision: torch's answer (an error, or a warning on 2.9), and nothing changes.
    try:
        B.cuda.matmul.fp32_precision = "float16"
    except RuntimeError as error:
        assert "Unknown precision" in str(error)
    assert get("cuda", "matmul") == "ieee" and B.mudnn.allow_tf32 is False


@pytest.mark.skipif(not _HAS_FP32_PRECISION, reason="torch < 2.9 has no fp32_precision")
def test_cudnn_flags_context_with_fp32_precision():
    B.cuda.matmul.allow_tf32 = False
    with B.cudnn.flags(
        enabled=None, benchmark=None, deterministic=None, allow_tf32=True, fp32_precision="none"
    ):
        # The legacy flag decides what the ops inherit, as torch has it.
        assert B.cudnn.conv.fp32_precision == B.cudnn.rnn.fp32_precision == "tf32"
        assert B.mudnn.allow_tf32 is True
    assert B.mudnn.allow_tf32 is False
    B.cuda.matmul.allow_tf32 = True
    with B.cudnn.flags(
        enabled=None, benchmark=None, deterministic=None, allow_tf32=False, fp32_precision="none"
    ):
        assert B.cudnn.conv.fp32_precision == B.cudnn.rnn.fp32_precision == "none"
        assert B.mudnn.allow_tf32 is False
    assert B.mudnn.allow_tf32 is True
    with B.cudnn.flags(
        enabled=None, benchmark=None, deterministic=None, allow_tf32=None, fp32_precision="ieee"
    ):
        assert B.cudnn.fp32_precision == "ieee" and B.mudnn.allow_tf32 is False
    assert B.mudnn.allow_tf32 is True


def test_set_float32_matmul_precision_is_torchs_and_writes_mudnn():
    setter = torch.set_float32_matmul_precision
    assert setter.__name__ == "set_float32_matmul_precision"
    assert setter.__doc__ == setter.__wrapped__.__doc__
    for precision in ("medium", "high"):
        B.mudnn.allow_tf32 = False
        setter(precision)
        assert torch.get_float32_matmul_precision() == precision
        assert torch._C._get_cublas_allow_tf32() is True and B.cuda.matmul.allow_tf32 is True
        assert B.mudnn.allow_tf32 is True
        if _HAS_FP32_PRECISION:
            assert B.cuda.matmul.fp32_precision == "tf32"
    setter("highest")
    assert torch.get_float32_matmul_precision() == "highest"
    assert B.cuda.matmul.allow_tf32 is False and B.mudnn.allow_tf32 is False
    if _HAS_FP32_PRECISION:
        assert B.cuda.matmul.fp32_precision == "ieee"
    with pytest.warns(UserWarning, match="fastest is not one of"):
        setter("fastest")  # torch only warns: no change anywhere
    assert torch.get_float32_matmul_precision() == "highest" and B.mudnn.allow_tf32 is False


@pytest.mark.skipif(not _HAS_FP32_PRECISION, reason="torch < 2.9 has no fp32_precision")
def test_mixing_legacy_and_new_tf32_apis_raises_as_torch_does():
    B.cudnn.conv.fp32_precision = "none"
    B.cudnn.rnn.fp32_precision = "tf32"
    with pytest.raises(RuntimeError, match="mix of the legacy and new APIs"):
        _ = B.cudnn.allow_tf32
    torch.set_float32_matmul_precision("highest")
    B.cuda.matmul.fp32_precision = "tf32"
    assert B.mudnn.allow_tf32 is True  # the last write
    with pytest.raises(RuntimeError, match="mix of the legacy and new APIs"):
        torch.get_float32_matmul_precision()
    with pytest.raises(RuntimeError, match="mix of the legacy and new APIs"):
        _ = B.cuda.matmul.allow_tf32


@contextlib.contextmanager
def _global_flags_disabled():
    """torch.backends.disable_global_flags() for the block. torch keeps the frozen state in its
    own module namespace (flags_frozen reads it) and has no undo: it is put back by hand."""
    namespace = B.flags_frozen.__globals__
    B.disable_global_flags()
    try:
        assert B.flags_frozen()
        yield
    finally:
        namespace["__allow_nonbracketed_mutation_flag"] = True
    assert not B.flags_frozen()


def _legacy_matmul_write(on):
    B.cuda.matmul.allow_tf32 = on


def _new_matmul_write(on):
    B.cuda.matmul.fp32_precision = "tf32" if on else "ieee"


def _matmul_precision_write(on):
    torch.set_float32_matmul_precision("high" if on else "highest")


def _conv_precision_write(on):
    B.cudnn.conv.fp32_precision = "tf32" if on else "ieee"


# Writes CUDA allows after disable_global_flags(): torch freezes only cuDNN's module-level flags.
_ALLOWED_WHEN_FROZEN = [
    pytest.param(_legacy_matmul_write, id="matmul.allow_tf32"),
    pytest.param(_matmul_precision_write, id="set_float32_matmul_precision"),
    pytest.param(
        _new_matmul_write,
        id="matmul.fp32_precision",
        marks=pytest.mark.skipif(not _HAS_FP32_PRECISION, reason="torch < 2.9"),
    ),
    pytest.param(
        _conv_precision_write,
        id="cudnn.conv.fp32_precision",
        marks=pytest.mark.skipif(not _HAS_FP32_PRECISION, reason="torch < 2.9"),
    ),
]


@pytest.mark.parametrize("frozen", [False, True], ids=["before", "after_disable_global_flags"])
@pytest.mark.parametrize("write", _ALLOWED_WHEN_FROZEN)
def test_tf32_writes_cuda_allows_reach_mudnn(write, frozen):
    # torch_musa's own mudnn.allow_tf32 is frozen by disable_global_flags() (a ContextProp), but
    # CUDA programs may still write these: the write reaches muDNN's switch all the same.
    with _global_flags_disabled() if frozen else contextlib.nullcontext():
        for on in (True, False, True):
            write(on)
            assert B.mudnn.allow_tf32 is on
        if frozen:  # torch_musa's property itself stays frozen, as in real torch_musa
            with pytest.raises(RuntimeError, match="not allowed to set torch_musa.core.mudnn"):
                B.mudnn.allow_tf32 = False
            assert B.mudnn.allow_tf32 is True


@pytest.mark.parametrize("frozen", [False, True], ids=["before", "after_disable_global_flags"])
def test_cudnn_tf32_writes_follow_cudas_freeze(frozen):
    B.cudnn.allow_tf32 = True
    B.cuda.matmul.allow_tf32 = True
    with _global_flags_disabled() if frozen else contextlib.nullcontext():
        if frozen:  # refused in CUDA's words, before muDNN is touched
            with pytest.raises(
                RuntimeError,
                match=r"not allowed to set torch\.backends\.cudnn flags after "
                r"disable_global_flags; please use flags\(\) context manager instead",
            ):
                B.cudnn.allow_tf32 = False
            assert B.cudnn.allow_tf32 is True and B.mudnn.allow_tf32 is True
            if _HAS_FP32_PRECISION:
                with pytest.raises(RuntimeError, match="not allowed to set torch.backends.cudnn"):
                    B.cudnn.fp32_precision = "ieee"
                assert B.mudnn.allow_tf32 is True
        else:
            B.cudnn.allow_tf32 = False
            assert B.cudnn.allow_tf32 is False and B.mudnn.allow_tf32 is False
            B.cudnn.allow_tf32 = True
            assert B.mudnn.allow_tf32 is True
        # flags() changes them in either state, and puts them back.
        for allow in (False, True):
            with B.cudnn.flags(enabled=None, benchmark=None, deterministic=None, allow_tf32=allow):
                assert B.cudnn.allow_tf32 is allow and B.mudnn.allow_tf32 is allow
            assert B.cudnn.allow_tf32 is True and B.mudnn.allow_tf32 is True
        assert B.flags_frozen() is frozen


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
        B.cudnn.allow_tf32 = True  # torch's flags alone again
        B.cuda.matmul.allow_tf32 = True
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
        # A CUDA build of torch imports the name: torchada's torch._C row then (unsupported,
        # tables/torch_c.json), never torch's binding of the CUDA allocator.
        cuda_build = torch.version.cuda is not None
        print(json.dumps([torch.backends.cuda.is_built(), state.__module__, cuda_build]))
    """
    r = py(code, env={"TORCHADA_SIMULATE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    built, module, cuda_build = json.loads(r.stdout.strip().splitlines()[-1])
    assert built is True
    assert module == (
        "torchada._cuda.redirect" if cuda_build else "torch._inductor.cudagraph_trees"
    )


HARNESS_PROGRAM = r"""
import torch
from torch.testing._internal import common_utils  # calls disable_global_flags() at import

B = torch.backends
assert B.flags_frozen() and torch.cuda.is_available()
seen = []
for on in (True, False):
    B.cuda.matmul.allow_tf32 = on
    seen.append(("matmul", torch._C._get_cublas_allow_tf32(), B.mudnn.allow_tf32))
for precision in ("high", "highest"):
    torch.set_float32_matmul_precision(precision)
    seen.append((precision, B.cuda.matmul.allow_tf32, B.mudnn.allow_tf32))
with B.cudnn.flags(enabled=None, benchmark=None, deterministic=None, allow_tf32=True):
    seen.append(("flags", B.cudnn.allow_tf32, B.mudnn.allow_tf32))
try:
    B.cudnn.allow_tf32 = False
except RuntimeError as err:
    seen.append(("refused", str(err)))
print(seen)
"""


@pytest.mark.parametrize("mode", E2E_MODES)
def test_tf32_under_pytorchs_test_harness(mode, cuda_program, tmp_path):
    # PyTorch's test harness (and programs that pin cuDNN settings) freeze the global flags; the
    # TF32 API that CUDA still allows then must work through torchada as it does on CUDA, by
    # every way in (the runner, `import torchada` first, a child with torch_musa's entry point).
    program = tmp_path / "tf32_harness_cuda.py"
    program.write_text(HARNESS_PROGRAM)
    r = cuda_program(mode, str(program), workdir=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == str(
        [
            ("matmul", True, True),
            ("matmul", False, False),
            ("high", True, True),
            ("highest", False, False),
            ("flags", True, True),
            (
                "refused",
                "not allowed to set torch.backends.cudnn flags after disable_global_flags; "
                "please use flags() context manager instead",
            ),
        ]
    )
