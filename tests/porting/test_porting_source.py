"""port_source behaviour: tokenizer, word boundaries, contexts, arch thresholds, reports."""

from __future__ import annotations

import json
import re
from typing import Optional

import pytest

from torchada.porting import FileReport, load_rules, port_source


def port(text: str, **kw) -> str:
    return port_source(text, **kw)[0]


def report_of(text: str, **kw) -> FileReport:
    return port_source(text, **kw)[1]


# --------------------------------------------------------------------- word boundaries
@pytest.mark.parametrize(
    "name", ["mycudaMalloc", "cudaMallocX", "cudaMalloc_", "_cudaMalloc", "cudaMalloc2", "xcuInit"]
)
def test_near_misses_untouched(name: str) -> None:
    text = f"int {name} = 0; {name}++;"
    assert port(text) == text


def test_exact_identifiers_renamed_next_to_punctuation() -> None:
    text = "(cudaMalloc)+cudaFree;cudaStream_t*s,cudaEvent_t&e"
    assert port(text) == "(musaMalloc)+musaFree;musaStream_t*s,musaEvent_t&e"


def test_empty_and_cuda_free_text() -> None:
    assert port("") == ""
    plain = "int main() { return 0; }\n"
    out, report = port_source(plain)
    assert out is plain and report.status == "unchanged" and report.translated == {}


# --------------------------------------------------------------------- comments and strings
def test_comments_untouched_by_default() -> None:
    text = "// cudaMalloc\n/* cudaFree */ cudaMalloc(p); /* multi\n cudaFree\n */\n"
    assert port(text) == "// cudaMalloc\n/* cudaFree */ musaMalloc(p); /* multi\n cudaFree\n */\n"


def test_line_comment_continuation() -> None:
    text = "// note \\\n cudaFree(p);\ncudaFree(q);\n"
    assert port(text) == "// note \\\n cudaFree(p);\nmusaFree(q);\n"


def test_line_comment_continuation_crlf() -> None:
    text = "// note \\\r\n cudaFree(p);\r\ncudaFree(q);\r\n"
    assert port(text) == "// note \\\r\n cudaFree(p);\r\nmusaFree(q);\r\n"


def test_unterminated_block_comment_runs_to_end() -> None:
    text = "cudaFree(a); /* cudaFree(b);"
    assert port(text) == "musaFree(a); /* cudaFree(b);"


def test_rewrite_comments_option() -> None:
    text = '// call cudaMalloc then at::cuda\nauto s = "cudaMalloc"; cudaMalloc(p);'
    out, report = port_source(text, rewrite_comments=True)
    # Plain renames only, and never inside strings.
    assert out == '// call musaMalloc then at::cuda\nauto s = "cudaMalloc"; musaMalloc(p);'
    assert report.translated["cudaMalloc"] == 2


@pytest.mark.parametrize(
    "literal",
    [
        '"cudaMalloc"',
        '"escaped \\" cudaMalloc \\\\"',
        'L"cudaMalloc"',
        'u8"cudaMalloc"',
        'R"(cudaMalloc)"',
        'R"xy(cudaMalloc )" still raw cudaFree)xy"',
        'u8R"(cudaMalloc)"',
        'LR"d(cudaMalloc)d"',
        "'\"'",
        "'\\''",
        '"line \\\n cudaMalloc"',
    ],
)
def test_string_literals_untouched(literal: str) -> None:
    text = f"auto v = {literal}; cudaFree(p);"
    assert port(text) == f"auto v = {literal}; musaFree(p);"


def test_raw_string_needs_prefix_boundary() -> None:
    # FOOR"x" is an identifier followed by an ordinary string, not a raw string.
    text = 'FOOR"(" cudaFree(p); ")"'
    assert port(text) == 'FOOR"(" musaFree(p); ")"'


@pytest.mark.parametrize("number", ["1'000'000", "0xFF'FF", "0b1010'1010", "1'0.5'0f"])
def test_digit_separators_are_not_char_literals(number: str) -> None:
    text = f"x = {number}; cudaFree(p); y = 1'0;"
    assert port(text) == f"x = {number}; musaFree(p); y = 1'0;"


