"""What "cuda" devices do under torchada on (simulated) MUSA. Path-independent: this module runs
in-process on the path the environment selects (native unless TORCHADA_NATIVE=0), and
test_devices_paths.py runs it again in a subprocess on the other path."""

from __future__ import annotations

import io
import pickle
import re
import unicodedata
import warnings

import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from torchada._core.torch_features import has_operator  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def devices(musa_sim):
    import torchada
    from torchada._devices import install as _devices
    from torchada._native import library as _native

    was_enabled = torchada.is_enabled()
    assert torchada.enable()
    # A CUDA build of torch keeps its own 'cuda' device: the native path refuses to register.
    expected = "native" if _native.requested() and not torch.version.cuda else "python"
    assert _devices.path() == expected, _native.state()
    yield _devices.path()
    if not was_enabled:
        torchada.disable()


MUSA = "musa"


def musa(index=None):
    return torch.device(MUSA, index) if index is not None else torch.device(MUSA)


def dev0():
    return torch.device(MUSA, torch.musa.current_device())


def outcome(fn):
    """("ok", device, dtype, shape) or ("err", exception type): what a call produced."""
    try:
        out = fn()
    except Exception as err:  # the comparison is about which exception, whatever it is
        return ("err", type(err))
    try:
        shape = tuple(out.shape)
    except Exception:  # nested tensors have no single shape
        shape = None
    return ("ok", getattr(out, "device", None), getattr(out, "dtype", None), shape)


def result(fn):
    try:
        return ("ok", fn())
    except Exception as err:
        return ("err", type(err))


# ---------------------------------------------------------------- identity
def test_identity_cuda_is_musa():
    t = torch.empty(2, device="cuda")
    assert t.device.type == MUSA  # the truth, for code that asks which backend
    assert t.device == dev0()
    assert t.is_cuda is True and t.is_musa
    assert torch.empty(2).is_cuda is False
    assert torch.empty(2, device="meta").is_cuda is False
    from torchada._native import library as _native

    # torch.device's comparison is C: only the native library changes it (on either path; a
    # CUDA build of torch translates "cuda" in Python but keeps identity native).
    if _native.state()["status"] != "loaded":
        assert torch.device("cuda:0") != dev0()
        return
    # ... while a CUDA program's own checks hold: equal both ways, equal hashes, is_cuda.
    cuda0 = torch.device("cuda", dev0().index)
    assert t.device == cuda0 and cuda0 == t.device and not (t.device != cuda0)
    assert hash(t.device) == hash(cuda0)
    assert {cuda0: "weights"}[t.device] == "weights"
    assert {t.device, cuda0} == {t.device}
    assert torch.device("cuda") == torch.device(MUSA)  # no index on either side
    assert torch.device("cuda") != dev0()  # index-less is not device 0, as on CUDA
    assert torch.device("cuda:1") != torch.device(MUSA, 0)
    assert torch.device("cuda:0") != torch.device("cpu")
    import torchada

    assert torchada.is_gpu_device(t)
    assert torch.device("cuda").type == "cuda"  # a name until something is allocated with it


def test_cpu_stays_cpu():
    assert torch.empty(2).device.type == "cpu"
    assert torch.zeros(2, device="cpu").device.type == "cpu"
    assert torch.zeros(2).to(torch.float16).device.type == "cpu"


def test_translate_device_helper():
    from torchada._devices.rule import translate_device

    assert translate_device("cuda") == musa()
    assert translate_device("cuda:1") == musa(1)
    assert translate_device(torch.device("cuda", 1)) == musa(1)
    assert translate_device("cpu") == torch.device("cpu")
    assert translate_device("musa:1") == musa(1)
    with pytest.raises(RuntimeError, match="cuda:x"):
        translate_device("cuda:x")


# ---------------------------------------------------------------- factories
def _cpu():
    return torch.arange(6, dtype=torch.float32).reshape(2, 3)


