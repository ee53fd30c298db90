"""torchada's operator overrides (csrc/torchada_native/op_overrides.cpp) on the simulator: each
one equals the default implementation, falls back correctly, and goes away when removed.

These tests drive the native module directly (install/remove one override); the controls that
act through ``import torchada`` are in test_cpp_ops_controls.py.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

INF, NAN = math.inf, math.nan
FLOATING = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.fixture(scope="module")
def native(musa_sim):
    from torchada._native import library as _native

    module = _native.load()
    if module is None:
        pytest.fail(f"native library unavailable: {_native.state()}")
    return module


def _entry(native, name):
    return {e["name"]: e for e in native.op_overrides()}[name]


def _registered_at(op: str) -> str:
    """Where the kernel that serves musa tensors for ``op`` was registered."""
    for line in torch._C._dispatch_dump_table(op).splitlines():
        if line.startswith("PrivateUse1:"):
            return line
    return ""


@pytest.fixture
def isfinite_on(native):
    """The isfinite override installed for one test (then removed, whatever happens)."""
    native.install_op_override("isfinite")
    yield native
    native.remove_op_override("isfinite")


def _default_and_override(native, fn, *args):
    """``fn(*args)`` without, then with, the isfinite override; and the override's call count."""
    assert not _entry(native, "isfinite")["installed"]
    expected = fn(*args)
    before = _entry(native, "isfinite")["calls"]
    native.install_op_override("isfinite")
    try:
        got = fn(*args)
    finally:
        native.remove_op_override("isfinite")
    return expected, got, _entry(native, "isfinite")["calls"] - before


def _assert_same(expected, got):
    assert got.device == expected.device and got.device.type == "musa"
    assert got.dtype == expected.dtype == torch.bool
    assert got.shape == expected.shape
    assert got.stride() == expected.stride()
    assert torch.equal(got.cpu(), expected.cpu())


# ---------------------------------------------------------------- loading installs nothing
def test_loading_the_library_installs_no_override(native):
    assert all(not e["installed"] for e in native.op_overrides())
    assert not torch._C._dispatch_has_kernel_for_dispatch_key("aten::isfinite", "PrivateUse1")


def test_table_names_and_ops(native):
    entries = {e["name"]: e for e in native.op_overrides()}
    assert "isfinite" in entries
    assert entries["isfinite"]["op"] == "aten::isfinite"
    assert entries["isfinite"]["summary"]


# ---------------------------------------------------------------- isfinite: equality
SPECIAL = [0.0, -0.0, 1.5, -2.0, INF, -INF, NAN, 1e-40, 3e38, -3e38]


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_isfinite_equals_default_on_special_values(native, dtype):
    x = torch.tensor(SPECIAL, dtype=dtype, device="musa")
    expected, got, calls = _default_and_override(native, torch.isfinite, x)
    _assert_same(expected, got)
    assert calls == 1  # the override ran
    # And both say what isfinite means.
    want = [math.isfinite(v) for v in x.cpu().double().tolist()]
    assert got.cpu().tolist() == want


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.tensor(INF, device="musa"),  # 0-dim
        lambda: torch.empty(0, 3, device="musa"),  # empty
        lambda: torch.randn(4, 5, device="musa").t(),  # non-contiguous
        lambda: torch.randn(2, 3, 4, 5, device="musa").to(memory_format=torch.channels_last),
        lambda: torch.randn(6, 4, device="musa")[::2, 1:],  # strided view with an offset
    ],
    ids=["0-dim", "empty", "transposed", "channels_last", "strided-view"],
)
def test_isfinite_equals_default_on_layouts(native, make):
    x = make()
    if x.numel():
        x[(0,) * x.dim()] = NAN
    expected, got, calls = _default_and_override(native, torch.isfinite, x)
    _assert_same(expected, got)
    assert calls == 1


def test_isfinite_method_and_function_both_overridden(isfinite_on):
    x = torch.tensor([1.0, INF], device="musa")
    before = _entry(isfinite_on, "isfinite")["calls"]
    assert x.isfinite().cpu().tolist() == [True, False]
    assert torch.isfinite(x).cpu().tolist() == [True, False]
    assert _entry(isfinite_on, "isfinite")["calls"] == before + 2


def test_isfinite_with_requires_grad_input(isfinite_on):
    x = torch.tensor([1.0, NAN], device="musa", requires_grad=True)
    out = torch.isfinite(x)
    assert not out.requires_grad
    assert out.cpu().tolist() == [True, False]


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(
        st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1, max_size=64
    ),
    dtype=st.sampled_from(FLOATING),
)
def test_isfinite_equals_default_property(native, values, dtype):
    x = torch.tensor(values, dtype=torch.float32).to(dtype).to("musa")
    expected, got, _ = _default_and_override(native, torch.isfinite, x)
    _assert_same(expected, got)


# ---------------------------------------------------------------- isfinite: per-call fallback
@pytest.mark.parametrize(
    "make, calls",
    [
        (lambda: torch.tensor([1, -7, 0], device="musa"), 1),
        (lambda: torch.tensor([1, 0], dtype=torch.uint8, device="musa"), 1),
        (lambda: torch.tensor([True, False], device="musa"), 1),
        # The composite asks isfinite of the real and imaginary parts: the override serves both.
        (lambda: torch.tensor([1 + 1j, complex(INF, 0), complex(0, NAN)], device="musa"), 3),
    ],
    ids=["int64", "uint8", "bool", "complex64"],
)
def test_isfinite_other_dtypes_take_the_previous_kernel(native, make, calls):
    x = make()
    expected, got, counted = _default_and_override(native, torch.isfinite, x)
    _assert_same(expected, got)
    assert counted == calls


def test_isfinite_cpu_tensors_never_reach_the_override(isfinite_on):
    before = _entry(isfinite_on, "isfinite")["calls"]
    assert torch.isfinite(torch.tensor([1.0, NAN])).tolist() == [True, False]
    assert _entry(isfinite_on, "isfinite")["calls"] == before


# ---------------------------------------------------------------- install / remove
def test_remove_restores_the_previous_kernel(native):
    x = torch.tensor([1.0, INF, NAN], device="musa")
    # Served by torch's composite before: no PrivateUse1 kernel of its own.
    assert "CompositeImplicitAutograd" in _registered_at("aten::isfinite")
    native.install_op_override("isfinite")
    try:
        assert "op_override.h" in _registered_at("aten::isfinite")
        native.install_op_override("isfinite")  # idempotent: still one registration
        assert _entry(native, "isfinite")["installed"]
    finally:
        native.remove_op_override("isfinite")
    assert "CompositeImplicitAutograd" in _registered_at("aten::isfinite")
    before = _entry(native, "isfinite")["calls"]
    assert torch.isfinite(x).cpu().tolist() == [True, False, False]
    assert _entry(native, "isfinite")["calls"] == before  # the override no longer runs
    native.remove_op_override("isfinite")  # removing twice is harmless


def test_install_reports_what_it_replaces(native):
    info = native.install_op_override("isfinite")
    try:
        assert info["shadows"] is False  # a composite, not a backend kernel
        assert "CompositeImplicitAutograd" in info["previous"]
    finally:
        native.remove_op_override("isfinite")


def test_unknown_name_is_a_clear_error(native):
    with pytest.raises(KeyError, match="no operator override named 'nope'.*known: .*isfinite"):
        native.install_op_override("nope")