def test_apostrophe_in_error_directive() -> None:
    text = "#error CUDA isn't here\ncudaFree(p);\n"
    assert port(text) == "#error CUDA isn't here\nmusaFree(p);\n"


def test_macro_line_continuation_is_code() -> None:
    text = "#define FREE(p) \\\n  cudaFree(p)\n"
    assert port(text) == "#define FREE(p) \\\n  musaFree(p)\n"


def test_crlf_and_bom_preserved() -> None:
    text = "\ufeff#include <cuda_runtime.h>\r\ncudaMalloc(p);\r\n"
    assert port(text) == "\ufeff#include <musa_runtime.h>\r\nmusaMalloc(p);\r\n"


# --------------------------------------------------------------------- includes
@pytest.mark.parametrize(
    "before, after",
    [
        ("#include <cuda_runtime.h>", "#include <musa_runtime.h>"),
        ('#include "cuda_runtime.h"', '#include "musa_runtime.h"'),
        ("  #  include   <cublas_v2.h>", "  #  include   <mublas.h>"),
        ("#include_next <cuda.h>", "#include_next <musa.h>"),
        ('#include "ops/kernel.cuh"', '#include "ops/kernel.muh"'),
        ('#include "unity.cu"', '#include "unity.mu"'),
        ("#include <lib/kernel.cuh>", "#include <lib/kernel.cuh>"),
        (
            "#include <ATen/cuda/CUDAContext.h>",
            "#include <torch_musa/csrc/aten/musa/MUSAContext.h>",
        ),
        ("#include <c10/cuda/CUDAGuard.h>", "#include <torch_musa/csrc/core/MUSAGuard.h>"),
        ("#if __has_include(<cuda_bf16.h>)", "#if __has_include(<musa_bf16.h>)"),
        ('#if __has_include("x.cuh")', '#if __has_include("x.muh")'),
        ("#include <vector>", "#include <vector>"),
        ("// #include <cuda.h>", "// #include <cuda.h>"),
        ('x = "#include <cuda.h>";', 'x = "#include <cuda.h>";'),
    ],
)
def test_includes(before: str, after: str) -> None:
    assert port(before + "\n") == after + "\n"


def test_include_rename_can_be_disabled() -> None:
    text = '#include "kernel.cuh"\n#include <cuda.h>\n'
    assert port(text, rename_cu=False) == '#include "kernel.cuh"\n#include <musa.h>\n'


def test_include_not_at_line_start_is_not_a_directive() -> None:
    text = "int x; #include <cuda.h>\n"
    assert port(text) == text


def test_unknown_cuda_headers_reported() -> None:
    report = report_of("#include <cuda/std/atomic>\n#include <lib/x.cuh>\n#include <map>\n")
    assert set(report.remaining) == {"<cuda/std/atomic>", "<lib/x.cuh>"}
    assert report.remaining["<lib/x.cuh>"].line == 2


def test_unsupported_header_kept_for_review() -> None:
    text = "#include <nvToolsExt.h>\n"
    out, report = port_source(text)
    assert out == text
    assert "<nvToolsExt.h>" in report.attention


# --------------------------------------------------------------------- contexts
@pytest.mark.parametrize(
    "before, after",
    [
        ("at::cuda::getCurrentCUDAStream()", "at::musa::getCurrentMUSAStream()"),
        ("::at::cuda::CUDAStream s", "::at::musa::MUSAStream s"),
        ("at :: cuda :: CUDAEvent e", "at :: musa :: MUSAEvent e"),
        (
            "c10::cuda::CUDACachingAllocator::raw_alloc(n)",
            "c10::musa::MUSACachingAllocator::raw_alloc(n)",
        ),
        ("thrust::cuda::par.on(s)", "thrust::musa::par.on(s)"),
        ("x.is_cuda()", "x.is_privateuseone()"),
        ("p->is_cuda()", "p->is_privateuseone()"),
        ("x . is_cuda ()", "x . is_privateuseone ()"),
        ("c10::DeviceType::CUDA", "c10::DeviceType::PrivateUse1"),
        ("c10::DispatchKey::CUDA", "c10::DispatchKey::PrivateUse1"),
        ("at::Backend::CUDA", "at::Backend::PrivateUse1"),
        ("torch::kCUDA", "torch::kPrivateUse1"),
        ("DispatchKey::AutogradCUDA", "DispatchKey::AutogradPrivateUse1"),
    ],
)  # fmt: skip
def test_contextual_rules(before: str, after: str) -> None:
    assert port(before) == after