# name -> callable taking the device; deterministic ones are compared by value with musa's result.
FACTORIES = {
    "empty": lambda d: torch.empty(2, 3, device=d),
    "empty_strided": lambda d: torch.empty_strided((2, 3), (1, 2), device=d),
    "empty_permuted": lambda d: torch.empty_permuted((2, 3), (1, 0), device=d),
    "zeros": lambda d: torch.zeros(2, 3, device=d),
    "ones": lambda d: torch.ones(2, dtype=torch.int64, device=d),
    "full": lambda d: torch.full((2,), 1.5, device=d),
    "arange": lambda d: torch.arange(5, device=d),
    "linspace": lambda d: torch.linspace(0, 1, 5, device=d),
    "logspace": lambda d: torch.logspace(0, 1, 3, device=d),
    "eye": lambda d: torch.eye(3, device=d),
    "tensor": lambda d: torch.tensor([[1.0, 2.0]], device=d),
    "tensor_from_tensor": lambda d: torch.tensor(_cpu(), device=d),
    "as_tensor": lambda d: torch.as_tensor([1, 2, 3], device=d),
    "as_tensor_from_tensor": lambda d: torch.as_tensor(_cpu(), device=d),
    "asarray": lambda d: torch.asarray([1.0, 2.0], device=d),
    "scalar_tensor": lambda d: torch.scalar_tensor(3.0, device=d),
    "tril_indices": lambda d: torch.tril_indices(3, 3, device=d),
    "triu_indices": lambda d: torch.triu_indices(3, 3, 1, device=d),
    "bartlett_window": lambda d: torch.bartlett_window(5, device=d),
    "blackman_window": lambda d: torch.blackman_window(5, device=d),
    "hamming_window": lambda d: torch.hamming_window(5, device=d),
    "hann_window": lambda d: torch.hann_window(5, device=d),
    "fftfreq": lambda d: torch.fft.fftfreq(4, device=d),
    "rfftfreq": lambda d: torch.fft.rfftfreq(4, device=d),
    "empty_like": lambda d: torch.empty_like(_cpu(), device=d),
    "zeros_like": lambda d: torch.zeros_like(_cpu(), device=d),
    "ones_like": lambda d: torch.ones_like(_cpu(), device=d),
    "full_like": lambda d: torch.full_like(_cpu(), 7.0, device=d),
    "new_empty": lambda d: _cpu().new_empty(4, device=d),
    "new_empty_strided": lambda d: _cpu().new_empty_strided((2, 2), (1, 2), device=d),
    "new_zeros": lambda d: _cpu().new_zeros(4, device=d),
    "new_ones": lambda d: _cpu().new_ones(4, device=d),
    "new_full": lambda d: _cpu().new_full((2,), 3.0, device=d),
    "new_tensor": lambda d: _cpu().new_tensor([1.0, 2.0], device=d),
}
# torch.rand_like and friends take a generator only where aten::rand_like.generator exists.
HAS_LIKE_GENERATOR = has_operator("aten::rand_like.generator")
RANDOM = {
    "rand": lambda d, g: torch.rand(3, device=d, generator=g),
    "randn": lambda d, g: torch.randn(3, device=d, generator=g),
    "randint": lambda d, g: torch.randint(0, 100, (3,), device=d, generator=g),
    "randperm": lambda d, g: torch.randperm(6, device=d, generator=g),
    "normal": lambda d, g: torch.normal(0.0, 1.0, (3,), device=d, generator=g),
    "rand_like": lambda d, g: torch.rand_like(_cpu(), device=d, generator=g),
    "randn_like": lambda d, g: torch.randn_like(_cpu(), device=d, generator=g),
    "randint_like": lambda d, g: torch.randint_like(_cpu(), 10, device=d, generator=g),
}
DETERMINISTIC = set(FACTORIES) - {
    "empty",
    "empty_strided",
    "empty_permuted",
    "empty_like",
    "new_empty",
    "new_empty_strided",
}


