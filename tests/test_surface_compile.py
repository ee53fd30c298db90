"""torch.compile of CUDA-written code on MUSA (docs/compile.md)."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo  # imported before torchada is enabled (at collection), as libraries do
import torch.fx

import torchada


@pytest.fixture(scope="module", autouse=True)
def enabled(musa_sim):
    assert torchada.enable()
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
    torchada.disable()


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4)
    ).to("musa")


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_model_matches_eager_forward_and_backward(backend):
    model = _model()
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    x = torch.randn(5, 8, device="musa")
    out = compiled(x)
    torch.testing.assert_close(out, model(x))
    assert out.device.type == "musa"
    out.pow(2).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).pow(2).sum().backward()
    for got, want in zip(grads, (p.grad for p in model.parameters())):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_torch_cuda_device_context_compiles(backend):
    def f(x):
        with torch.cuda.device(x.device):
            return x * torch.ones(4, device=x.device) + torch.cuda.current_device()

    x = torch.randn(4, device="musa:1")
    compiled = torch.compile(f, backend=backend, fullgraph=True)
    torch.testing.assert_close(compiled(x), f(x))
    assert torch.musa.current_device() == 0  # the context was left


def test_torch_cuda_device_index_context_eager_backend():
    # Unindexed allocations inside the block follow the block's device at run time; the
    # AOT-based backends bake them in (docs/compile.md).
    def f(x):
        with torch.cuda.device(1):
            y = torch.full((4,), 2.0, device="musa")
        return x * y

    x = torch.randn(4, device="musa:1")
    compiled = torch.compile(f, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(x), x * 2)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_autocast_cuda_inside_compiled_code(backend):
    def f(a, b):
        with torch.autocast("cuda", dtype=torch.float16):
            scale = 2.0 if torch.is_autocast_enabled("cuda") else 0.0
            return (a @ b) * scale / 2

    a = torch.randn(8, 8, device="musa")
    out = torch.compile(f, backend=backend, fullgraph=True)(a, a)
    assert out.dtype == torch.float16
    torch.testing.assert_close(out.float(), a @ a, atol=0.05, rtol=0.01)


class _WithConstants(torch.nn.Module):
    def forward(self, x):
        bias = torch.ones(4, device=torch.device("musa", 1))
        return x + bias + torch.arange(4, device=x.device)


def test_fx_graph_module_holding_device_constants():
    gm = torch.fx.symbolic_trace(_WithConstants())
    x = torch.randn(4, device="musa:1")
    expected = x + 1 + torch.arange(4, device="musa:1")
    torch.testing.assert_close(gm(x), expected)
    assert gm._tensor_constant0.device == torch.device("musa", 1)

    # A graph built by hand with a device constant in a node's kwargs, printed into its code.
    graph = torch.fx.Graph()
    inp = graph.placeholder("x")
    full = graph.call_function(
        torch.full, ((4,), 3.0), {"device": torch.device("musa", 1), "dtype": torch.float32}
    )
    graph.output(graph.call_function(torch.mul, (inp, full)))
    built = torch.fx.GraphModule(torch.nn.Module(), graph)
    assert "musa" in built.code
    torch.testing.assert_close(built(x), x * 3)
    torch.testing.assert_close(torch.compile(built, backend="aot_eager")(x), x * 3)
    torch.testing.assert_close(torch.compile(gm, backend="aot_eager")(x), expected)


def test_inductor_on_the_simulator():
    from torch._inductor.codecache import CacheBase
    from torch._inductor.codegen import common

    model = _model().eval()
    x = torch.randn(5, 8, device="musa")
    with torch.no_grad():
        out = torch.compile(model, backend="inductor")(x)
        torch.testing.assert_close(out, model(x), atol=1e-5, rtol=1e-5)

    def f(a, b):
        return (a.sin() * b + 1).sum(0)

    a, b = torch.randn(5, 6, device="musa"), torch.randn(5, 6, device="musa")
    torch.testing.assert_close(torch.compile(f, backend="inductor")(a, b), f(a, b))
    assert common.get_scheduling_for_device("musa") is not None
    info = CacheBase.get_system()
    assert info["device"]["name"] == torch.musa.get_device_name()
    assert info["version"]["musa"] == torch.version.musa


def test_disable_restores_inductor_hooks():
    from torch._inductor.codecache import CacheBase
    from torch._inductor.codegen import common

    patched_get_system = CacheBase.get_system
    patched_registration = common.init_backend_registration
    torchada.disable()
    try:
        assert CacheBase.get_system is patched_get_system.__wrapped__
        assert common.init_backend_registration is patched_registration.__wrapped__
        assert common.get_scheduling_for_device("musa") is None
        from torch._dynamo import device_interface

        assert "musa" not in device_interface.device_interfaces
    finally:
        assert torchada.enable()
        torch._dynamo.reset()
    assert common.get_wrapper_codegen_for_device("musa") is None  # registered again on demand
    common.init_backend_registration()
    assert common.get_scheduling_for_device("musa") is not None
