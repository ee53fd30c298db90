"""Every torch.cuda function and class that takes a device accepts the CUDA spellings and means
the MUSA device. The list is derived from torch's own signatures (tables/cuda_device_params.json,
checked against torch here), and every entry is called with every spelling."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import run_python

from torchada._cuda import device_args as _device_args
from torchada._cuda.redirect import UnsupportedCUDAAPIError

ENTRIES = [(m, n) for m, names in _device_args.table().items() for n in names]


def _spellings():
    """Spellings of device 1; each must give what the int gives. (musa devices exist only once
    the backend is renamed, so this is called inside the tests.)"""
    return [1, "cuda:1", torch.device("cuda", 1), "musa:1", torch.device("musa", 1)]


def test_table_is_derived_from_torchs_own_signatures():
    code = """
        import json
        from torchada._cuda import device_args as _device_args
        print(json.dumps(_device_args.derive()))
    """
    # Torch's own torch.cuda: a process where torchada is off (no simulator, no activation).
    r = run_python(code, env={"TORCHADA_ACTIVE": "0", "TORCHADA_DISABLE": "1"})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == _device_args.table()
    assert len(ENTRIES) >= 60


def _module(name: str):
    import importlib

    return importlib.import_module(name)


def _call(module: str, name: str, device):
    """Calls ``module.name`` with ``device`` the way CUDA code does; returns something comparable
    across spellings."""
    fn = getattr(_module(module), name)
    if name == "Stream":
        return fn(device=device).device
    if name == "ExternalStream":
        return fn(0x4D55, device=device).device
    if name == "device":
        with fn(device):
            return torch.cuda.current_device()
    if name == "set_device":
        previous = torch.cuda.current_device()
        fn(device)
        try:
            return torch.cuda.current_device()
        finally:
            torch.cuda.set_device(previous)
    if name in ("current_stream", "default_stream"):
        return fn(device).device
    if name == "can_device_access_peer":
        return fn(device, device), fn(0, device), fn(device, 0)
    if name == "caching_allocator_alloc":
        ptr = fn(64, device)
        torch.cuda.caching_allocator_delete(ptr)
        return ptr != 0
    if name == "set_per_process_memory_fraction":
        fn(0.5, device)
        try:
            return torch.cuda.get_per_process_memory_fraction(1)
        finally:
            fn(1.0, device)
    if name == "get_rng_state":
        return fn(device).tolist()
    if name == "set_rng_state":
        state = torch.musa.get_rng_state(1)
        fn(state, device)
        return torch.musa.get_rng_state(1).tolist() == state.tolist()
    if name == "get_stream_from_external":
        return fn(0x4D55, device).device
    if name == "use_mem_pool":
        pool = torch.cuda.MemPool()
        with fn(pool, device):
            return torch.cuda.current_device()
    if name == "get_device_properties":
        return fn(device).name
    if name == "memory_summary":
        return fn(device).splitlines()[1]
    if name == "mem_get_info":
        return fn(device)
    return fn(device)


@pytest.mark.parametrize("module,name", ENTRIES, ids=[f"{m}.{n}" for m, n in ENTRIES])
def test_every_device_taking_name_takes_every_spelling(torchada_on, module, name):
    reference = None
    for spelling in _spellings():
        try:
            got = _call(module, name, spelling)
        except UnsupportedCUDAAPIError as exc:
            # NVML telemetry: unsupported on MUSA, with its reason, whatever the spelling.
            assert name in str(exc)
            continue
        if reference is None:
            reference = got
        assert got == reference, (spelling, got, reference)


def test_no_argument_defaults_to_the_current_device(torchada_on):
    with torch.cuda.device(1):
        assert torch.cuda.get_device_properties().name == torch.musa.get_device_properties(1).name
        assert torch.cuda.current_stream().device == torch.device("musa", 1)
        assert torch.cuda.memory_allocated() == torch.musa.memory_allocated(1)


@pytest.mark.parametrize(
    "call",
    [
        lambda: torch.cuda.set_device("cuda:9"),
        lambda: torch.cuda.memory_allocated(torch.device("cuda", 9)),
        lambda: torch.cuda.Stream(device="cuda:9"),
    ],
)
def test_out_of_range_names_what_the_user_wrote(torchada_on, call):
    with pytest.raises((RuntimeError, ValueError, AssertionError)) as info:
        call()
    assert "cuda:9" in str(info.value)


def test_malformed_spec_fails_as_torch_fails(torchada_on):
    with pytest.raises(RuntimeError, match="cuda:x"):
        torch.cuda.memory_allocated("cuda:x")


def test_hugging_face_and_lightning_idioms(torchada_on):
    # transformers' pipeline: `with torch.cuda.device(self.device)`; Lightning's CUDA
    # accelerator: `torch.cuda.set_device(torch.device("cuda:0"))` then memory queries.
    with torch.cuda.device(torch.device("cuda:1")):
        x = torch.ones(4, device="cuda")
    assert x.device == torch.device("musa", 1)
    torch.cuda.set_device(torch.device("cuda:0"))
    assert torch.cuda.current_device() == 0
    assert torch.cuda.memory_reserved(torch.device("cuda:1")) >= x.numel() * 4


@pytest.mark.parametrize("name", ["synchronize", "current_stream", "default_stream"])
def test_a_cpu_device_is_refused_in_cudas_words(torchada_on, name):
    # torch_musa's own check says "musa device"; the program asked torch.cuda.
    with pytest.raises(ValueError, match=r"^Expected a cuda device, but got: cpu$"):
        getattr(torch.cuda, name)("cpu")
    with pytest.raises(ValueError, match=r"^Expected a cuda device, but got: cpu$"):
        getattr(torch.cuda, name)(torch.device("cpu"))