@pytest.mark.filterwarnings("ignore:To copy construct from a tensor")
@pytest.mark.parametrize("name", sorted(FACTORIES))
@pytest.mark.parametrize(
    "spec,index",
    [("cuda", None), ("cuda:0", 0), ("cuda:1", 1), (torch.device("cuda", 1), 1)],
    ids=["cuda", "cuda:0", "cuda:1", "device(cuda,1)"],
)
def test_factory(name, spec, index):
    make = FACTORIES[name]
    out = make(spec)
    expected_device = dev0() if index is None else musa(index)
    assert out.device == expected_device
    ref = make(expected_device)
    assert out.dtype == ref.dtype and out.shape == ref.shape and out.stride() == ref.stride()
    if name in DETERMINISTIC:
        assert torch.equal(out.cpu(), ref.cpu())


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name,
            marks=pytest.mark.skipif(
                name.endswith("_like") and not HAS_LIKE_GENERATOR,
                reason="this torch has no generator argument on *_like factories",
            ),
        )
        for name in sorted(RANDOM)
    ],
)
def test_random_factory_follows_musa_generator(name):
    make = RANDOM[name]
    g = torch.Generator("cuda:1")
    assert g.device == musa(1)
    g.manual_seed(1234)
    out = make("cuda:1", g)
    g_ref = torch.Generator(musa(1))
    g_ref.manual_seed(1234)
    ref = make(musa(1), g_ref)
    assert out.device == musa(1)
    assert torch.equal(out.cpu(), ref.cpu())
    torch.manual_seed(0)
    assert make("cuda", None).device == dev0()


@pytest.mark.parametrize(
    "make",
    [
        lambda d: torch.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,), device=d),
        lambda d: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], device=d),
        lambda d: torch.empty_quantized(
            [2], torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.quint8), device=d
        ),
        lambda d: torch.range(0, 3, device=d),
        lambda d: torch.kaiser_window(5, device=d),
    ],
    ids=["sparse_coo_tensor", "nested_tensor", "empty_quantized", "range", "kaiser_window"],
)
def test_other_constructors_behave_as_musa(make):
    # Whatever MUSA does with these (works or raises), "cuda" does the same.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = outcome(lambda: make("cuda"))
        want = outcome(lambda: make(MUSA))
    assert got == want


def test_device_context_manager():
    # Where torch.get_default_device() does not see a device context (torch 2.7), it says cpu.
    with torch.device("meta"):
        sees_context = torch.get_default_device().type == "meta"
    with torch.device("cuda"):
        assert torch.empty(2).device == dev0()
        assert torch.tensor([1.0]).device == dev0()
        assert torch.get_default_device().type == (MUSA if sees_context else "cpu")
    assert torch.empty(2).device.type == "cpu"
    with torch.device("cuda:1"):
        assert torch.ones(2).device == musa(1)
        assert torch.arange(3).device == musa(1)


def test_set_default_device():
    try:
        torch.set_default_device("cuda:1")
        assert torch.zeros(2).device == musa(1)
        assert torch.get_default_device() == musa(1)
    finally:
        torch.set_default_device(None)
    assert torch.zeros(2).device.type == "cpu"


# ---------------------------------------------------------------- Tensor.to / Tensor.cuda
@pytest.mark.parametrize(
    "call,index,dtype",
    [
        (lambda x: x.to("cuda"), None, torch.float32),
        (lambda x: x.to("cuda:1"), 1, torch.float32),
        (lambda x: x.to(device="cuda:1"), 1, torch.float32),
        (lambda x: x.to(torch.device("cuda")), None, torch.float32),
        (lambda x: x.to("cuda", torch.float16), None, torch.float16),
        (lambda x: x.to(torch.device("cuda", 1), dtype=torch.float64), 1, torch.float64),
        (lambda x: x.to(dtype=torch.float16, device="cuda"), None, torch.float16),
        (lambda x: x.to("cuda", non_blocking=True), None, torch.float32),
        (lambda x: x.to(1), 1, torch.float32),
        (lambda x: x.cuda(), None, torch.float32),
        (lambda x: x.cuda(1), 1, torch.float32),
        (lambda x: x.cuda(device=1), 1, torch.float32),
        (lambda x: x.cuda("cuda:1"), 1, torch.float32),
        (lambda x: x.cuda(torch.device("cuda", 1)), 1, torch.float32),
        (lambda x: x.cuda(torch.device(MUSA, 1)), 1, torch.float32),
        (lambda x: x.cuda(non_blocking=True), None, torch.float32),
        (lambda x: x.double().cuda(), None, torch.float64),
    ],
)
def test_tensor_moves(call, index, dtype):
    x = torch.arange(4, dtype=torch.float32)
    out = call(x)
    assert out.device == (dev0() if index is None else musa(index))
    assert out.dtype == dtype
    assert torch.equal(out.cpu().float(), x)


