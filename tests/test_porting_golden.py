"""Golden tests: realistic CUDA extension sources ported and compared byte for byte.

``tests/porting_golden/input/`` holds the sources, ``expected/`` what ``port_tree`` must produce
(file names included: ``.cu``/``.cuh`` become ``.mu``/``.muh``; the hand-written ``.mu`` is
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


def test_report_remaining_lines_and_notes() -> None:
    _, report = port_source(read(INPUT / "stable_abi.cpp"), filename="stable_abi.cpp")
    cuda = report.remaining["cuda"]
    assert cuda.line == 56 and "at::cuda" in cuda.note
    assert "rms_norm_cuda" not in report.remaining  # defined on line 14: a project name
    assert report.translated["CUDA"] == 2  # STABLE_TORCH_LIBRARY_IMPL and TORCH_LIBRARY_IMPL
    assert report.translated["AutogradCUDA"] == 1
    assert report.translated["DispatchKey::CUDA"] == 1
    assert report.translated["DeviceType::CUDA"] == 2
