"""torch.compile of CUDA-written code on MUSA (docs/compile.md)."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch._dynamo  # imported before torchada is enabled (at collection), as libraries do
import torch.fx

import torchada


def _torch_function_on_device_args() -> bool:
    # Whether torch's argument parser sends __torch_function__ for a non-tensor argument (a traced
    # device): without it FX cannot trace torch.arange(4, device=x.device), on CUDA either.
    class Probe:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "dispatched"

    try:
        return torch._C._VariableFunctions.arange(1, device=Probe()) == "dispatched"
    except TypeError:
        return False


TRACES_DEVICE_ARGS = _torch_function_on_device_args()
# Fake tensors created on "cuda" sit on musa through FakeTensor._normalize_fake_device; without it
# (left out) AOT-traced code keeps "cuda" where torch.device("cuda") was a constant.
FAKE_DEVICES = isinstance(
    vars(torch._subclasses.fake_tensor.FakeTensor).get("_normalize_fake_device"), staticmethod
)


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
        if TRACES_DEVICE_ARGS:
            return x + bias + torch.arange(4, device=x.device)
        return x + bias + torch.arange(4).to(x.device)  # as a program on this torch writes it


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


def _creates_on_cuda(x):
    # What CUDA programs write inside compiled code: "cuda" strings and devices, x.device, and a
    # comparison of a tensor's device with a CUDA device.
    y = torch.ones(3, device="cuda") + torch.tensor([1.0, 2.0, 3.0], device=torch.device("cuda"))
    z = torch.zeros_like(x, device=x.device) + torch.arange(3, device="cuda:0")
    if x.device == torch.device("cuda:0") and x.is_cuda:
        z = z * 2
    return x + y + z.to("cuda"), torch.empty(3, device="cuda").device


@pytest.mark.parametrize(
    "backend",
    ["eager", "aot_eager", "inductor"],
)
@pytest.mark.skipif(
    FAKE_DEVICES and torch.version.cuda is not None,
    reason="on a CUDA build of torch (2.12+), a fake 'cuda' tensor initialises CUDA through "
    "torch's own CUDA slots, which torchada leaves to a CUDA build; torch_musa's torch has none",
)
def test_compiled_code_creating_tensors_on_cuda_matches_eager(backend):
    x = torch.arange(3.0, device="cuda")
    expected, expected_device = _creates_on_cuda(x)
    assert expected_device == torch.device("musa", 0)
    torch._dynamo.reset()
    out, device = torch.compile(_creates_on_cuda, backend=backend, fullgraph=True)(x)
    torch.testing.assert_close(out, expected)
    assert out.device == torch.device("musa", 0) and device.type == "musa"


def test_fake_tensors_created_on_cuda_sit_on_musa():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = torch.ones(2, device="cuda")
        moved = torch.empty(2).to("cuda:1")
        assert (fake * mode.from_tensor(torch.ones(2, device="musa"))).device.type == "musa"
    assert fake.device == torch.device("musa", 0) and fake.device.type == "musa"
    assert moved.device.type == "musa" and moved.device.index == 1


def test_inductor_on_the_simulator():
    from torch._inductor.codecache import CacheBase
    from torch._inductor.codegen import common

    model = _model().eval()
    x = torch.randn(5, 8, device="musa")
    # Generate the code here: with a graph from Inductor's on-disk cache, an older Inductor (2.7)
    # does not register its backends, so the musa one would not be asked for.
    uncached = torch._inductor.config.patch(fx_graph_cache=False)
    with torch.no_grad(), uncached:
        out = torch.compile(model, backend="inductor")(x)
        torch.testing.assert_close(out, model(x), atol=1e-5, rtol=1e-5)

    def f(a, b):
        return (a.sin() * b + 1).sum(0)

    a, b = torch.randn(5, 6, device="musa"), torch.randn(5, 6, device="musa")
    with uncached:
        torch.testing.assert_close(torch.compile(f, backend="inductor")(a, b), f(a, b))
    assert common.get_scheduling_for_device("musa") is not None
    info = CacheBase.get_system()
    assert info["device"]["name"] == torch.musa.get_device_name()
    if torch.version.cuda is None:  # a torch built without CUDA, as torch_musa's is
        assert info["version"]["musa"] == torch.version.musa
    else:  # a CUDA build (PyPI's torch 2.7.1 under the simulator) answers through torch.cuda
        assert info["version"]["cuda"] == torch.version.cuda


def test_inductor_reductions_backward_and_causal_attention_on_the_simulator():
    # Musa kernels are C++ CPU ones on the simulator: the scheduler must not apply its
    # Triton-only reindexing to them (layer_norm backward, a reduction over a view), and CSE must
    # keep the dtypes the C++ kernels need (the causal mask's index_expr).
    from torch._inductor import utils
    from torch._inductor.codegen import common

    def norm_loss(x, w):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), w).square().sum()

    def head_softmax(x):
        return (x.view(2, 8, 4, 8).transpose(1, 2).softmax(-1) + 1).reshape(2, -1)

    def attention(q):
        return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)

    torch._dynamo.reset()
    x = torch.randn(2, 8, 32, device="musa")
    w = torch.randn(32, device="musa")
    q = torch.randn(2, 4, 8, 8, device="musa")
    # Generate the code here: a compiled graph from Inductor's on-disk cache would hide a failure.
    with torch._inductor.config.patch(fx_graph_cache=False):
        grads = []
        for fn in (norm_loss, torch.compile(norm_loss, backend="inductor")):
            xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
            fn(xr, wr).backward()
            grads.append((xr.grad, wr.grad))
        torch.testing.assert_close(grads[1], grads[0], atol=1e-4, rtol=1e-4)
        assert grads[1][0].device.type == "musa"
        compiled = torch.compile(head_softmax, backend="inductor")
        torch.testing.assert_close(compiled(x), head_softmax(x))
        torch.testing.assert_close(torch.compile(attention, backend="inductor")(q), attention(q))

    # An older Inductor (2.7) asks its config inline; 2.9's get_current_backend() takes no device
    # and reads the graph's; later ones take a device type.
    backend = getattr(utils, "get_current_backend", None)
    if backend is not None and inspect.signature(backend.__wrapped__).parameters:
        assert utils.get_current_backend("musa") == torch._inductor.config.cpu_backend
        assert common.get_current_backend is utils.get_current_backend
        assert utils.get_current_backend("cuda") == torch._inductor.config.cuda_backend


def test_disable_restores_inductor_hooks():
    from torch._inductor import scheduler, utils
    from torch._inductor.codecache import CacheBase
    from torch._inductor.codegen import common

    common.init_backend_registration()
    patched_get_system = CacheBase.get_system
    registered_is_cpu = scheduler.BaseSchedulerNode.is_cpu
    registered_backend = getattr(utils, "get_current_backend", None)  # None: Inductor has none
    from torch._dynamo.variables.tensor import TensorVariable
    from torch._inductor.graph import GraphLowering
    from torch._subclasses.fake_tensor import FakeTensor

    patched = [
        (GraphLowering, "call_function", GraphLowering.call_function),
        (TensorVariable, "method_attr_is_cuda", TensorVariable.method_attr_is_cuda),
    ]
    if FAKE_DEVICES:
        patched.append((FakeTensor, "_normalize_fake_device", FakeTensor._normalize_fake_device))
    torchada.disable()
    for owner, name, ours in patched:
        assert getattr(owner, name) is not ours, name
    with torch._subclasses.fake_tensor.FakeTensorMode():
        assert torch.ones(1, device="cuda").device.type == "cuda"  # torch's answer again
    try:
        assert CacheBase.get_system is patched_get_system.__wrapped__
        # The musa code generator is torch_musa's (the simulated one registers Inductor's C++
        # kernels, as real torch_musa does its Triton ones): it outlives torchada.
        assert scheduler.BaseSchedulerNode.is_cpu is registered_is_cpu
        assert getattr(utils, "get_current_backend", None) is registered_backend
        for module in (scheduler, common):  # the modules of this Inductor that import it by name
            if hasattr(module, "get_current_backend"):
                assert module.get_current_backend is registered_backend
        assert common.get_scheduling_for_device("musa") is not None
        from torch._dynamo import device_interface

        assert "musa" in device_interface.device_interfaces
    finally:
        assert torchada.enable()
        torch._dynamo.reset()
