"""Custom operators on MUSA: kernels registered for CUDA run for musa tensors."""

from __future__ import annotations

import gc
import inspect
import itertools
import os

import pytest
import torch
import torch._dynamo  # imported before torchada is enabled (at collection), as libraries do
from torch.library import Library

import torchada
from torchada._core.torch_features import left_out_pieces
from torchada._ops.custom_ops import autocast_any_device, musa_dispatch_key

_ids = itertools.count()


pytestmark = pytest.mark.usefixtures("torchada_on")


@pytest.fixture
def ns():
    """A fresh operator namespace per test (registrations cannot be dropped by name). Its
    libraries die with the test; afterwards torch.ops forgets the namespace too: torch keeps the
    ops it has looked up, and some torches (2.12) fail torch.compile on an op whose library is
    gone (collecting every namespace's ops for the decomposition table)."""
    name = f"tdsurf{next(_ids)}"
    yield name
    gc.collect()  # the test's libraries, destroyed now rather than in a later test
    names = getattr(torch.ops, "_dir", None)
    if isinstance(names, list) and name in names:
        names.remove(name)
    vars(torch.ops).pop(name, None)


def _x(*shape):
    return torch.randn(*shape, device="musa")


@pytest.mark.parametrize(
    "cuda,musa",
    [
        ("CUDA", "PrivateUse1"),
        ("AutogradCUDA", "AutogradPrivateUse1"),
        ("AutocastCUDA", "AutocastPrivateUse1"),
        ("SparseCUDA", "SparsePrivateUse1"),
        ("SparseCsrCUDA", "SparseCsrPrivateUse1"),
        ("QuantizedCUDA", "QuantizedPrivateUse1"),
        ("NestedTensorCUDA", "NestedTensorPrivateUse1"),
        ("CPU", "CPU"),
        ("Meta", "Meta"),
        ("CompositeImplicitAutograd", "CompositeImplicitAutograd"),
        ("", ""),
    ],
)
def test_key_translation(cuda, musa):
    assert musa_dispatch_key(cuda) == musa
    if cuda:
        assert musa_dispatch_key(getattr(torch._C.DispatchKey, cuda)) == getattr(
            torch._C.DispatchKey, musa
        )


def test_library_impl_cuda_runs_for_musa(ns):
    calls = []
    lib = Library(ns, "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda t: calls.append("cuda") or t * 2, "CUDA")
    lib.impl("twice", lambda t: calls.append("cpu") or t * 20, "CPU")
    x = _x(5)
    op = getattr(torch.ops, ns).twice
    torch.testing.assert_close(op(x), x * 2)
    torch.testing.assert_close(op(x.cpu()), x.cpu() * 20)
    assert calls == ["cuda", "cpu"]
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"{ns}::twice", "PrivateUse1")
    assert not torch._C._dispatch_has_kernel_for_dispatch_key(f"{ns}::twice", "CUDA")
    # Re-registering for CUDA replaces the first CUDA kernel, as on CUDA; a torch whose
    # Library.impl does not override by default refuses it, as it does on CUDA.
    allow = inspect.signature(Library.impl).parameters.get("allow_override")
    if allow is not None and allow.default is True:
        with pytest.warns(UserWarning, match="Overriding a previously registered kernel"):
            lib.impl("twice", lambda t: t * 3, "CUDA")
        torch.testing.assert_close(op(x), x * 3)
    else:
        with pytest.raises(RuntimeError, match="already a kernel registered from python"):
            lib.impl("twice", lambda t: t * 3, "CUDA")
        torch.testing.assert_close(op(x), x * 2)


def test_library_dispatch_key_of_the_library(ns):
    def_lib = Library(ns, "DEF")  # ops live as long as their library
    def_lib.define("inc(Tensor x) -> Tensor")
    impl_lib = Library(ns, "IMPL", "CUDA")  # kernels default to the library's key
    impl_lib.impl("inc", lambda t: t + 1)
    x = _x(3)
    torch.testing.assert_close(getattr(torch.ops, ns).inc(x), x + 1)
    assert "CUDA" in repr(impl_lib)  # the library reports what the program wrote


