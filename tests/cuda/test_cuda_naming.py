"""What a CUDA program sees of streams, events, torch.cuda.amp and the raw allocator on MUSA:
torch.cuda's names and messages, with torch_musa's objects behind them. Also when
CUDA_VISIBLE_DEVICES can still choose the devices."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
from conftest import run_python

import torchada
from torchada._cuda.redirect import original_module

pytestmark = pytest.mark.usefixtures("torchada_on")


# ------------------------------------------------------------------ streams and events
def test_streams_print_as_torch_cuda_streams():
    default = torch.cuda.current_stream()
    assert repr(default) == "<torch.cuda.Stream device=musa:0 cuda_stream=0x0>"
    side = torch.cuda.Stream(device=1)
    assert repr(side) == f"<torch.cuda.Stream device=musa:1 cuda_stream={side.cuda_stream:#x}>"
    assert side.cuda_stream != 0
    # An external stream is a stream too, printed with the handle it wraps.
    wrapped = torch.cuda.ExternalStream(side.cuda_stream)
    assert repr(wrapped).startswith("<torch.cuda.Stream device=musa:0 cuda_stream=0x")


def test_events_print_as_torch_cuda_events():
    event = torch.cuda.Event(enable_timing=True)
    assert repr(event) == "<torch.cuda.Event uninitialized>"
    torch.cuda.current_stream().record_event(event)
    assert event.cuda_event != 0
    assert repr(event) == f"<torch.cuda.Event {event.cuda_event:#x}>"


def test_cuda_stream_protocol_follows_this_torch():
    stream = torch.cuda.Stream()
    if not hasattr(original_module("torch.cuda.streams").Stream, "__cuda_stream__"):
        # torch 2.7 and 2.9 have no protocol on CUDA either: none is added.
        assert not hasattr(stream, "__cuda_stream__")
        return
    assert stream.__cuda_stream__() == (0, stream.cuda_stream)
    external = torch.cuda.ExternalStream(stream.cuda_stream)
    version, handle = external.__cuda_stream__()
    assert version == 0 and handle == external.cuda_stream == stream.cuda_stream


def test_disable_gives_torch_musa_its_own_names_back():
    torchada.disable()
    try:
        stream, event = torch.musa.Stream(), torch.musa.Event()
        assert repr(stream).startswith("torch_musa.Stream device=musa:0 musa_stream=")
        assert repr(event) == "<torch_musa.Event uninitialized>"
        for attr in ("__cuda_stream__", "cuda_stream"):
            assert not hasattr(stream, attr)
        assert not hasattr(event, "cuda_event")
    finally:
        assert torchada.enable()
    assert repr(torch.cuda.Event()) == "<torch.cuda.Event uninitialized>"


def test_a_device_context_object_is_a_device_argument():
    # torch.cuda's index rule takes a torch.cuda.device object as its index; torch_musa's
    # refuses it ("Expected a musa device").
    on_second = torch.cuda.device(1)
    handle = 0x7F0000AB0000
    assert torch.cuda.ExternalStream(handle, device=on_second).device.index == 1
    from_external = torch.cuda.get_stream_from_external(handle, on_second)
    assert from_external.cuda_stream == handle and from_external.device.index == 1
    assert torch.cuda.memory_allocated(on_second) == torch.musa.memory_allocated(1)
    with torch.cuda.device(on_second):
        assert torch.cuda.current_device() == 1
    assert torch.cuda.current_device() == 0


def test_accelerator_current_stream_names_a_bad_index():
    count = torch.cuda.device_count()
    with pytest.raises(RuntimeError, match=rf"Device index value {count} is out of index range"):
        torch.accelerator.current_stream(count)
    with pytest.raises(RuntimeError, match=r"out of index range \[0, "):
        torch.accelerator.current_stream(f"cuda:{count + 3}")
    side = torch.cuda.Stream()
    previous = torch.accelerator.current_stream()
    torch.accelerator.set_stream(side)
    try:
        assert torch.accelerator.current_stream().stream_id == side.stream_id
        assert torch.accelerator.current_stream(-1).stream_id == side.stream_id  # the current
        assert torch.accelerator.current_stream("cuda:0").stream_id == side.stream_id
    finally:
        torch.accelerator.set_stream(previous)


# ------------------------------------------------------------------ torch.cuda.amp
def _torch_says(name: str) -> str:
    """torch's own deprecation text for torch.cuda.amp.<name> (class or its __init__)."""
    original = getattr(original_module("torch.cuda.amp"), name)
    text = getattr(original, "__deprecated__", None) or vars(original)["__init__"].__deprecated__
    assert "is deprecated" in text
    return text


@pytest.mark.parametrize(
    "name, make",
    [
        ("autocast", lambda: torch.cuda.amp.autocast()),
        ("GradScaler", lambda: torch.cuda.amp.GradScaler()),
        ("custom_fwd", lambda: torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)),
        ("custom_bwd", lambda: torch.cuda.amp.custom_bwd(lambda ctx, g: g)),
    ],
)
def test_cuda_amp_warns_as_torch_does(name, make):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        make()
    ours = [w for w in seen if w.category is FutureWarning]
    assert [str(w.message) for w in ours] == [_torch_says(name)]
    assert ours[0].filename == __file__  # it points at the caller, as torch's does


