"""The rule tables: shape, uniqueness, size, and consistency with the engine."""

from __future__ import annotations

import ast
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from torchada.porting import RuleError, Translator, load_rules, port_source
from torchada.porting._ruleset import KINDS, REWRITING_KINDS, RULES_DIR

EXPECTED_DOMAINS = {
    "runtime", "driver", "cublas", "curand", "cufft", "cusparse", "cusolver", "cudnn", "nccl",
    "aten", "thrust", "cutlass", "types", "arch", "version", "dispatch", "headers", "thc",
}  # fmt: skip


def raw_tables():
    for path in sorted(RULES_DIR.glob("*.json")):
        if not path.name.startswith("_"):
            yield path, json.loads(path.read_text("utf-8"))


def test_one_file_per_domain() -> None:
    domains = {data["domain"] for _, data in raw_tables()}
    assert domains == EXPECTED_DOMAINS
    for path, data in raw_tables():
        assert path.stem == data["domain"]
        assert data["description"]


def test_no_key_twice_across_domains() -> None:
    keys = Counter(rule["cuda"] for _, data in raw_tables() for rule in data["rules"])
    dupes = {k: n for k, n in keys.items() if n > 1}
    assert dupes == {}


def test_rule_count_at_least_450() -> None:
    rules = load_rules()
    assert len(rules) >= 450
    assert sum(rules.count_by_domain().values()) == len(rules)
    for domain, count in rules.count_by_domain().items():
        assert count > 0, domain


def test_every_rule_has_fields_and_known_kind() -> None:
    for path, data in raw_tables():
        for rule in data["rules"]:
            assert set(rule) >= {"cuda", "musa", "kind"}, (path.name, rule)
            assert rule["kind"] in KINDS, (path.name, rule)
            if rule["kind"] in ("unsupported", "version-guard"):
                assert rule.get("note"), (path.name, rule)  # must tell the user what to do


def test_outputs_are_never_inputs() -> None:
    # Idempotency at the table level: no replacement is itself a rewriting key.
    rules = load_rules()
    rewriting = {r.cuda for r in rules.rules if r.kind in REWRITING_KINDS}
    for rule in rules.rules:
        if rule.kind in REWRITING_KINDS and rule.musa != rule.cuda:
            assert rule.musa not in rewriting, rule
            assert rule.musa.rsplit("::", 1)[-1] not in rewriting, rule


def test_brief_mappings_present() -> None:
    by_key = load_rules().by_key
    expect = {
        "cudaMalloc": "musaMalloc", "cudaStream_t": "musaStream_t", "cudaSuccess": "musaSuccess",
        "cudaMemcpyHostToDevice": "musaMemcpyHostToDevice", "cuInit": "muInit",
        "CUresult": "MUresult", "CUDA_SUCCESS": "MUSA_SUCCESS", "CUdeviceptr": "MUdeviceptr",
        "cublasSgemm": "mublasSgemm", "CUBLAS_OP_N": "MUBLAS_OP_N",
        "CUBLAS_STATUS_NOT_SUPPORTED": "MUBLAS_STATUS_NOT_IMPLEMENTED",
        "cublasLtMatmul": "mublasLtMatmul", "cusolverDnCreate": "musolverDnCreate",
        "cudnnCreate": "mudnnCreate", "ncclComm_t": "mcclComm_t", "ncclAllReduce": "mcclAllReduce",
        "cuda_runtime.h": "musa_runtime.h", "cuda.h": "musa.h", "cublas_v2.h": "mublas.h",
        "curand.h": "murand.h", "cuda_fp16.h": "musa_fp16.h", "cuda_bf16.h": "musa_bf16.h",
        "cudnn.h": "mudnn.h", "nccl.h": "mccl.h", "at::cuda": "at::musa", "c10::cuda": "c10::musa",
        "getCurrentCUDAStream": "getCurrentMUSAStream", "CUDAGuard": "MUSAGuard",
        "OptionalCUDAGuard": "OptionalMUSAGuard", "CUDAStream": "MUSAStream",
        "AT_CUDA_CHECK": "AT_MUSA_CHECK", "C10_CUDA_CHECK": "C10_MUSA_CHECK",
        "C10_CUDA_KERNEL_LAUNCH_CHECK": "C10_MUSA_KERNEL_LAUNCH_CHECK",
        "CUDACachingAllocator": "MUSACachingAllocator",
        "ATen/cuda/CUDAContext.h": "torch_musa/csrc/aten/musa/MUSAContext.h",
        "c10/cuda/CUDAGuard.h": "torch_musa/csrc/core/MUSAGuard.h",
        "c10/cuda/CUDAStream.h": "torch_musa/csrc/core/MUSAStream.h",
        "kCUDA": "kMUSA",
        "DeviceType::CUDA": "DeviceType::PrivateUse1",
        "is_cuda": "is_privateuseone", "CUDA": "PrivateUse1",
        "__nv_bfloat16": "__mt_bfloat16", "__nv_bfloat162": "__mt_bfloat162",
        "__nv_half": "__half", "__nv_fp8_e4m3": "__mt_fp8_e4m3", "__nv_fp8_e5m2": "__mt_fp8_e5m2",
        "thrust::cuda": "thrust::musa", "__CUDA_ARCH__": "__MUSA_ARCH__",
    }  # fmt: skip
    for cuda, musa in expect.items():
        assert by_key[cuda].musa == musa, cuda
    for kept in ("__shfl_sync", "atomicAdd", "__syncthreads", "__float2half"):
        assert kept not in by_key
    for version in ("CUDA_VERSION", "CUDART_VERSION"):
        assert by_key[version].kind == "version-guard"
        assert by_key[version].musa == version  # never MUSA_VERSION