def test_autograd_and_autocast_cuda_keys(ns):
    lib = Library(ns, "DEF")
    lib.define("scale(Tensor x) -> Tensor")
    seen = []

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            with torch._C._AutoDispatchBelowAutograd():
                return getattr(torch.ops, ns).scale(t)

        @staticmethod
        def backward(ctx, g):
            seen.append("backward")
            return g * 5

    lib.impl("scale", lambda t: t * 5, "CUDA")
    lib.impl("scale", Scale.apply, "AutogradCUDA")

    def autocast_kernel(t):
        seen.append("autocast")
        with torch._C._ExcludeDispatchKeyGuard(
            torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)
        ):
            return getattr(torch.ops, ns).scale(t.half())

    lib.impl("scale", autocast_kernel, "AutocastCUDA")
    x = _x(4).requires_grad_()
    out = getattr(torch.ops, ns).scale(x)
    out.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 5.0))
    with torch.autocast("cuda"):
        y = getattr(torch.ops, ns).scale(x.detach())
    assert y.dtype == torch.float16 and seen == ["backward", "autocast"]


def test_library_fallback_cuda_key():
    K = torch._C.DispatchKey
    assert not torch._C._dispatch_has_backend_fallback(K.QuantizedPrivateUse1)
    lib = Library("_", "IMPL")
    lib.fallback(lambda op, *args, **kwargs: None, "QuantizedCUDA")
    try:
        assert torch._C._dispatch_has_backend_fallback(K.QuantizedPrivateUse1)
        assert not torch._C._dispatch_has_backend_fallback(K.QuantizedCUDA)
    finally:
        lib._destroy()
    assert not torch._C._dispatch_has_backend_fallback(K.QuantizedPrivateUse1)


def test_torch_library_impl_device_type_and_types_keyword(ns):
    torch.library.define(f"{ns}::cube", "(Tensor x) -> Tensor")
    torch.library.define(f"{ns}::square", "(Tensor x) -> Tensor")
    calls = []

    @torch.library.impl(f"{ns}::cube", "cuda")
    def _(t):
        calls.append("cube")
        return t**3

    @torch.library.impl(f"{ns}::square", types=["cpu", "cuda"])
    def _(t):
        calls.append("square")
        return t * t

    x = _x(4)
    torch.testing.assert_close(getattr(torch.ops, ns).cube(x), x**3)
    torch.testing.assert_close(getattr(torch.ops, ns).square(x), x * x)
    torch.testing.assert_close(getattr(torch.ops, ns).square(x.cpu()), x.cpu() ** 2)
    assert calls == ["cube", "square", "square"]


def test_custom_op_device_types_cuda(ns):
    calls = []

    @torch.library.custom_op(f"{ns}::mul3", mutates_args=(), device_types="cuda")
    def mul3(t: torch.Tensor) -> torch.Tensor:
        calls.append(t.device.type)
        return t * 3

    @mul3.register_fake
    def _(t):
        return torch.empty_like(t)

    x = _x(4)
    torch.testing.assert_close(mul3(x), x * 3)
    assert calls == ["musa"]
    with pytest.raises(NotImplementedError, match="CPU"):
        mul3(x.cpu())  # registered for cuda (musa) only, as on CUDA
    # register_fake is untouched: fake tensors of musa get shapes from it.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = mode.from_tensor(x)
        out = mul3(fake)
    assert out.shape == (4,) and out.device.type == "musa" and calls == ["musa"]


def test_register_kernel_cuda_and_set_kernel_enabled(ns):
    @torch.library.custom_op(f"{ns}::neg", mutates_args=())
    def neg(t: torch.Tensor) -> torch.Tensor:
        return -t

    calls = []

    @neg.register_kernel("cuda")
    def _(t):
        calls.append("cuda-kernel")
        return -t * 10

    x = _x(3)
    torch.testing.assert_close(neg(x), -x * 10)
    torch.testing.assert_close(neg(x.cpu()), -x.cpu())  # the default kernel elsewhere
    with neg.set_kernel_enabled("cuda", False):
        torch.testing.assert_close(neg(x), -x)
    torch.testing.assert_close(neg(x), -x * 10)
    assert calls == ["cuda-kernel", "cuda-kernel"]
    # torch.library.register_kernel(qualname, "cuda") as well
    torch.library.register_kernel(f"{ns}::neg", "cuda", lambda t: -t * 100)
    torch.testing.assert_close(neg(x), -x * 100)


