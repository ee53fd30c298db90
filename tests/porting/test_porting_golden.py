"""Golden tests: realistic CUDA extension sources ported and compared byte for byte.

``tests/porting/porting_golden/input/`` holds the sources, ``expected/`` what ``port_tree`` must
produce (file names included: ``.cu``/``.cuh`` become ``.mu``/``.muh``; the hand-written ``.mu`` is
copied unchanged). To refresh after an intended rule change, port ``input/`` into a scratch
directory, review the diff, and copy the files over ``expected/``.
"""

from __future__ import annotations

import filecmp
from pathlib import Path
from typing import Dict, Set

import pytest

from torchada.porting import port_source, port_tree

GOLDEN = Path(__file__).parent / "porting_golden"
INPUT = GOLDEN / "input"
EXPECTED = GOLDEN / "expected"
RENAMES = {".cu": ".mu", ".cuh": ".muh"}

CASES = sorted(p.name for p in INPUT.iterdir() if p.is_file())


def expected_path(name: str) -> Path:
    path = Path(name)
    return EXPECTED / path.with_suffix(RENAMES.get(path.suffix, path.suffix)).name


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


@pytest.mark.parametrize("name", CASES)
def test_golden_port_source(name: str) -> None:
    ported, report = port_source(read(INPUT / name), filename=name)
    assert ported == read(expected_path(name))
    assert report.path == name


@pytest.mark.parametrize("name", CASES)
def test_golden_idempotent(name: str) -> None:
    once, _ = port_source(read(INPUT / name), filename=name)
    twice, report = port_source(once, filename=name)
    assert twice == once
    assert report.translated == {}