def test_cuda_memory_format():
    x = torch.randn(2, 3, 4, 5)
    out = x.cuda(memory_format=torch.channels_last)
    assert out.device == dev0()
    assert out.is_contiguous(memory_format=torch.channels_last)


def test_cuda_rejects_non_gpu_devices():
    with pytest.raises(RuntimeError, match="Invalid device, must be cuda device"):
        torch.zeros(1).cuda("cpu")


def test_to_other_tensor_and_back():
    y = torch.zeros(2, device="cuda:1", dtype=torch.float16)
    out = torch.ones(2).to(y)
    assert out.device == musa(1) and out.dtype == torch.float16
    assert y.to("cpu").device.type == "cpu"
    assert y.cpu().device.type == "cpu"


def test_moves_alias_like_cuda():
    # x.to("cuda") hands back x when it already is there, as CUDA does.
    y = torch.zeros(2, device="cuda")
    assert y.to("cuda") is y
    assert y.to("cuda:0") is y
    assert y.to(torch.device("cuda")) is y
    assert y.cuda() is y
    assert y.cuda(0) is y
    assert y.to("cuda:1") is not y
    assert y.to("cuda", copy=True) is not y
    y1 = torch.zeros(2, device="cuda:1")
    assert y1.cuda(1) is y1
    assert y1.cuda().device == dev0()  # .cuda() means the current device
    with torch.cuda.device(1):
        assert y1.cuda() is y1
        assert y1.to("cuda") is y1


def test_as_tensor_of_a_gpu_tensor(devices):
    y = torch.arange(3, device="cuda")
    out = torch.as_tensor(y, device="cuda")
    assert out.device == dev0() and torch.equal(out.cpu(), y.cpu())
    # The Python path translates before torch looks; natively torch compares 'cuda' with 'musa'
    # inside as_tensor and copies (documented in docs/devices.md).
    assert (out is y) == (devices == "python")


def test_autograd_through_cuda_moves():
    x = torch.ones(3, requires_grad=True)
    (x.cuda() * 2).sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 2.0))
    w = torch.ones(3, device="cuda", requires_grad=True)
    (w.to("cuda") * 3).sum().backward()
    assert torch.equal(w.grad.cpu(), torch.full((3,), 3.0))


def test_pin_memory():
    x = torch.ones(4)
    assert x.pin_memory().is_pinned()
    assert x.pin_memory("cuda").is_pinned("cuda")
    assert torch.empty(4, pin_memory=True).is_pinned()


# ---------------------------------------------------------------- modules
def test_module_moves():
    m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    assert m.cuda() is m
    assert all(p.device == dev0() for p in m.parameters())
    assert all(b.device == dev0() for b in m.buffers())
    assert m.cuda(1) is m
    assert all(t.device == musa(1) for t in m.state_dict().values())
    m.to("cuda")
    assert all(p.device == dev0() for p in m.parameters())
    m.to(device="cuda:1", dtype=torch.float16)
    assert all(p.device == musa(1) and p.dtype == torch.float16 for p in m.parameters())
    m.to(torch.device("cuda"), torch.float32)
    assert all(p.device == dev0() and p.dtype == torch.float32 for p in m.parameters())
    out = m(torch.randn(4, 2, device="cuda"))
    assert out.device == dev0()