def test_arch_tiers_follow_the_vendor_table() -> None:
    tiers = load_rules().arch_tiers
    assert [t.musa_arch for t in tiers] == [210, 220, 310]
    assert [(t.cuda_min, t.cuda_max) for t in tiers] == [(0, 799), (800, 899), (900, 999)]


def test_all_keys_reachable_by_scanner() -> None:
    # Translator() raises if a rule key contains no needle; also check one port per key.
    translator = Translator()
    for rule in load_rules().rules:
        if rule.kind == "rename":
            out, report = translator.port(f"x = {rule.cuda};")
            # A rename that needs a header the text lacks writes its fallback (what compiles).
            assert out == f"x = {rule.extra.get('fallback', rule.musa)};", rule
            assert report.translated == {rule.cuda: 1}


def test_header_rules_apply_in_includes() -> None:
    for rule in load_rules().headers.values():
        if rule.kind == "header":
            out, _ = port_source(f"#include <{rule.cuda}>\n")
            assert out == f"#include <{rule.musa}>\n", rule


def copy_rules(tmp_path: Path) -> Path:
    target = tmp_path / "rules"
    shutil.copytree(RULES_DIR, target)
    return target


def test_duplicate_key_is_rejected(tmp_path: Path) -> None:
    rules_dir = copy_rules(tmp_path)
    extra = {"domain": "extra", "description": "dup", "rules": [
        {"cuda": "cudaMalloc", "musa": "musaMalloc", "kind": "rename"}]}  # fmt: skip
    (rules_dir / "extra.json").write_text(json.dumps(extra))
    with pytest.raises(RuleError, match="'cudaMalloc' is defined in domain") as info:
        load_rules(rules_dir)
    assert "'runtime'" in str(info.value) and "'extra'" in str(info.value)


@pytest.mark.parametrize(
    "rule, message",
    [
        ({"cuda": "cudaFoo", "musa": "musaFoo"}, "lacks field"),
        ({"cuda": "cudaFoo", "musa": "musaFoo", "kind": "teleport"}, "unknown kind"),
        ({"cuda": "at::cuda", "musa": "c10::musa", "kind": "qualified"}, "changes the qualifier"),
        ({"cuda": "cuda Foo", "musa": "musaFoo", "kind": "rename"}, "must map identifiers"),
    ],
)
def test_malformed_rules_are_rejected(tmp_path: Path, rule: dict, message: str) -> None:
    rules_dir = copy_rules(tmp_path)
    (rules_dir / "extra.json").write_text(json.dumps({"domain": "extra", "rules": [rule]}))
    with pytest.raises(RuleError, match=message):
        load_rules(rules_dir)


def test_unreachable_key_is_rejected(tmp_path: Path) -> None:
    rules_dir = copy_rules(tmp_path)
    rule = {"cuda": "warpReduceSum", "musa": "warpReduceSumMusa", "kind": "rename"}
    (rules_dir / "extra.json").write_text(json.dumps({"domain": "extra", "rules": [rule]}))
    with pytest.raises(RuleError, match="warpReduceSum.*no needle"):
        Translator(load_rules(rules_dir))


def test_code_holds_no_rule_literals() -> None:
    # Rules are data: no string constant in the porter's code (docstrings aside) names a CUDA API.
    api = re.compile(
        r"\b(?:cuda[A-Z]\w*|cuda_\w+\.h|cu[A-Z]\w+|CU[a-z_]\w+|CU[A-Z]+_\w+|cublas\w*|curand\w*|cufft\w*|cusparse\w*"
        r"|cusolver\w*|cudnn\w*|nccl\w*|NCCL_\w+|__nv_\w+|__CUDA\w*|\w*CUDA[A-Z]\w*|musa_\w+\.h)"
    )
    for module in sorted(RULES_DIR.parent.glob("*.py")):
        tree = ast.parse(module.read_text("utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) not in docstrings:
                    assert not api.search(node.value), (module.name, node.value)
