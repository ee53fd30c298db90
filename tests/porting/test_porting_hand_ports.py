"""What Moore Threads' hand ports do that the porter must do too (issue 27), family by family:
legacy THC names, compile-time switches, IPC and launch-attribute names, torch's CUDA helpers,
torch_musa's own spellings, member rewrites checked against their receiver, and the opt-in
renaming of a project's own CUDA-named names. Plus the measuring tool on a tiny pair of trees."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from torchada.porting import load_rules, port_source, port_tree
from torchada.porting.cli import main as cli_main
from torchada.porting.project import (
    ProjectRenames,
    collect_project_names,
    musa_spelling,
    project_path,
)

ROOT = Path(__file__).resolve().parents[2]


def port(text: str) -> str:
    return port_source(text)[0]


CONTEXT = "#include <ATen/cuda/CUDAContext.h>\n"
MUSA_CONTEXT = "#include <torch_musa/csrc/aten/musa/MUSAContext.h>\n"


# --------------------------------------------------------------------- 1. legacy THC
@pytest.mark.parametrize(
    "before, after",
    [
        ("THCudaCheck(cudaGetLastError());", "AT_MUSA_CHECK(musaGetLastError());"),
        ("THCudaCheckWarn(cudaFree(p));", "C10_MUSA_CHECK_WARN(musaFree(p));"),
        ("dim3 grid(THCCeilDiv(n, 256));", "dim3 grid(at::ceil_div(n, 256));"),
        ("#include <THC/THC.h>", "#include <torch_musa/csrc/aten/musa/MUSAContext.h>"),
        ("#include <THC/THCAtomics.cuh>", "#include <ATen/musa/Atomic.muh>"),
        ("#include <THC/THCDeviceUtils.cuh>", "#include <ATen/musa/DeviceUtils.muh>"),
    ],
)
def test_thc_names_with_a_successor(before: str, after: str) -> None:
    assert port(before) == after


def test_thc_ceil_div_asks_for_its_header_unless_included() -> None:
    _, report = port_source("int b = THCCeilDiv(n, 32);")
    assert "ATen/ceil_div.h" in report.attention["THCCeilDiv"].note
    _, report = port_source("#include <ATen/ceil_div.h>\nint b = THCCeilDiv(n, 32);")
    assert "THCCeilDiv" not in report.attention
    assert report.translated["THCCeilDiv"] == 1


@pytest.mark.parametrize(
    "name, hint",
    [
        ("THCState", "state"),
        ("THCState_getCurrentStream", "getCurrentMUSAStream"),
        ("THCudaMalloc", "raw_alloc"),
        ("THCudaFree", "raw_delete"),
        ("THCNumerics", "numeric_limits"),
    ],
)
def test_thc_names_without_a_drop_in_are_reported(name: str, hint: str) -> None:
    text = f"auto x = {name}(state);"
    out, report = port_source(text)
    assert out == text
    assert hint in report.attention[name].note


def test_unknown_thc_names_are_reported_as_unported() -> None:
    _, report = port_source("THCTensor_resize(state, t, 3);")
    assert "THCTensor_resize" in report.remaining


# --------------------------------------------------------------------- 2. compile-time switches
@pytest.mark.parametrize(
    "switch",
    [
        "HALF_CONVERSIONS",
        "HALF_OPERATORS",
        "HALF2_OPERATORS",
        "BFLOAT16_CONVERSIONS",
        "BFLOAT16_OPERATORS",
        "BFLOAT162_OPERATORS",
    ],
)
def test_half_and_bfloat16_switches(switch: str) -> None:
    text = f"#ifdef __CUDA_NO_{switch}__\n#undef __CUDA_NO_{switch}__\n#endif\n"
    assert port(text) == text.replace("__CUDA_NO_", "__MUSA_NO_")


def test_relocatable_device_code_switch() -> None:
    assert port("#if defined(__CUDACC_RDC__)") == "#if defined(__MUSACC_RDC__)"


def test_arch_macro_defined_for_editors_keeps_its_value() -> None:
    assert port("#define __CUDA_ARCH__ 900\n") == "#define __MUSA_ARCH__ 900\n"


# --------------------------------------------------------------------- 3. IPC and launch attributes
@pytest.mark.parametrize(
    "before, after",
    [
        ("char h[CUDA_IPC_HANDLE_SIZE];", "char h[MUSA_IPC_HANDLE_SIZE];"),
        ("char h[CU_IPC_HANDLE_SIZE];", "char h[MU_IPC_HANDLE_SIZE];"),
        ("a.id = cudaLaunchAttributeCooperative;", "a.id = musaLaunchAttributeCooperative;"),
        (
            "a.id = cudaLaunchAttributeClusterDimension;",
            "a.id = musaLaunchAttributeClusterDimension;",
        ),
        ("cudaLaunchAttributeValue v;", "musaLaunchAttributeValue v;"),
        ("cudaLaunchAttributeID id;", "musaLaunchAttributeID id;"),
    ],
)
def test_ipc_and_launch_attribute_names(before: str, after: str) -> None:
    assert port(before) == after


def test_launch_attributes_musa_lacks_are_reported() -> None:
    text = "a.id = cudaLaunchAttributeProgrammaticStreamSerialization;"
    out, report = port_source(text)
    assert out == text
    note = report.attention["cudaLaunchAttributeProgrammaticStreamSerialization"].note
    assert "musaLaunchAttributeIgnore" in note


def test_every_launch_attribute_rule_stays_in_its_family() -> None:
    family = [r for r in load_rules().rules if r.cuda.startswith("cudaLaunchAttribute")]
    assert len(family) >= 10
    for rule in family:
        if rule.kind == "rename":
            assert rule.musa == "musa" + rule.cuda[len("cuda") :]


# --------------------------------------------------------------------- 4. torch's CUDA helpers
def test_scalar_type_to_data_type_is_renamed_and_flagged() -> None:
    out, report = port_source("auto t = at::cuda::ScalarTypeToCudaDataType(x.scalar_type());")
    assert out == "auto t = at::musa::ScalarTypeToMusaDataType(x.scalar_type());"
    assert "define" in report.attention["ScalarTypeToCudaDataType"].note


def test_version_macros_are_never_renamed() -> None:
    # MUSA's own version (MUSA_VERSION 50200 for SDK 5.2) passes every CUDA 12 guard, so not even
    # a use as a whole value takes it: each stays CUDA's, reported for review.
    for kept, macro in (
        ("#if CUDA_VERSION >= 12000", "CUDA_VERSION"),
        ("if (CUDA_VERSION >= 12000) {}", "CUDA_VERSION"),
        ("if constexpr (CUDA_VERSION >= 12080) { f(); }", "CUDA_VERSION"),
        ("int major = CUDA_VERSION / 1000;", "CUDA_VERSION"),
        ("return (CUDA_VERSION) >= 1;", "CUDA_VERSION"),
        ("int64_t v() { return CUDA_VERSION; }", "CUDA_VERSION"),
        ('m.attr("rt") = py::int_(CUDART_VERSION);', "CUDART_VERSION"),
        ("#if __CUDACC_VER_MAJOR__ >= 12\n#endif", "__CUDACC_VER_MAJOR__"),
        ("int nvcc = __CUDACC_VER_MAJOR__;", "__CUDACC_VER_MAJOR__"),
    ):
        out, report = port_source(kept)
        assert out == kept and macro in report.attention, kept
        assert "MUSA_VERSION" not in out and "MUSART_VERSION" not in out


# --------------------------------------------------------------------- 5. torch_musa's spellings
@pytest.mark.parametrize(
    "before, after",
    [
        (CONTEXT + "auto d = at::kCUDA;", MUSA_CONTEXT + "auto d = at::kMUSA;"),
        (CONTEXT + "auto d = torch::kCUDA;", MUSA_CONTEXT + "auto d = torch::kMUSA;"),
        # c10 has no kMUSA.
        (CONTEXT + "auto d = c10::kCUDA;", MUSA_CONTEXT + "auto d = c10::kPrivateUse1;"),
        # Bare: only where at:: names are visible.
        (CONTEXT + "using namespace at;\nauto d = kCUDA;", None),
        (CONTEXT + "auto d = kCUDA;", MUSA_CONTEXT + "auto d = kPrivateUse1;"),
        # No torch_musa header that declares kMUSA: the spelling that always compiles.
        ("auto d = at::kCUDA;", "auto d = at::kPrivateUse1;"),
        (
            "#include <c10/cuda/CUDAGuard.h>\nauto d = at::kCUDA;",
            "#include <torch_musa/csrc/core/MUSAGuard.h>\nauto d = at::kMUSA;",
        ),
        (MUSA_CONTEXT + "auto d = at::kCUDA;", MUSA_CONTEXT + "auto d = at::kMUSA;"),
    ],
)
def test_device_type_spelling(before: str, after) -> None:
    out = port(before)
    if after is None:
        assert out.endswith("auto d = kMUSA;")
    else:
        assert out == after


def test_kmusa_needs_the_include_before_the_use() -> None:
    out = port("auto d = at::kCUDA;\n" + CONTEXT)
    assert out.startswith("auto d = at::kPrivateUse1;")


@pytest.mark.parametrize(
    "cuda, musa",
    [
        ("ATen/cuda/CUDAContext.h", "torch_musa/csrc/aten/musa/MUSAContext.h"),
        ("ATen/cuda/CUDAEvent.h", "torch_musa/csrc/core/MUSAEvent.h"),
        ("ATen/cuda/PeerToPeerAccess.h", "torch_musa/csrc/core/PeerToPeerAccess.h"),
        ("ATen/cuda/Atomic.cuh", "ATen/musa/Atomic.muh"),
        ("ATen/cuda/DeviceUtils.cuh", "ATen/musa/DeviceUtils.muh"),
        ("ATen/cuda/CUDAApplyUtils.cuh", "ATen/musa/MUSAApplyUtils.muh"),
        ("ATen/cuda/ThrustAllocator.h", "ATen/musa/ThrustAllocator.h"),
        ("ATen/cuda/CUDADataType.h", "ATen/musa/MUSADataType.h"),
        ("c10/cuda/CUDAMathCompat.h", "c10/musa/MUSAMathCompat.h"),
    ],
)
def test_header_spellings_follow_torch_musa(cuda: str, musa: str) -> None:
    # torch_musa's own headers where it has them, else the copies it generates from PyTorch's.
    assert load_rules().headers[cuda].musa == musa


def test_every_header_that_provides_kmusa_is_a_torch_musa_header() -> None:
    rules = load_rules()
    providers = [h for h, f in rules.header_features.items() if "kMUSA" in f]
    assert "torch_musa/csrc/aten/musa/MUSAContext.h" in providers
    assert all(h.startswith("torch_musa/csrc/") for h in providers)


# --------------------------------------------------------------------- 6. member rewrites
@pytest.mark.parametrize(
    "before, after",
    [
        ("ok = x.type().is_cuda();", "ok = x.is_privateuseone();"),
        ("ok = p->type().is_cuda();", "ok = p->is_privateuseone();"),
        ("ok = x.type () . is_cuda();", "ok = x.is_privateuseone();"),
        ("ok = x.type()\n  .is_cuda();", "ok = x.\nis_privateuseone();"),
        ("ok = v[0].type().is_cuda();", "ok = v[0].is_privateuseone();"),
    ],
)
def test_deprecated_type_object_is_skipped(before: str, after: str) -> None:
    out = port(before)
    assert out == after
    assert out.count("\n") == before.count("\n")


STABLE = "#include <torch/csrc/stable/tensor.h>\n"


@pytest.mark.parametrize(
    "text",
    [
        STABLE + "torch::stable::Tensor s = f();\nbool ok = s.is_cuda();",
        "auto t = x.type();\nbool ok = t.is_cuda();",
        "at::DeprecatedTypeProperties& t = x.type();\nbool ok = t.is_cuda();",
        "void f(const PackedSequence& seq) { seq.is_cuda(); }",
        "c10::Symbol s = c10::Symbol::fromQualString(q);\nbool ok = s.is_cuda();",
        STABLE + "using namespace torch::stable;\nvoid f(Tensor s) { s.is_cuda(); }",
        # A file with a receiver type lacking the replacement, and a receiver it does not declare.
        STABLE + "torch::stable::Tensor s;\nbool ok = unknown.is_cuda();",
    ],
)
def test_receivers_without_the_replacement_are_left_and_reported(text: str) -> None:
    out, report = port_source(text)
    assert out == text
    assert "left" in report.attention["is_cuda"].note


def test_receiver_declared_in_scope_decides() -> None:
    # The same name declared as a stable tensor elsewhere does not stop the rewrite here.
    text = STABLE + (
        "torch::stable::Tensor f(torch::stable::Tensor x);\n"
        "bool g(const at::Tensor& x) { return x.is_cuda(); }\n"
    )
    out, report = port_source(text)
    assert out.endswith("return x.is_privateuseone(); }\n")
    assert report.attention == {}


def test_stable_abi_is_recognised_by_its_headers_also_far_below() -> None:
    # A long stable-ABI file: the declaration is far from the include and from the use.
    text = STABLE + "int pad;\n" * 400 + "void f(torch::stable::Tensor s) {\n"
    text += "  int pad2;\n" * 200 + "  s.is_cuda();\n}\n"
    out, report = port_source(text)
    assert out == text and "is_cuda" in report.attention
    # Beyond that reach, a using-directive after the includes still covers the whole file.
    far = STABLE + "using namespace torch::stable;\n" + "int pad;\n" * 3000
    far += "void g(Tensor s) { s.is_cuda(); }"
    assert port(far) == far


def test_ordinary_files_rewrite_every_member_call() -> None:
    # Nothing in the file has is_cuda() without is_privateuseone(): any receiver can take it.
    text = "#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x)\nbool f() { return y->is_cuda(); }"
    assert port(text).count("is_privateuseone()") == 2


# --------------------------------------------------------------------- 7. project names (opt-in)
@pytest.mark.parametrize(
    "name, new",
    [
        ("WITH_CUDA", "WITH_MUSA"),
        ("CHECK_CUDA", "CHECK_MUSA"),
        ("CUDA_CHECK", "MUSA_CHECK"),
        ("spmm_cuda", "spmm_musa"),
        ("cudaErrChk", "musaErrChk"),
        ("launchCudaKernel", "launchMusaKernel"),
        ("PyInit__rw_cuda", "PyInit__rw_musa"),
        ("barracuda", None),
        ("cudart_like", None),
        ("NCUDAX", None),
    ],
)
def test_musa_spelling(name: str, new) -> None:
    assert musa_spelling(name) == new


def test_project_path() -> None:
    assert project_path("csrc/cuda/rw_cuda.cu") == "csrc/musa/rw_musa.cu"
    assert project_path("csrc/cuda_utils.h") == "csrc/musa_utils.h"
    assert project_path("csrc/cpu/rw_cpu.cpp") == "csrc/cpu/rw_cpu.cpp"


def write(root: Path, files: dict) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_collect_finds_defined_and_build_names(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.cpp": (
                "#ifdef WITH_CUDA\n#define CHECK_CUDA(x) x\nTensor rw_cuda(Tensor t);\n#endif\n"
                "#if defined(TORCH_USE_CUDA_DSA)\n#endif\n"
                "void f() { cudaFree(p); rw_cuda(t); CUDA_HAS_FP16; }\n"
            ),
        },
    )
    renames = collect_project_names(tmp_path)
    assert renames.names == {
        "WITH_CUDA": "WITH_MUSA",
        "CHECK_CUDA": "CHECK_MUSA",
        "rw_cuda": "rw_musa",
    }
    # Rule keys (cudaFree), torch's switches and names the tree neither defines nor tests as a
    # build switch are not the project's.


def test_collect_leaves_clashes_and_musa_sources_alone(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.cpp": "int add_cuda(int);\nint add_musa(int);\nint mul_cuda(int);\n",
            "k.mu": "int mul_cuda(int x) { return x; }\n",
        },
    )
    renames = collect_project_names(tmp_path)
    assert renames.names == {}
    notes = " ".join(renames.notes)
    assert "add_musa is already used" in notes and "mul_cuda" in notes


def test_path_renames_are_all_or_nothing(tmp_path: Path) -> None:
    write(tmp_path, {"cuda/a.cu": "", "cuda/b.cuh": "", "musa/a.mu": ""})
    renames = collect_project_names(tmp_path)
    assert renames.paths == {}
    assert any("clash" in note for note in renames.notes)


def test_include_of_a_renamed_file() -> None:
    renames = ProjectRenames(paths={"csrc/cuda/k.cuh": "csrc/musa/k.cuh"})
    assert renames.include('"cuda/k.cuh"', "csrc/ops.cpp") == '"musa/k.cuh"'
    assert renames.include('"../cuda/k.cuh"', "csrc/cpu/x.cpp") == '"../musa/k.cuh"'
    assert renames.include('"k.cuh"', "csrc/cuda/k.cu") == '"k.cuh"'
    assert renames.include('"cuda/other.h"', "csrc/ops.cpp") is None
    assert renames.include("<cuda/std/atomic>", "csrc/ops.cpp") is None


def test_rename_project_tree_is_consistent_and_idempotent(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(
        src,
        {
            "ops.cpp": (
                '#include "cuda/ops_cuda.h"\n#ifdef WITH_CUDA\n'
                "Tensor f(Tensor x) { return ops_cuda(x); }\n#endif\n"
            ),
            "cuda/ops_cuda.h": "Tensor ops_cuda(Tensor x);\n",
            "cuda/ops_cuda.cu": '#include "ops_cuda.h"\nTensor ops_cuda(Tensor x) { return x; }\n',
        },
    )
    out = tmp_path / "out"
    report = port_tree(src, out, rename_project=True)
    assert (out / "ops.cpp").read_text() == (
        '#include "musa/ops_musa.h"\n#ifdef WITH_MUSA\n'
        "Tensor f(Tensor x) { return ops_musa(x); }\n#endif\n"
    )
    assert (out / "musa/ops_musa.mu").read_text().startswith('#include "ops_musa.h"\n')
    assert (out / "musa/ops_musa.h").is_file() and not (out / "cuda").exists()
    assert report.file("cuda/ops_cuda.cu").output_path == "musa/ops_musa.mu"
    # Second run: nothing to do; a port of the ported tree changes nothing more.
    again = port_tree(src, out, rename_project=True)
    assert again.written == []
    twice = port_tree(out, tmp_path / "twice", rename_project=True)
    assert all(f.translated == {} for f in twice.files)


def test_turning_rename_project_on_invalidates_the_cache(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src, {"a.cpp": "#ifdef WITH_CUDA\nint x;\n#endif\n"})
    port_tree(src, tmp_path / "out")
    report = port_tree(src, tmp_path / "out", rename_project=True)
    assert report.written == ["a.cpp"]
    assert "WITH_MUSA" in (tmp_path / "out" / "a.cpp").read_text()


def test_cli_rename_project(tmp_path: Path, capsys) -> None:
    src = tmp_path / "src"
    write(src, {"a.cpp": "#ifdef WITH_CUDA\nint x;\n#endif\n"})
    assert cli_main([str(src), "--out", str(tmp_path / "out"), "--rename-project", "-q"]) == 0
    assert "WITH_MUSA" in (tmp_path / "out" / "a.cpp").read_text()
    assert cli_main([str(src), "--out", str(tmp_path / "plain"), "-q"]) == 0
    assert "WITH_CUDA" in (tmp_path / "plain" / "a.cpp").read_text()


# --------------------------------------------------------------------- the measuring tool
def test_port_measure_on_a_tiny_pair(tmp_path: Path) -> None:
    up, hand = tmp_path / "up", tmp_path / "hand"
    write(
        up,
        {
            "k.cu": (
                "#include <cuda_runtime.h>\n#include <THC/THC.h>\n"
                "void f(float* p, cudaStream_t s) { cudaFree(p); THCudaCheck(cudaGetLastError());"
                " keep(1); }\n"
            ),
        },
    )
    write(
        hand,
        {
            # The humans: the same renames, one include they spelled another way, and a THC
            # header they dropped.
            "k.mu": (
                "#include <musa_runtime.h>\n"
                "void f(float* p, musaStream_t s) { musaFree(p); AT_MUSA_CHECK(musaGetLastError());"
                " keep(1); }\n"
            ),
        },
    )
    out = tmp_path / "m.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "port_measure.py"), str(up), str(hand)]
        + ["--json", str(out), "--details", "5"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    import json

    (result,) = json.loads(out.read_text())
    assert result["files"] == 1
    api = result["api_renames"]
    assert (api["renames"], api["exact"]) == (4, 4)  # cudaStream_t, cudaFree, THCudaCheck, ...Error
    assert result["header_renames"]["exact"] == 1
    assert result["false_rewrites"] == 0
    assert result["restructured_by_humans"] == 1  # the dropped THC include
