"""Each torch a torch_musa release pairs with (2.7.1 .. 2.13): what torchada does where a torch
lacks a feature a piece needs. Every test here asserts both sides: on a torch with the feature the
piece is installed and works; on one without it (2.7.1 in CI) the piece is left out, said once,
and everything else is installed. ``tools/compat.sh VERSION`` runs them on any listed torch."""

from __future__ import annotations

import json
import logging

import pytest
import torch
from conftest import run_python

from torchada._core import torch_features as _torch_features
from torchada._native import build as _build

SIM = {"TORCHADA_SIMULATE": "1", "TORCHADA_ACTIVE": "0"}
HAS_MM_DTYPE = _torch_features.has_operator("aten::mm.dtype")


def test_has_operator_reads_the_dispatcher():
    assert _torch_features.has_operator("aten::mm")
    assert _torch_features.has_operator("aten::mm.out")
    assert not _torch_features.has_operator("aten::mm.no_such_overload")
    assert not _torch_features.has_operator("aten::no_such_op")
    # What torch itself answers, on every torch.
    assert HAS_MM_DTYPE == hasattr(torch.ops.aten.mm, "dtype")


def test_left_out_says_it_once_per_piece(caplog):
    caplog.set_level(logging.INFO, logger="torchada")
    for _ in range(3):
        _torch_features.left_out("a test piece", "aten::nothing")
        _torch_features.left_out("a lossy test piece", "Nothing.method", "programs lose X")
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert said == [
        (
            "INFO",
            f"torchada: a test piece left out: torch {torch.__version__} has no aten::nothing",
        ),
        (
            "WARNING",
            f"torchada: a lossy test piece left out: torch {torch.__version__} has no "
            "Nothing.method; programs lose X",
        ),
    ]
    pieces = _torch_features.left_out_pieces()
    assert pieces["a test piece"] == "aten::nothing"
    assert pieces["a lossy test piece"] == "Nothing.method"