def test_module_moves_keep_parameter_objects_so_an_earlier_optimizer_trains_them():
    # CUDA programs (and accelerate's prepare) make the optimizer before moving the model.
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 1)
    params = list(m.parameters())
    opt = torch.optim.SGD(m.parameters(), lr=0.5)
    m.cuda()
    assert [p is q for p, q in zip(params, m.parameters())] == [True, True]
    assert all(p.device == dev0() for p in params)
    before = m.weight.detach().clone()
    m(torch.ones(2, 3, device="cuda")).sum().backward()
    opt.step()
    torch.testing.assert_close(m.weight.detach(), before - 0.5 * 2)  # d(sum)/dw = 2 per entry
    m.to("cuda:1", torch.float64)
    m.cpu()
    assert params[0] is m.weight and m.weight.device.type == "cpu"
    assert m.weight.dtype == torch.float64
    # What torch decides elsewhere is unchanged: meta and CPU/musa views of other layouts.
    assert not torch._has_compatible_shallow_copy_type(
        torch.ones(1, device="musa"), torch.ones(1, device="meta")
    )
    assert torch._has_compatible_shallow_copy_type(torch.ones(1), torch.ones(1, device="musa"))
    assert not torch._has_compatible_shallow_copy_type(
        torch.ones(1, 1).to_sparse(), torch.ones(1, device="musa")
    )


def test_module_to_empty():
    m = torch.nn.Linear(2, 2).to_empty(device="cuda:1")
    assert m.weight.device == musa(1)


# ---------------------------------------------------------------- generators
def test_generator():
    g = torch.Generator("cuda")
    assert g.device == dev0() or g.device == musa()
    assert torch.Generator(device="cuda:1").device == musa(1)
    assert torch.Generator(torch.device("cuda", 1)).device == musa(1)
    assert torch.Generator().device.type == "cpu"
    assert torch.Generator("cpu").device.type == "cpu"
    assert isinstance(g, torch.Generator)
    assert isinstance(torch.Generator(), torch.Generator)
    assert isinstance(torch.musa.default_generators[0], torch.Generator)
    assert issubclass(torch._C.Generator, torch.Generator)
    assert not isinstance(object(), torch.Generator)
    g.manual_seed(7)
    a = torch.randn(4, device="cuda", generator=g)
    g.manual_seed(7)
    b = torch.randn(4, device="cuda", generator=g)
    assert torch.equal(a.cpu(), b.cpu())


def test_generator_pickles():
    g = torch.Generator()  # the class is findable by its name: torch._C.Generator
    g.manual_seed(3)
    clone = pickle.loads(pickle.dumps(g))
    assert torch.equal(clone.get_state(), g.get_state())


# ---------------------------------------------------------------- storages
def test_storages():
    s = torch.UntypedStorage(8, device="cuda")
    assert s.device == dev0()
    assert torch.UntypedStorage(8, device="cuda:1").device == musa(1)
    cpu = torch.UntypedStorage(8)
    assert cpu.device.type == "cpu"
    assert cpu.cuda().device == dev0()
    assert cpu.cuda(1).device == musa(1)
    assert cpu.to(device="cuda:1").device == musa(1)
    assert torch.ones(2).untyped_storage().cuda().device == dev0()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TypedStorage is deprecated
        typed = torch.TypedStorage(4, dtype=torch.float32, device="cuda")
        assert typed.device == dev0()
        assert torch.FloatStorage(4).cuda().device == dev0()
        assert torch.ones(2).storage().cuda(1).device == musa(1)


def test_storage_other_constructors_unaffected():
    data = torch.UntypedStorage.from_buffer(b"abcd", dtype=torch.uint8)
    assert data.nbytes() == 4
    assert torch.UntypedStorage().nbytes() == 0