def test_golden_tree_matches_expected_dir(tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = port_tree(INPUT, out)
    produced = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert produced == sorted(p.name for p in EXPECTED.iterdir())
    match, mismatch, errors = filecmp.cmpfiles(out, EXPECTED, produced, shallow=False)
    assert mismatch == [] and errors == []
    assert report.file("handwritten.mu").status == "musa-source"


def test_mu_file_is_never_touched() -> None:
    text = read(INPUT / "handwritten.mu")
    assert "asm volatile" in text and "cudaMalloc" in text
    ported, report = port_source(text, filename="kernels/handwritten.mu")
    assert ported is text
    assert report.status == "musa-source" and report.translated == {}
    ported, _ = port_source(text, filename="x.MUH")
    assert ported is text


# Expected report contents per case: (remaining names, names kept for review).
REPORTS: Dict[str, tuple] = {
    "fused_stream.cu": (set(), set()),
    "fused_common.cuh": (set(), set()),
    "cublas_gemm.cpp": (set(), {"CUBLAS_VERSION"}),
    "atomics_shuffle.cu": (set(), set()),
    "half_bf16.cu": (set(), set()),
    "arch_guards.cuh": (set(), {"__CUDA_ARCH__", "__CUDA_ARCH_FEAT_SM90_ALL"}),
    "stable_abi.cpp": ({"cuda"}, set()),  # rms_norm_cuda is the file's own function
    "nccl_allreduce.cpp": (set(), {"torch::cuda", "NCCL_VERSION_CODE", "NCCL_VERSION"}),
    "comments_strings.cu": ({"cudaMallocX", "my_cuda_helper"}, {"CUDA_VERSION", "CUDART_VERSION"}),
    "driver_misc.cpp": ({"<cub/cub.cuh>", "<cuda/std/atomic>"}, {"cutlass::arch::Sm80"}),
    "handwritten.mu": (set(), set()),
    "layernorm_softmax.cu": (set(), set()),
    "rotary_embedding.cu": (set(), set()),
    "topk_gating.cu": ({"<cub/block/block_reduce.cuh>"}, set()),
    # Receivers without is_privateuseone (stable tensor, packed sequence, a type() variable).
    "device_checks.cpp": (set(), {"is_cuda"}),
    # CUDA_CHECK is defined by ep_configs.cuh (another file): --rename-project renames it.
    "ep_buffer.cpp": (
        {"CUDA_CHECK"},
        {
            "ScalarTypeToCudaDataType", "cudaLaunchAttributeProgrammaticStreamSerialization",
            "CUDART_VERSION",
        },
    ),  # fmt: skip
    "ep_configs.cuh": (set(), set()),
    "legacy_binding.cpp": (set(), set()),
    "legacy_roi_pool.cu": (
        set(),
        {
            "THCState", "THCState_getCurrentStream", "lazyInitCUDA", "THCudaMalloc",
            "THCudaFree", "THCCeilDiv",
        },
    ),  # fmt: skip
}


def test_every_case_has_report_expectations() -> None:
    assert set(REPORTS) == set(CASES)


@pytest.mark.parametrize("name", CASES)
def test_golden_report(name: str) -> None:
    _, report = port_source(read(INPUT / name), filename=name)
    remaining: Set[str] = set(report.remaining)
    attention: Set[str] = set(report.attention)
    assert (remaining, attention) == REPORTS[name]


def test_report_details_fused_stream() -> None:
    _, report = port_source(read(INPUT / "fused_stream.cu"), filename="fused_stream.cu")
    t = report.translated
    assert t["getCurrentCUDAStream"] == 2
    assert t["at::cuda"] == 6 and t["c10::cuda"] == 2
    assert t["C10_CUDA_KERNEL_LAUNCH_CHECK"] == 1
    assert t["is_cuda"] == 3
    assert t['#include "*.cuh"'] == 1
    assert t["ATen/cuda/CUDAContext.h"] == 1
    assert report.status == "ported"


def test_report_details_arch_and_lines() -> None:
    _, report = port_source(read(INPUT / "arch_guards.cuh"), filename="arch_guards.cuh")
    assert report.translated["__CUDA_ARCH__ >= 800"] == 2  # forward and reversed (800 <= X)
    assert report.translated["__CUDA_ARCH__ >= 1000"] == 1
    finding = report.attention["__CUDA_ARCH__"]
    assert finding.count == 2  # `__CUDA_ARCH__ / 100` and `__CUDA_ARCH__ >= 800 + 6`
    assert finding.line == 66
    assert "threshold" in finding.note


def test_report_details_legacy_thc() -> None:
    _, report = port_source(read(INPUT / "legacy_roi_pool.cu"), filename="legacy_roi_pool.cu")
    t = report.translated
    assert t["THCudaCheck"] == 3 and t["THCCeilDiv"] == 2
    assert t["x.type().is_cuda()"] == 2  # .type() dropped: the type object has no replacement
    assert t["THC/THC.h"] == 1 and t["THC/THCDeviceUtils.cuh"] == 1
    # at::ceil_div is written, and the include it needs asked for.
    assert "ATen/ceil_div.h" in report.attention["THCCeilDiv"].note
    assert report.attention["THCCeilDiv"].count == 2
    assert "getCurrentMUSAStream" in report.attention["THCState_getCurrentStream"].note
    assert "raw_alloc" in report.attention["THCudaMalloc"].note


def test_report_details_receivers() -> None:
    _, report = port_source(read(INPUT / "device_checks.cpp"), filename="device_checks.cpp")
    assert report.translated["is_cuda"] == 3 and report.translated["x.type().is_cuda()"] == 1
    finding = report.attention["is_cuda"]
    assert finding.count == 4  # kind.is_cuda(), st.is_cuda(), seq.is_cuda(), seq.data()...
    assert finding.line == 29
    assert report.translated["kCUDA"] == 3  # at::, torch:: (kMUSA) and c10:: (kPrivateUse1)


def test_report_details_switches_and_launch() -> None:
    _, report = port_source(read(INPUT / "ep_configs.cuh"), filename="ep_configs.cuh")
    t = report.translated
    for switch in ("HALF_CONVERSIONS", "HALF_OPERATORS", "HALF2_OPERATORS", "BFLOAT16_CONVERSIONS"):
        assert t[f"__CUDA_NO_{switch}__"] == 2
    assert t["__CUDACC_RDC__"] == 2 and t["__CUDA_ARCH__"] == 1  # the #define
    assert t["cudaLaunchAttributeCooperative"] == 1
    _, report = port_source(read(INPUT / "ep_buffer.cpp"), filename="ep_buffer.cpp")
    assert report.translated["CUDA_IPC_HANDLE_SIZE"] == 3
    # Returned as a value, the version macro is still CUDA's (MUSA's would pass CUDA 12 guards).
    assert "CUDART_VERSION" not in report.translated and "CUDART_VERSION" in report.attention
    assert "define at::musa::ScalarTypeToMusaDataType" in (
        report.attention["ScalarTypeToCudaDataType"].note
    )


def test_report_remaining_lines_and_notes() -> None:
    _, report = port_source(read(INPUT / "stable_abi.cpp"), filename="stable_abi.cpp")
    cuda = report.remaining["cuda"]
    assert cuda.line == 56 and "at::cuda" in cuda.note
    assert "rms_norm_cuda" not in report.remaining  # defined on line 14: a project name
    assert report.translated["CUDA"] == 2  # STABLE_TORCH_LIBRARY_IMPL and TORCH_LIBRARY_IMPL
    assert report.translated["AutogradCUDA"] == 1
    assert report.translated["DispatchKey::CUDA"] == 1
    assert report.translated["DeviceType::CUDA"] == 2


PROJECT = GOLDEN / "project"


def _files(root: Path) -> Dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


def test_project_renaming_golden(tmp_path: Path) -> None:
    # --rename-project: the tree's own names, files and folders, consistently in every file.
    report = port_tree(PROJECT / "input", tmp_path / "out", rename_project=True)
    assert _files(tmp_path / "out") == _files(PROJECT / "expected")
    notes = " ".join(report.notes)
    assert "WITH_CUDA -> WITH_MUSA" in notes and "PyInit__scatter_cuda" in notes
    assert "csrc/cuda/scatter_cuda.cu -> csrc/musa/scatter_musa.cu" in notes
    for file_report in report.files:
        assert file_report.remaining == {}, file_report.path


def test_project_renaming_is_never_the_default(tmp_path: Path) -> None:
    port_tree(PROJECT / "input", tmp_path / "out")
    produced = _files(tmp_path / "out")
    assert "csrc/cuda/scatter_cuda.mu" in produced
    assert b"WITH_CUDA" in produced["csrc/scatter.cpp"]
    assert b"scatter_sum_cuda" in produced["csrc/cuda/scatter_cuda.mu"]