def _activated(extra: str = "") -> dict:
    # A fresh process: what enable() installs on this torch, and what it left out.
    r = run_python(
        f"""
        import json, logging, torch
        logging.basicConfig(level=logging.INFO)
        import torchada
        from torchada._core import torch_features as _torch_features
        enabled = torchada.enable()
        out = {{"enabled": enabled, "left_out": _torch_features.left_out_pieces()}}
        {extra}
        print(json.dumps(out))
        """,
        env=SIM,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return {**json.loads(r.stdout.strip().splitlines()[-1]), "stderr": r.stderr}


def test_mm_out_dtype_fill_follows_the_operator():
    out = _activated(
        """
        a = torch.randn(4, 8, device="cuda", dtype=torch.float16)
        try:
            r = torch.mm(a, a.t(), out_dtype=torch.float32)
            out["mm"] = [str(r.dtype), r.device.type]
        except TypeError as e:  # torch without the overload refuses the keyword itself
            out["mm"] = ["TypeError", str(e)]
        """
    )
    assert out["enabled"] is True
    if HAS_MM_DTYPE:
        assert out["mm"] == ["torch.float32", "musa"]
        assert "torch.mm out_dtype fill" not in out["left_out"]
    else:
        # Left out, said once at INFO, and torch.mm answers as this torch answers on CUDA.
        assert out["left_out"]["torch.mm out_dtype fill"] == "aten::mm.dtype"
        assert out["left_out"]["torch.bmm out_dtype fill"] == "aten::bmm.dtype"
        assert out["mm"][0] == "TypeError" and "out_dtype" in out["mm"][1]
        assert out["stderr"].count("torch.mm out_dtype fill left out") == 1


def test_c10d_device_methods_follow_what_backend_has():
    from torchada._distributed.c10d import C10D_DEVICE_METHODS

    c10d = torch._C._distributed_c10d
    expected_missing = {
        f"CUDA devices in {cls}.{name}"
        for cls, names in C10D_DEVICE_METHODS.items()
        for name in names
        if not hasattr(getattr(c10d, cls), name)
    }
    out = _activated(
        """
        c10d = torch._C._distributed_c10d
        from torchada._distributed.c10d import C10D_DEVICE_METHODS
        out["wrapped"] = sorted(
            f"{cls}.{name}" for cls, names in C10D_DEVICE_METHODS.items() for name in names
            if hasattr(getattr(c10d, cls), name)
            and hasattr(getattr(getattr(c10d, cls), name), "__wrapped__")
        )
        """
    )
    assert out["enabled"] is True
    missing = {k for k in out["left_out"] if k.startswith("CUDA devices in ")}
    assert missing == expected_missing
    present = {
        f"{cls}.{name}"
        for cls, names in C10D_DEVICE_METHODS.items()
        for name in names
        if f"CUDA devices in {cls}.{name}" not in expected_missing
    }
    # Every method this torch has is still translated: one missing method costs only itself.
    assert set(out["wrapped"]) == present and "ProcessGroup._get_backend" in present


def test_fake_tensor_device_follows_what_faketensor_has():
    from torch._subclasses import fake_tensor

    has_normalizer = isinstance(
        fake_tensor.FakeTensor.__dict__.get("_normalize_fake_device"), staticmethod
    )
    out = _activated()
    piece = "'cuda' fake tensors on the MUSA device"
    assert (piece in out["left_out"]) is (not has_normalizer)
    if not has_normalizer:  # a CUDA program loses something here: a warning, once
        assert out["stderr"].count(f"WARNING:torchada:torchada: {piece} left out") == 1


def test_native_library_and_simulator_build_on_this_torch(musa_sim):
    # csrc/torch_features.h's guards: both compile and load on every listed torch.
    from torchada._native import library as _native

    assert _native.load() is not None, _native.state()
    assert _native.state()["status"] == "loaded"
    assert type(musa_sim._MUSAC).__name__ == "module"


def test_op_override_contract_calls_the_previous_kernel(musa_sim):
    # op_override.h reads the previous kernel through SafeKernelFunction (torch 2.9+) or the
    # dispatcher's table (older torch): the replaced kernel must run either way.
    from torchada._ops import overrides as _cpp_ops

    native = _cpp_ops.load_native() if hasattr(_cpp_ops, "load_native") else None
    if native is None:
        from torchada._native import library as _native

        native = _native.load()
    info = native.install_op_override("isfinite")
    try:
        assert "CompositeImplicitAutograd" in info["previous"]
        x = torch.tensor([1, 2, 3], dtype=torch.int32, device="musa")  # previous kernel path
        assert torch.isfinite(x).tolist() == [True, True, True]
        y = torch.tensor([1.0, float("inf"), float("nan")], device="musa")
        assert torch.isfinite(y).tolist() == [True, False, False]
    finally:
        native.remove_op_override("isfinite")


BROKEN = """
#include <torch/extension.h>
int answer() { return undeclared_name; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("answer", &answer); }
"""


def test_a_failed_build_names_the_compiler_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "broken.cpp"
    src.write_text(BROKEN)
    with pytest.raises(_build.NativeBuildError) as caught:
        _build.load_torch_extension("torchada_test_broken", [src])
    said = _build.describe_failure(caught.value)
    assert "broken.cpp:3" in said and "undeclared_name" in said and "error" in said


def test_native_warning_carries_the_compiler_error(monkeypatch, caplog):
    from torchada._native import library as _native

    def failing(*args, **kwargs):
        raise _build.NativeBuildError(
            "building torchada_native failed:\nError building extension 'torchada_native': "
            "[1/6] c++ -c x.cpp\nFAILED: x.o\nx.cpp:7:3: error: 'foo' was not declared\n"
        )

    monkeypatch.setattr(_build, "load_torch_extension", failing)
    monkeypatch.setattr(_native, "_module", None)
    monkeypatch.setattr(_native, "_state", {})
    caplog.set_level(logging.WARNING, logger="torchada")
    assert _native.load() is None
    (record,) = [r for r in caplog.records if "native library unavailable" in r.getMessage()]
    assert "x.cpp:7:3: error: 'foo' was not declared" in record.getMessage()