@pytest.mark.parametrize(
    "text",
    [
        "bool is_cuda = true;",
        "namespace cuda { }",
        "my::cuda::thing",
        "enum class Dev { CPU, CUDA };",
        "FOO_IMPL(ns, CUDA, m)",
    ],
)
def test_contexts_that_do_not_apply(text: str) -> None:
    out, report = port_source(text)
    assert out == text
    assert set(report.remaining) & {"is_cuda", "cuda", "CUDA"}


@pytest.mark.parametrize(
    "before, after",
    [
        ("TORCH_LIBRARY_IMPL(myops, CUDA, m) {}", "TORCH_LIBRARY_IMPL(myops, PrivateUse1, m) {}"),
        ("TORCH_LIBRARY_IMPL( my_ops2 ,CUDA,m)", "TORCH_LIBRARY_IMPL( my_ops2 ,PrivateUse1,m)"),
        (
            "STABLE_TORCH_LIBRARY_IMPL(\n    myops,\n    CUDA,\n    m) {}",
            "STABLE_TORCH_LIBRARY_IMPL(\n    myops,\n    PrivateUse1,\n    m) {}",
        ),
        (
            "TORCH_LIBRARY_IMPL(ns, /* gpu */ CUDA, m)",
            "TORCH_LIBRARY_IMPL(ns, /* gpu */ PrivateUse1, m)",
        ),
        ("TORCH_LIBRARY_IMPL(ns, \\\n CUDA, m)", "TORCH_LIBRARY_IMPL(ns, \\\n PrivateUse1, m)"),
        (
            "TORCH_LIBRARY_IMPL(ns, AutogradCUDA, m)",
            "TORCH_LIBRARY_IMPL(ns, AutogradPrivateUse1, m)",
        ),
        ("TORCH_LIBRARY_IMPL(ns, CPU, m)", "TORCH_LIBRARY_IMPL(ns, CPU, m)"),
    ],
)
def test_dispatch_keys(before: str, after: str) -> None:
    assert port(before) == after


def test_unsupported_and_version_kept_for_review() -> None:
    text = (
        "#if CUDA_VERSION >= 12000 && CUDART_VERSION > 11000\n"
        "cudaLaunchCooperativeKernelMultiDevice(p, n, 0);\n#endif\n"
    )
    out, report = port_source(text)
    assert out == text
    assert "MUSA_VERSION" not in out
    assert set(report.attention) == {
        "CUDA_VERSION", "CUDART_VERSION", "cudaLaunchCooperativeKernelMultiDevice"
    }  # fmt: skip
    assert report.attention["CUDART_VERSION"].note
    assert report.remaining == {}


def test_remaining_heuristics() -> None:
    text = (
        'cudaFancyNewApi(x); cuFutureThing(); CU_NEW_ENUM; CUnewtype t; nvtxRangePush("a");\n'
        "getCurrentCUDAThing(); WITH_CUDA; launch_cuda(); barracuda(); accumulate(); cub::Sum s;\n"
        "#define MY_CUDA_CHECK(x) x\nMY_CUDA_CHECK(y);\n"
    )
    report = report_of(text)
    assert set(report.remaining) == {
        "cudaFancyNewApi", "cuFutureThing", "CU_NEW_ENUM", "CUnewtype", "nvtxRangePush",
        "getCurrentCUDAThing", "WITH_CUDA", "launch_cuda",
    }  # fmt: skip
    assert report.remaining["WITH_CUDA"].line == 2


