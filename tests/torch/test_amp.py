"""Automatic mixed precision on MUSA: the device type "cuda" is the musa device."""

from __future__ import annotations

import json
import os
import warnings

import pytest
import torch

import torchada

pytestmark = pytest.mark.usefixtures("torchada_on")

# torchada's own source directory: a venv's path may contain "torchada" too.
_SOURCE = os.path.dirname(torchada.__file__) + os.sep


def _x(*shape):
    return torch.randn(*shape, device="musa")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_autocast_cuda_casts_musa_matmuls(dtype):
    a, b = _x(8, 8), _x(8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "CUDA is not available. Disabling autocast"
        ctx = torch.autocast("cuda", dtype=dtype)  # some torches' __enter__ returns None
        with ctx:
            out = a @ b
            lin = torch.nn.functional.linear(a, b)
            assert torch.is_autocast_enabled("cuda") and torch.is_autocast_enabled("musa")
            assert torch.get_autocast_dtype("cuda") == dtype
    assert out.dtype == dtype and lin.dtype == dtype and out.device.type == "musa"
    assert ctx.device == "musa"
    torch.testing.assert_close(out.float(), a @ b, atol=0.1, rtol=0.02)
    assert (a @ b).dtype == torch.float32
    assert not torch.is_autocast_enabled("cuda")


def test_every_spelling_of_autocast():
    a = _x(4, 4)
    with torch.amp.autocast("cuda"):
        assert (a @ a).dtype == torch.float16
    with torch.amp.autocast(device_type="cuda", dtype=torch.bfloat16):
        assert (a @ a).dtype == torch.bfloat16
    with pytest.warns(FutureWarning, match=r"torch\.cuda\.amp\.autocast"):  # as on CUDA
        with torch.cuda.amp.autocast():
            assert (a @ a).dtype == torch.float16
    with torch.autocast("cuda", enabled=False):
        assert (a @ a).dtype == torch.float32
    # Nested: an inner disabled region, then back to the outer dtype.
    with torch.autocast("cuda"):
        with torch.autocast("cuda", enabled=False):
            assert (a @ a).dtype == torch.float32
        assert (a @ a).dtype == torch.float16


def test_autocast_as_decorator():
    @torch.autocast("cuda", dtype=torch.bfloat16)
    def forward(t):
        return t @ t, torch.get_autocast_dtype("cuda")

    out, dtype = forward(_x(4, 4))
    assert out.dtype == torch.bfloat16 and dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cuda")


def test_state_functions_read_cuda_as_musa():
    before = torch.get_autocast_dtype("musa")
    try:
        torch.set_autocast_dtype("cuda", torch.bfloat16)
        assert torch.get_autocast_dtype("musa") == torch.bfloat16
        assert torch.get_autocast_gpu_dtype() == torch.bfloat16
        torch.set_autocast_gpu_dtype(torch.float16)
        assert torch.get_autocast_dtype("cuda") == torch.float16
        torch.set_autocast_enabled("cuda", True)
        assert torch.is_autocast_enabled("musa") and torch.is_autocast_enabled()
        a = _x(4, 4)
        assert (a @ a).dtype == torch.float16
    finally:
        torch.set_autocast_enabled("musa", False)
        torch.set_autocast_dtype("musa", before)
    assert torch.amp.is_autocast_available("cuda")
    assert torch.amp.autocast_mode.is_autocast_available(device_type="cuda")
    # Other device types are torch's business, errors included.
    with pytest.raises(RuntimeError, match="device type at start of device string: nope"):
        torch.autocast("nope")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        c = torch.randn(4, 4)
        assert (c @ c).dtype == torch.bfloat16 and not torch.is_autocast_enabled("cuda")


class _Scale(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float16)
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        ctx.seen = (x.dtype, torch.is_autocast_enabled("musa"))
        return x @ w

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        ctx.bwd_autocast = torch.is_autocast_enabled("musa")
        return grad @ w.t(), x.t() @ grad


def test_custom_fwd_bwd_cast_musa_inputs():
    x = _x(4, 4).requires_grad_()
    w = _x(4, 4).requires_grad_()
    with torch.autocast("cuda"):
        out = _Scale.apply(x, w)
    # cast_inputs cast the musa inputs (torch compares device types) and ran with autocast off.
    assert out.dtype == torch.float16
    assert out.grad_fn is not None
    out.float().sum().backward()
    assert x.grad.shape == (4, 4) and x.grad.device.type == "musa"
    # Outside autocast: no casting at all.
    assert _Scale.apply(x.detach(), w.detach()).dtype == torch.float32


def test_custom_fwd_decorator_without_cast_records_state():
    seen = {}

    class Fn(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cuda")
        def forward(ctx, x):
            seen["fwd"] = torch.is_autocast_enabled("musa")
            return x * 2

        @staticmethod
        @torch.amp.custom_bwd(device_type="cuda")
        def backward(ctx, g):
            seen["bwd"] = torch.is_autocast_enabled("musa")
            return g * 2

    x = _x(3).requires_grad_()
    with torch.autocast("cuda"):
        y = Fn.apply(x)
    y.sum().backward()
    assert seen == {"fwd": True, "bwd": True}  # backward ran under forward's autocast state


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.amp.GradScaler("cuda", init_scale=2.0**10),
        lambda: torch.amp.GradScaler(init_scale=2.0**10),  # torch's default device is "cuda"
        lambda: torch.amp.GradScaler(device="cuda", init_scale=2.0**10),
        lambda: torch.cuda.amp.GradScaler(init_scale=2.0**10),
    ],
    ids=["amp-cuda", "amp-default", "amp-keyword", "cuda.amp"],
)
def test_grad_scaler_scales_and_unscales_on_musa(make):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to("musa")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # torch.cuda.amp.GradScaler's deprecation is torch's own (tests/cuda/test_cuda_naming.py).
        warnings.filterwarnings("ignore", r".*torch\.cuda\.amp\.GradScaler", FutureWarning)
        scaler = make()
    assert scaler.is_enabled() and scaler._device == "musa"
    x = _x(8, 4)
    with torch.autocast("cuda"):
        loss = model(x).float().pow(2).mean()
    scaled = scaler.scale(loss)
    assert scaler._scale.device.type == "musa" and scaled.device.type == "musa"
    torch.testing.assert_close(scaled, loss * 2.0**10)
    scaled.backward()
    raw = model.weight.grad.clone()
    scaler.unscale_(opt)
    torch.testing.assert_close(model.weight.grad, raw / 2.0**10)
    before = model.weight.detach().clone()
    scaler.step(opt)
    scaler.update()
    assert not torch.equal(before, model.weight.detach())
    assert scaler.get_scale() == 2.0**10  # finite gradients: no backoff yet