def test_explicit_musa_kernel_wins_over_cuda(ns):
    lib = Library(ns, "DEF")
    lib.define("pick(Tensor x) -> Tensor")
    lib.impl("pick", lambda t: t * 7, "PrivateUse1")  # MUSA's own kernel
    lib.impl("pick", lambda t: t * 2, "CUDA")  # not allowed to replace it
    x = _x(3)
    torch.testing.assert_close(getattr(torch.ops, ns).pick(x), x * 7)

    @torch.library.custom_op(f"{ns}::pick2", mutates_args=())
    def pick2(t: torch.Tensor) -> torch.Tensor:
        return t

    pick2.register_kernel("musa", lambda t: t * 7)
    pick2.register_kernel("cuda", lambda t: t * 2)
    torch.testing.assert_close(pick2(x), x * 7)
    # A program's explicit musa kernel after a CUDA one replaces it.
    pick2b = torch.library.custom_op(
        f"{ns}::pick3", mutates_args=(), schema="(Tensor t) -> Tensor"
    )(lambda t: t.clone())
    pick2b.register_kernel("cuda", lambda t: t * 2)
    pick2b.register_kernel("musa", lambda t: t * 9)
    torch.testing.assert_close(pick2b(x), x * 9)


def test_register_autocast_cuda(ns):
    @torch.library.custom_op(f"{ns}::mm", mutates_args=())
    def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b

    mm.register_autocast("cuda", torch.float16)
    a = _x(4, 4)
    with torch.autocast("cuda"):
        assert mm(a, a).dtype == torch.float16
    assert mm(a, a).dtype == torch.float32

    torch.library.define(f"{ns}::mm2", "(Tensor a, Tensor b) -> Tensor")
    torch.library.impl(f"{ns}::mm2", "cuda", lambda a, b: a @ b)
    torch.library.register_autocast(f"{ns}::mm2", "cuda", torch.bfloat16)
    with torch.autocast("cuda"):
        out = getattr(torch.ops, ns).mm2(a, a)
    if autocast_any_device():
        assert out.dtype == torch.bfloat16
    else:
        # This torch's rules take only cpu and cuda: the rule stays CUDA's (said once), and the
        # op's own matmul runs under MUSA's autocast at its default dtype.
        assert "custom ops' register_autocast for cuda on MUSA" in left_out_pieces()
        assert out.dtype == torch.float16


def test_register_fake_and_compile_with_custom_op(ns):
    @torch.library.custom_op(f"{ns}::addone", mutates_args=(), device_types="cuda")
    def addone(t: torch.Tensor) -> torch.Tensor:
        return t + 1

    @addone.register_fake
    def _(t):
        return torch.empty_like(t)

    x = _x(4)
    compiled = torch.compile(lambda t: addone(t) * 2, backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(x), (x + 1) * 2)


def test_disable_restores_library(ns):
    torchada.disable()
    try:
        assert not Library.impl.__code__.co_filename.startswith(os.path.dirname(torchada.__file__))
        assert torch._C._dispatch_library.__module__ != "torchada._ops.custom_ops"
        lib = Library(ns, "DEF")
        lib.define("plain(Tensor x) -> Tensor")
        lib.impl("plain", lambda t: t, "CUDA")  # plain torch: registered for CUDA itself
        assert torch._C._dispatch_has_kernel_for_dispatch_key(f"{ns}::plain", "CUDA")
        assert not torch._C._dispatch_has_kernel_for_dispatch_key(f"{ns}::plain", "PrivateUse1")
    finally:
        assert torchada.enable()