# --------------------------------------------------------------------- __CUDA_ARCH__
@pytest.mark.parametrize(
    "before, after",
    [
        ("#if __CUDA_ARCH__ >= 800", "#if __MUSA_ARCH__ >= 220"),
        ("#if __CUDA_ARCH__ >= 860", "#if __MUSA_ARCH__ >= 220"),
        ("#if __CUDA_ARCH__ >= 900", "#if __MUSA_ARCH__ >= 310"),
        ("#if __CUDA_ARCH__ >= 700", "#if __MUSA_ARCH__ >= 210"),
        ("#if __CUDA_ARCH__ >= 1000", "#if 0"),
        ("#if __CUDA_ARCH__ > 799", "#if __MUSA_ARCH__ >= 220"),
        ("#if __CUDA_ARCH__ < 800", "#if __MUSA_ARCH__ < 220"),
        ("#if __CUDA_ARCH__ < 750", "#if __MUSA_ARCH__ < 210"),
        ("#if __CUDA_ARCH__ < 1200", "#if 1"),
        ("#if __CUDA_ARCH__ <= 899", "#if __MUSA_ARCH__ < 310"),
        ("#if __CUDA_ARCH__ == 800", "#if __MUSA_ARCH__ == 220"),
        ("#if __CUDA_ARCH__ != 900", "#if __MUSA_ARCH__ != 310"),
        ("#if __CUDA_ARCH__ == 1000", "#if 0"),
        ("#if __CUDA_ARCH__ != 1000", "#if 1"),
        ("#if __CUDA_ARCH__>=800u", "#if __MUSA_ARCH__>=220"),
        ("#if 800 <= __CUDA_ARCH__", "#if 220 <= __MUSA_ARCH__"),
        ("#if 900 > __CUDA_ARCH__", "#if 310 > __MUSA_ARCH__"),
        ("#if 1000 <= __CUDA_ARCH__", "#if 0"),
        ("#elif (__CUDA_ARCH__ >= 800)", "#elif (__MUSA_ARCH__ >= 220)"),
        ("#if X && __CUDA_ARCH__ >= 800 // sm80", "#if X && __MUSA_ARCH__ >= 220 // sm80"),
        ("#if __CUDA_ARCH__ >= 800 /* ampere */", "#if __MUSA_ARCH__ >= 220 /* ampere */"),
        ("#if defined(__CUDA_ARCH__) /* dev */ && X", "#if defined(__MUSA_ARCH__) /* dev */ && X"),
        ("#if X || \\\n  __CUDA_ARCH__ >= 900", "#if X || \\\n  __MUSA_ARCH__ >= 310"),
        ("#ifdef __CUDA_ARCH__", "#ifdef __MUSA_ARCH__"),
        ("#ifndef __CUDA_ARCH__", "#ifndef __MUSA_ARCH__"),
        ("#if defined(__CUDA_ARCH__)", "#if defined(__MUSA_ARCH__)"),
        ("#if defined __CUDA_ARCH__", "#if defined __MUSA_ARCH__"),
        ("#if !defined( __CUDA_ARCH__ )", "#if !defined( __MUSA_ARCH__ )"),
        ("#if __CUDA_ARCH__", "#if __MUSA_ARCH__"),
        ("#if !__CUDA_ARCH__", "#if !__MUSA_ARCH__"),
        ("#elif __CUDA_ARCH__ && X", "#elif __MUSA_ARCH__ && X"),
        ("constexpr bool k = __CUDA_ARCH__ >= 800;", "constexpr bool k = __MUSA_ARCH__ >= 220;"),
    ],
)
def test_arch_rewrites(before: str, after: str) -> None:
    assert port(before + "\n") == after + "\n"