# ---------------------------------------------------------------- torch.load
def _save(obj, location=None, legacy=False):
    """Serialize ``obj``; with ``location`` every storage is tagged with it, as on an NVIDIA
    machine that saved tensors from that device."""
    import torch.serialization as ser

    buf = io.BytesIO()
    entry = None
    if location is not None:
        entry = (-1000, lambda storage: location, lambda storage, loc: None)
        ser._package_registry.insert(0, entry)
    try:
        torch.save(obj, buf, _use_new_zipfile_serialization=not legacy)
    finally:
        if entry is not None:
            ser._package_registry.remove(entry)
    buf.seek(0)
    return buf


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_load_cuda_checkpoint_without_map_location(legacy):
    obj = {"w": torch.arange(4.0), "b": torch.ones(2)}
    buf = _save(obj, "cuda:1", legacy)
    loaded = torch.load(buf)
    assert loaded["w"].device == musa(1) and torch.equal(loaded["w"].cpu(), obj["w"])
    buf = _save(obj, "cuda", legacy)
    assert torch.load(buf)["b"].device == dev0()


@pytest.mark.parametrize(
    "map_location,expected",
    [
        ("cuda", "dev0"),
        ("cuda:1", "musa:1"),
        (torch.device("cuda", 1), "musa:1"),
        ({"cuda:0": "cuda:1"}, "musa:1"),
        ({"cuda:0": "cpu"}, "cpu"),
        ("cpu", "cpu"),
        (lambda storage, loc: storage, "cpu"),
        (lambda storage, loc: storage.cuda(1), "musa:1"),
    ],
    ids=["str", "str:1", "device", "dict-cuda", "dict-cpu", "cpu", "callable", "callable-cuda"],
)
def test_load_map_location(map_location, expected):
    buf = _save({"t": torch.arange(3.0)}, "cuda:0")
    t = torch.load(buf, map_location=map_location)["t"]
    want = dev0() if expected == "dev0" else torch.device(expected)
    assert t.device == want
    assert torch.equal(t.cpu(), torch.arange(3.0))


def test_load_cpu_checkpoint_to_cuda():
    buf = _save({"t": torch.ones(2)})
    assert torch.load(buf, map_location="cuda:1")["t"].device == musa(1)


def test_load_onto_a_malformed_cuda_location_fails_as_torch_does():
    buf = _save({"t": torch.ones(2)})
    with pytest.raises(RuntimeError, match=r"Invalid device string: 'cuda0'"):
        torch.load(buf, map_location="cuda0")


def test_load_onto_missing_device_names_it():
    buf = _save({"t": torch.ones(2)}, "cuda:7")
    with pytest.raises(RuntimeError, match=r"'cuda:7'.*device_count\(\) is 2"):
        torch.load(buf)


def test_save_keeps_musa_tag_roundtrip():
    buf = io.BytesIO()
    torch.save(torch.ones(2, device="cuda:1"), buf)
    buf.seek(0)
    assert torch.load(buf).device == musa(1)


