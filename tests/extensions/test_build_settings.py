"""torchada._extensions.build_settings: a CUDA extension's build settings as a torch_musa
extension's (architectures through the porter's thresholds, nvcc flags, library names,
compile-argument keys), the caller's arguments left alone."""

from __future__ import annotations

import copy
import os
import warnings

import pytest

pytestmark = pytest.mark.usefixtures("torchada_on")


@pytest.fixture(scope="module")
def bs(torchada_on):
    from torchada._extensions import build_settings as _build_settings

    return _build_settings


# --- architectures ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cuda, musa",
    [
        ("sm_60", "21"), ("sm_70", "21"), ("sm_75", "21"), ("compute_75", "21"), ("7.5+PTX", "21"),
        ("sm_80", "22"), ("sm_86", "22"), ("sm_89", "22"), ("8.6", "22"), ("86", "22"),
        ("Ampere", "22"), ("Ada", "22"), ("sm_90", "31"), ("sm_90a", "31"), ("9.0a", "31"),
        ("compute_90", "31"), ("Hopper", "31"),
    ],
)  # fmt: skip
def test_arch_follows_the_porter_thresholds(bs, cuda, musa):
    assert bs.musa_arch(cuda) == musa


def test_arch_table_is_the_porters(bs):
    from torchada.porting import load_rules

    tiers = load_rules().arch_tiers
    assert tiers, "arch.json has threshold rows"
    for tier in tiers:
        for value in (tier.cuda_min, tier.cuda_max):
            assert bs.musa_arch(f"sm_{value // 10}") == str(tier.musa_arch // 10)


def test_arch_without_musa_counterpart_warns_once(bs):
    with pytest.warns(UserWarning, match="sm_100 has no MUSA counterpart"):
        assert bs.musa_arch("sm_100") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bs.musa_arch("sm_100a") is None  # the same cause: no second warning
    with pytest.raises(ValueError, match="cannot read 'sm80x' as a CUDA architecture"):
        bs.musa_arch("sm80x")


def test_arch_list(bs):
    assert bs.translate_arch_list("7.0;7.5;8.0;8.6+PTX;9.0") == "21;22;31"
    assert bs.translate_arch_list(" 8.0 8.6 ") == "22"
    assert bs.translate_arch_list("Hopper;Ampere") == "31;22"
    with pytest.warns(UserWarning, match="12.0 has no MUSA counterpart"):
        assert bs.translate_arch_list("12.0;9.0") == "31"


def test_arch_list_env_during_builds(bs, monkeypatch):
    monkeypatch.delenv("TORCH_MUSA_ARCH_LIST", raising=False)
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0;9.0")
    with bs.musa_arch_env():
        assert os.environ["TORCH_MUSA_ARCH_LIST"] == "22;31"
    assert "TORCH_MUSA_ARCH_LIST" not in os.environ
    monkeypatch.setenv("TORCH_MUSA_ARCH_LIST", "21")  # an explicit MUSA list wins
    with bs.musa_arch_env():
        assert os.environ["TORCH_MUSA_ARCH_LIST"] == "21"
    assert os.environ["TORCH_MUSA_ARCH_LIST"] == "21"


# --- flags and libraries ------------------------------------------------------------------------


def test_nvcc_flags(bs):
    flags = [
        "-O3",
        "-gencode", "arch=compute_80,code=sm_80",
        "-gencode=arch=compute_90a,code=[sm_90a,compute_90a]",
        "-gencode arch=compute_86,code=sm_86",
        "-arch=sm_75",
        "--gpu-architecture", "compute_89",
        "--use_fast_math",
        "--expt-relaxed-constexpr", "--extended-lambda",
        "-Xptxas", "-v", "--ptxas-options=-O3",
        "-Xcompiler", "-fPIC,-Wall",
        "-U__CUDA_NO_HALF_OPERATORS__",
        "-lineinfo",
    ]  # fmt: skip
    before = list(flags)
    out = bs.translate_nvcc_flags(flags)
    assert flags == before
    assert out == [
        "-O3",
        "--offload-arch=mp_22",
        "--offload-arch=mp_31",
        "--offload-arch=mp_21",
        "-ffast-math",
        "-fPIC",
        "-Wall",
        "-U__CUDA_NO_HALF_OPERATORS__",
        "-lineinfo",
    ]
    from torchada._simulator import extension_support

    # What the simulated torch_musa accepts (its check moved out of the torch_musa namespace).
    assert extension_support.offload_archs(out) == ["22", "31", "21"]
    # native/all name no architecture: the MUSA arch list (or the devices) decides.
    assert bs.translate_nvcc_flags(["-arch=native", "-O2"]) == ["-O2"]
    assert bs.translate_nvcc_flags(None) == []


def test_libraries(bs):
    cuda = ["cudart", "cublas", "cublasLt", "curand", "cufft", "cusparse", "cusolver", "nccl",
            "nvjpeg", "cudnn", "cuda", "c10_cuda", "torch_cuda", "m", "mylib"]  # fmt: skip
    before = list(cuda)
    assert bs.translate_libraries(cuda) == [
        "musart", "mublas", "mublasLt", "murand", "mufft", "musparse", "musolver", "mccl",
        "mtjpeg", "mudnn", "musa", "m", "mylib",
    ]  # fmt: skip
    assert cuda == before
    flags = ["-L/opt/x", "-lcublas", "-l", "cudnn", "-lc10_cuda", "-lfoo", "-l:libcuda.so", "-O1"]
    assert bs.translate_ldflags(flags) == [
        "-L/opt/x", "-lmublas", "-l", "mudnn", "-lfoo", "-l:libcuda.so", "-O1",
    ]  # fmt: skip


def test_compile_args(bs):
    args = {"cxx": ["-O1"], "nvcc": ["-O2", "-arch=sm_86"], "nvcc_dlink": ["-lcublas"]}
    saved = copy.deepcopy(args)
    out = bs.translate_compile_args(args)
    assert out == {
        "cxx": ["-O1"],
        "mcc": ["-O2", "--offload-arch=mp_22"],
        "mcc_dlink": ["-lmublas"],
    }
    assert args == saved and out["cxx"] is not args["cxx"]
    listed = ["-O2"]
    assert (
        bs.translate_compile_args(listed) == ["-O2"]
        and bs.translate_compile_args(listed) is not listed
    )
    assert bs.translate_compile_args(None) is None