def test_torch_musa_amp_stays_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.musa.amp.autocast()
        torch.musa.amp.GradScaler()
        torch.musa.amp.custom_fwd(cast_inputs=torch.float32)
        torch.amp.autocast("cuda")
        torch.amp.GradScaler("cuda")


def test_cuda_amp_objects_still_act_on_musa():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        a = torch.randn(4, 4, device="cuda")
        with torch.cuda.amp.autocast(dtype=torch.bfloat16):
            assert (a @ a).dtype == torch.bfloat16
        assert isinstance(torch.cuda.amp.autocast(), torch.musa.amp.autocast)
        scaler = torch.cuda.amp.GradScaler(init_scale=8.0)
        assert isinstance(scaler, torch.musa.amp.GradScaler) and scaler._device == "musa"
        assert scaler.scale(torch.ones((), device="cuda")).item() == 8.0

        class Doubled(torch.autograd.Function):
            @staticmethod
            @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
            def forward(ctx, x):
                assert x.dtype == torch.float32 and not torch.is_autocast_enabled("cuda")
                return x * 2

            @staticmethod
            @torch.cuda.amp.custom_bwd
            def backward(ctx, grad):
                return grad * 2

        x = torch.ones(3, device="cuda", dtype=torch.float16, requires_grad=True)
        with torch.autocast("cuda"):
            y = Doubled.apply(x)
        assert y.dtype == torch.float32
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0]


# ------------------------------------------------------------------ the raw allocator
def test_raw_allocations_count_as_allocated_memory():
    before = torch.cuda.memory_allocated()
    ptr = torch.cuda.caching_allocator_alloc(3000)
    try:
        assert torch.cuda.memory_allocated() >= before + 3000
        assert torch.cuda.memory_stats()["requested_bytes.all.current"] >= 3000
    finally:
        torch.cuda.caching_allocator_delete(ptr)
    assert torch.cuda.memory_allocated() == before
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        torch.cuda.caching_allocator_delete(ptr)


def test_raw_allocations_take_torch_cudas_stream_forms():
    before = torch.cuda.memory_allocated(1)
    side = torch.cuda.Stream(device=1)
    by_object = torch.cuda.caching_allocator_alloc(512, "cuda:1", side)
    by_handle = torch.cuda.caching_allocator_alloc(512, 1, side.cuda_stream)
    assert torch.cuda.memory_allocated(1) >= before + 1024
    for ptr in (by_object, by_handle):
        torch.cuda.caching_allocator_delete(ptr)
    assert torch.cuda.memory_allocated(1) == before
    assert torch.cuda.current_stream(1) == torch.cuda.default_stream(1)  # left as it was
    with pytest.raises(TypeError, match="Invalid type for stream argument"):
        torch.cuda.caching_allocator_alloc(16, stream="side")


def test_a_zero_byte_raw_allocation_is_a_null_pointer():
    before = torch.cuda.memory_allocated()
    assert torch.cuda.caching_allocator_alloc(0) == 0
    torch.cuda.caching_allocator_delete(0)  # nothing to free
    assert torch.cuda.memory_allocated() == before


# ------------------------------------------------------------------ CUDA_VISIBLE_DEVICES
_COUNT = (
    "import json, os; print(json.dumps([torch.cuda.device_count(), "
    "os.environ.get('MUSA_VISIBLE_DEVICES')]))"
)


def _result(r):
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_visible_devices_read_before_torch_musa_take_effect():
    env = {"TORCHADA_SIMULATE": "1", "TORCHADA_ACTIVE": "0", "CUDA_VISIBLE_DEVICES": "1"}
    r = run_python("import torchada, torch\n" + _COUNT, env=env)
    assert _result(r) == [1, "1"] and "does not choose" not in r.stderr


def test_visible_devices_met_after_torch_musa_say_they_came_too_late():
    # `import torch` first: torch_musa (here the simulator, through the entry point) has counted
    # the devices before torchada turns on. Its count stands; the environment is still derived,
    # for child processes, and a warning says why this process sees every device.
    env = {"TORCHADA_SIMULATE": "1", "TORCHADA_ACTIVE": "0", "CUDA_VISIBLE_DEVICES": "1"}
    r = run_python("import torch, torchada\n" + _COUNT, env=env)
    assert _result(r) == [2, "1"]
    assert "CUDA_VISIBLE_DEVICES='1' does not choose this process's devices" in r.stderr
    assert "MUSA_VISIBLE_DEVICES unset (every device)" in r.stderr


def test_visible_devices_set_after_import_do_not_change_the_count():
    # As on a MUSA machine: the driver read MUSA_VISIBLE_DEVICES when torch_musa was imported.
    code = (
        "import os, torchada, torch\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
        "os.environ['MUSA_VISIBLE_DEVICES'] = '0'\n" + _COUNT
    )
    r = run_python(code, env={"TORCHADA_SIMULATE": "1", "TORCHADA_ACTIVE": "0"})
    assert _result(r) == [2, "0"]