def test_grad_scaler_skips_step_on_inf_and_backs_off():
    model = torch.nn.Linear(2, 1).to("musa")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda", init_scale=4.0)
    loss = model(_x(3, 2)).sum()
    scaler.scale(loss).backward()
    model.weight.grad.fill_(float("inf"))
    before = model.weight.detach().clone()
    scaler.step(opt)
    scaler.update()
    assert torch.equal(before, model.weight.detach())
    assert scaler.get_scale() == 2.0


def test_disable_restores_torch_amp():
    torchada.disable()
    try:
        for fn in (
            torch.autocast.__init__,
            torch.amp.GradScaler.__init__,
            torch.amp.custom_fwd,
            torch.amp.custom_bwd,
            torch.amp.is_autocast_available,
        ):
            assert _SOURCE not in fn.__code__.co_filename, fn
        assert torch.get_autocast_gpu_dtype.__module__ != "torchada._torch.amp"
        # Plain torch again: without CUDA, a "cuda" autocast warns and does nothing.
        a = _x(2, 2)
        with pytest.warns(UserWarning, match="CUDA is not available"):
            ctx = torch.autocast("cuda")
        with ctx:
            assert (a @ a).dtype == torch.float32
    finally:
        assert torchada.enable()
    with torch.autocast("cuda"):
        assert (_x(2, 2) @ _x(2, 2)).dtype == torch.float16


def test_each_surface_subsystem_can_be_switched_off(py):
    code = """
        import json, os, torch, torchada
        assert torchada.is_enabled()
        from torch._inductor.codecache import CacheBase
        here = os.path.dirname(torchada.__file__) + os.sep
        CUDA = torch.profiler.ProfilerActivity.CUDA

        def accelerator_reads_cuda():  # torch's own torch.accelerator refuses "cuda" on musa
            try:
                torch.accelerator.synchronize("cuda:0")
            except ValueError:
                return False
            return True

        checks = {
            "amp": here in torch.autocast.__init__.__code__.co_filename,
            "profiler": torch.profiler.profile(activities=[CUDA]).use_device == "musa",
            "custom_ops": here in torch.library.Library.impl.__code__.co_filename,
            "backends": torch.backends.cuda.is_built(),
            "accelerator": accelerator_reads_cuda(),
            "compile": hasattr(CacheBase.get_system, "__wrapped__"),
        }
        print(json.dumps(checks))
    """
    names = ["amp", "profiler", "custom_ops", "backends", "accelerator", "compile"]
    off = {f"TORCHADA_DISABLE_{n.upper()}": "1" for n in names[::2]}
    r = py(code, env={"TORCHADA_SIMULATE": "1", "TORCHADA_ACTIVE": "1", **off})
    assert r.returncode == 0, r.stderr
    checks = json.loads(r.stdout.strip().splitlines()[-1])
    assert checks == {n: i % 2 == 1 for i, n in enumerate(names)}