# ---------------------------------------------------------------- DataLoader
def test_dataloader_pin_memory_device():
    data = torch.utils.data.TensorDataset(torch.arange(8.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pin_memory_device is deprecated in recent torch
        loader = torch.utils.data.DataLoader(
            data, batch_size=4, pin_memory=True, pin_memory_device="cuda"
        )
        batches = [b for (b,) in loader]
    assert len(batches) == 2 and all(b.is_pinned() for b in batches)
    assert batches[0].to("cuda", non_blocking=True).device == dev0()


# ---------------------------------------------------------------- bad input
BAD = [
    "cuda:-1",
    "cuda:5",
    "cuda:x",
    "cudaa",
    "cuda:",
    "cuda:01",
    "cuda:1.0",
    "cuda:１",
    "ｃｕｄａ",
    "cuda\u0301",
    "cuda: 1",
    " cuda",
    "CUDA",
]


def _musa_equivalent(spec):
    return MUSA + spec[4:] if spec.startswith("cuda") else spec


# Each call spelled with "cuda", and the same call spelled for MUSA.
BAD_INPUT_CALLS = {
    "empty": (lambda s: torch.empty(1, device=s), None),
    "tensor": (lambda s: torch.tensor([1.0], device=s), None),
    "to": (lambda s: torch.zeros(1).to(s), None),
    "to_kwarg": (lambda s: torch.zeros(1).to(device=s), None),
    "cuda": (lambda s: torch.zeros(1).cuda(s), lambda s: torch.zeros(1).musa(s)),
    "Generator": (lambda s: torch.Generator(s), None),
    "UntypedStorage": (lambda s: torch.UntypedStorage(2, device=s), None),
    "module_to": (lambda s: torch.nn.Linear(1, 1).to(s).weight, None),
}


@pytest.mark.parametrize("spec", BAD)
@pytest.mark.parametrize("name", sorted(BAD_INPUT_CALLS))
def test_bad_devices_fail_as_musa_does_and_name_the_input(spec, name):
    call, musa_call = BAD_INPUT_CALLS[name]
    got = outcome(lambda: call(spec))
    want = outcome(lambda: (musa_call or call)(_musa_equivalent(spec)))
    assert got[:2] == want[:2]
    if got[0] == "err":
        with pytest.raises(got[1]) as err:
            call(spec)
        assert spec in str(err.value)


def test_none_and_ints():
    assert torch.empty(1, device=None).device.type == "cpu"
    assert torch.empty(1, device=1).device == musa(1)
    assert torch.zeros(1).cuda(None).device == dev0()
    with pytest.raises(RuntimeError, match="must not be negative"):
        torch.zeros(1).cuda(-1)  # as torch's own .cuda(-1)
    with pytest.raises(RuntimeError, match="cuda:9"):
        torch.zeros(1).cuda(9)
    with pytest.raises(TypeError):
        torch.zeros(1).cuda(1.5)


# ---------------------------------------------------------------- properties
def _reference(spec):
    """cuda[:anything] -> musa[:anything]; everything else unchanged."""
    return _musa_equivalent(spec) if re.fullmatch(r"cuda(:.*)?", spec, re.DOTALL) else spec


SPECS = st.one_of(
    st.sampled_from(
        BAD
        + [
            "cuda",
            "cuda:0",
            "cuda:1",
            "cuda:127",
            "cuda:128",
            "cuda:99999999999",
            "musa",
            "musa:1",
            "cpu",
            "meta",
            "",
            ":0",
            "cuda::1",
            "cuda:1:1",
        ]
    ),
    st.builds(
        lambda head, tail: head + tail,
        st.sampled_from(["cuda", "cuda:", "musa:", "cpu:", "cu", "cuda:1"]),
        st.text(max_size=5),
    ),
    st.text(max_size=8),
)
PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _names_input(spec):
    printable = all(unicodedata.category(c)[0] not in "CZ" or c == " " for c in spec)
    return printable and spec.startswith("cuda")


@PROPERTY_SETTINGS
@given(SPECS)
def test_property_translation_agrees_with_reference(spec):
    from torchada._devices import install as _devices
    from torchada._devices.rule import translate_device
    from torchada._native import library as _native

    want = result(lambda: torch.device(_reference(spec)))
    assert result(lambda: translate_device(spec)) == want
    native = _native.load() if _devices.path() == "native" else None
    if native is not None:  # the C translation used by Tensor.to says the same
        got = result(lambda: native.translate_device(spec))
        if _reference(spec) == spec:
            assert got == ("ok", None)
        else:
            assert got == want


@PROPERTY_SETTINGS
@given(SPECS)
def test_property_factories_and_moves_agree_with_reference(spec):
    for call in (lambda s: torch.empty(1, device=s), lambda s: torch.ones(1).to(s)):
        try:
            got = ("ok", call(spec).device)
        except Exception as err:
            got = ("err", type(err))
            message = str(err)
        want = outcome(lambda call=call: call(_reference(spec)))[:2]
        assert got == want, (spec, got, want)
        if got[0] == "err" and _names_input(spec):
            # Where torch names the musa spelling, the cuda spelling is named.
            try:
                call(_reference(spec))
            except Exception as musa_err:
                if _reference(spec) in str(musa_err):
                    assert spec in message


@PROPERTY_SETTINGS
@given(st.integers(min_value=-4, max_value=200))
def test_property_cuda_index(index):
    got = outcome(lambda: torch.zeros(1).cuda(index))[:2]
    want = outcome(lambda: torch.zeros(1).to(torch.device(MUSA, index)))[:2]
    assert got == want