@pytest.mark.parametrize(
    "text",
    [
        "#if __CUDA_ARCH__ >= 800 + 6",
        "#if 1 + __CUDA_ARCH__ >= 800",
        "#if __CUDA_ARCH__ >= SM80",
        "#if __CUDA_ARCH__ >= 0x320",
        "int a = __CUDA_ARCH__ / 100;",
        "#define ARCH __CUDA_ARCH__",
        "#if (__CUDA_ARCH__) >= 800",
        "#if __CUDA_ARCH__ << 1",
        "#if __CUDA_ARCH__ == 800 < 1",
        "#if X == __CUDA_ARCH__ == 800",
        "#if __CUDA_ARCH__ /* sm */ >= 800",
        "#if __CUDA_ARCH__ >= 800 /* base */ + 6",
    ],
)
def test_arch_uses_left_for_review(text: str) -> None:
    out, report = port_source(text + "\n")
    assert out == text + "\n"
    assert report.attention["__CUDA_ARCH__"].count >= 1


def _c_eval(expr: str, macro: str, value: Optional[int]) -> bool:
    # Evaluate a rewritten #if expression with the macro set (or undefined, i.e. 0).
    py = expr.replace(macro, str(value or 0)).replace("&&", " and ").replace("||", " or ")
    py = re.sub(r"!(?!=)", " not ", py)
    return bool(eval(py))  # noqa: S307 - test-only, built from our own output


CUDA_PROBES = [100, 350, 700, 750, 799, 800, 860, 899, 900, 950, 999, 1000, 1200]


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
@pytest.mark.parametrize("number", CUDA_PROBES)
def test_arch_semantics(op: str, number: int) -> None:
    """Host pass agrees with CUDA; each MUSA arch behaves like its CUDA tier."""
    out = port(f"__CUDA_ARCH__ {op} {number}")
    cuda = lambda v: eval(f"{v} {op} {number}")  # noqa: E731
    # Host pass: the arch macro is undefined (0) on both sides.
    assert _c_eval(out, "__MUSA_ARCH__", None) == cuda(0), out
    for tier in load_rules().arch_tiers:
        got = _c_eval(out, "__MUSA_ARCH__", tier.musa_arch)
        if op in ("==", "!="):
            # Equality asks "is this the generation of N": tier membership.
            member = tier.cuda_min <= number <= tier.cuda_max
            assert got == (member if op == "==" else not member), (out, tier)
        else:
            # Ordered comparisons ask for features: a MUSA arch has all of its tier's.
            assert got == cuda(tier.cuda_max), (out, tier)
    reversed_out = port(f"{number} {_flip(op)} __CUDA_ARCH__")
    for value in [None] + [t.musa_arch for t in load_rules().arch_tiers]:
        assert _c_eval(reversed_out, "__MUSA_ARCH__", value) == _c_eval(
            out, "__MUSA_ARCH__", value
        ), (out, reversed_out)


def _flip(op: str) -> str:
    return {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}[op]


# --------------------------------------------------------------------- reports
def test_report_json_roundtrip_and_table() -> None:
    text = "#include <cuda.h>\ncudaMalloc(p);\ncudaMalloc(q);\ncudaNewThing();\n#if CUDA_VERSION\n"
    report = report_of(text, filename="k.cu")
    data = json.loads(report.to_json())
    assert data["path"] == "k.cu" and data["status"] == "ported"
    assert data["translated"] == {"cuda.h": 1, "cudaMalloc": 2}
    assert data["remaining"] == {"cudaNewThing": {"count": 1, "line": 4}}
    assert data["attention"]["CUDA_VERSION"]["line"] == 5
    assert FileReport.from_dict(data).to_dict() == data
    table = report.format_table()
    assert "k.cu" in table and "cudaNewThing" in table and "cudaMalloc x2" in table


def test_names_the_file_declares_are_not_reported_as_unported():
    text = """
std::vector<torch::Tensor> lltm_cuda_forward(torch::Tensor input);
template <typename scalar_t> __global__ void tmpl_cuda_kernel(scalar_t* x) {}
static const int use_cuda_graph = 1;
struct cuda_state { int a; };
int f() { return helper_cuda(3) + other_cuda_thing + use_cuda_graph; }
auto y = lltm_cuda_forward(x);
bool is_cuda = true;
"""
    out, report = port_source(text, filename="lltm.cpp")
    assert out == text
    # Used but declared elsewhere: still reported; so is a rule name whose context did not apply.
    assert set(report.remaining) == {"helper_cuda", "other_cuda_thing", "is_cuda"}
