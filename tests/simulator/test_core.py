"""The simulator of torch_musa: tensors, device API, streams, memory, RNG, AMP, graphs, fidelity."""

from __future__ import annotations

import inspect
import io
import json

import pytest
import torch
from conftest import sim_release
from surface import reference

RELEASE, FACTS = sim_release()


@pytest.fixture(scope="module", autouse=True)
def _sim(musa_sim):
    return musa_sim


# ---------------------------------------------------------------- identity and versions
def test_module_identity_and_versions(musa_sim):
    import sys

    assert torch.musa is musa_sim is sys.modules["torch.musa"]
    assert torch.version.musa == "50100" and float(torch.version.musa) >= 4000
    from torchada._simulator import releases

    base, sha = musa_sim.__version__.split("+")
    assert base == releases.resolve() and len(sha) == 7
    assert torch._C._get_privateuse1_backend_name() == "musa"


@pytest.mark.parametrize(
    "name",
    [
        "nvtx",
        "CUDAGraph",
        "memory_cached",
        "max_memory_cached",
        "init",
        "streams",
        "random",
        "get_stream_from_external",
        "caching_allocator_alloc",
        "list_gpu_processes",
        "utilization",
        "cudart",
        "nccl",
        "jiterator",
        "get_sync_debug_mode",
        "CUDAPluggableAllocator",
        "CudaError",
        "host_memory_stats",
        "get_per_process_memory_fraction",
        "_get_device_index",
        "_utils",
    ],
)
def test_names_torch_musa_lacks_are_absent(name):
    # torch.cuda names torch_musa 2.7.1 lacks; a later release serves some of them itself, as its
    # surface (extracted from its source) says.
    if name in reference(RELEASE)["torch_musa"]["ns"]:
        assert callable(getattr(torch.musa, name)), name
        return
    with pytest.raises(AttributeError):
        getattr(torch.musa, name)


def test_renamed_counterparts_exist():
    for name in ("MUSAGraph", "MUSAPluggableAllocator", "MusaError", "musart", "mccl", "graphs"):
        assert hasattr(torch.musa, name), name
    assert hasattr(torch.backends, "mudnn")


# ---------------------------------------------------------------- tensors
def test_values_devices_and_round_trip():
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3).to("musa")
    assert x.device == torch.device("musa", 0) and x.device.type == "musa"
    assert x.is_musa and not x.is_cuda
    y = (x * 2 + 1).t().contiguous()
    assert y.device.type == "musa"
    assert torch.equal(y.cpu(), (torch.arange(6.0).reshape(2, 3) * 2 + 1).t())
    assert y.sum().item() == 36.0


def test_aliasing_and_in_place_writes():
    x = torch.zeros(4, 4, device="musa")
    row = x[1]
    col = x[:, 2]
    row.fill_(3.0)
    col.add_(1.0)
    x.view(-1)[0] = 7.0
    expected = torch.zeros(4, 4)
    expected[1] = 3.0
    expected[:, 2] += 1.0
    expected.view(-1)[0] = 7.0
    assert torch.equal(x.cpu(), expected)
    assert row.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


def test_copies_between_devices_and_dtypes():
    a = torch.arange(5, device="musa:0", dtype=torch.int64)
    b = a.to("musa:1")
    assert b.device == torch.device("musa", 1)
    assert torch.equal(b.cpu(), torch.arange(5))
    c = b.to(torch.float16)
    assert c.dtype == torch.float16 and c.device.index == 1
    d = torch.empty(5, device="musa:0").copy_(b)
    assert torch.equal(d.cpu(), torch.arange(5.0))
    assert torch.tensor([1, 2]).to(1).device == torch.device("musa", 1)  # torch_musa's int rule


def test_factories_resize_and_scalars():
    with torch.musa.device(1):
        e = torch.empty(3, device="musa")
        assert e.device.index == 1
    z = torch.zeros(2, device="musa")
    z.resize_(6)
    assert z.shape == (6,)
    assert torch.full((2,), 2.5, device="musa").tolist() == [2.5, 2.5]
    s = torch.empty(0, device="musa")
    s.set_(torch.arange(4.0, device="musa"))
    assert s.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_mixing_devices_is_refused():
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(2, device="musa:0") + torch.ones(2, device="musa:1")
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(2, device="musa:0") + torch.ones(2)
    # A 0-dim CPU tensor is a scalar and may mix, as on every device.
    assert (torch.ones(2, device="musa") + torch.tensor(1.0)).tolist() == [2.0, 2.0]


def test_autograd_and_optimizer_step():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    ref.load_state_dict(model.state_dict())
    model.musa()
    x = torch.randn(32, 8)
    y = torch.randn(32, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        for m, o, dev in ((model, opt, "musa"), (ref, ref_opt, "cpu")):
            o.zero_grad()
            loss = torch.nn.functional.mse_loss(m(x.to(dev)), y.to(dev))
            loss.backward()
            o.step()
            if dev == "musa":
                losses.append(loss.item())
    assert losses[-1] < losses[0]
    for p, q in zip(model.parameters(), ref.parameters()):
        assert p.device.type == "musa" and p.grad.device.type == "musa"
        torch.testing.assert_close(p.detach().cpu(), q.detach())


@pytest.mark.parametrize("channels_last", [False, True])
def test_group_norm_matches_cpu_in_both_memory_formats(channels_last):
    # torch_musa has group-norm kernels; torch's composite one cannot view channels-last input.
    torch.manual_seed(0)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    x = torch.randn(2, 16, 4, 4).contiguous(memory_format=fmt)
    cpu, dev = torch.nn.GroupNorm(4, 16), torch.nn.GroupNorm(4, 16).musa()
    dev.load_state_dict(cpu.state_dict())
    xc, xm = x.clone().requires_grad_(), x.musa().requires_grad_()
    out_c, out_m = cpu(xc), dev(xm)
    (out_c * torch.arange(16.0).view(1, 16, 1, 1)).sum().backward()
    (out_m * torch.arange(16.0, device="musa").view(1, 16, 1, 1)).sum().backward()
    assert out_m.device.type == "musa"
    torch.testing.assert_close(out_m.detach().cpu(), out_c.detach())
    torch.testing.assert_close(xm.grad.cpu(), xc.grad)
    torch.testing.assert_close(dev.weight.grad.cpu(), cpu.weight.grad)


def test_convolution_and_lstm_match_cpu():
    torch.manual_seed(1)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    lstm = torch.nn.LSTM(5, 6, batch_first=True)
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    seq = torch.randn(2, 4, 5)
    out_cpu = conv(x)
    out_cpu.sum().backward()
    gx_cpu, gw_cpu = x.grad.clone(), conv.weight.grad.clone()
    x.grad = None
    conv.weight.grad = None
    lstm_cpu, _ = lstm(seq)
    lstm_cpu.sum().backward()
    lw_cpu = lstm.weight_hh_l0.grad.clone()
    lstm.zero_grad()

    conv.musa()
    lstm.musa()
    xm = x.detach().musa().requires_grad_()
    out = conv(xm)
    out.sum().backward()
    torch.testing.assert_close(out.detach().cpu(), out_cpu.detach())
    torch.testing.assert_close(xm.grad.cpu(), gx_cpu)
    torch.testing.assert_close(conv.weight.grad.cpu(), gw_cpu)
    lstm_out, _ = lstm(seq.musa())
    lstm_out.sum().backward()
    torch.testing.assert_close(lstm_out.detach().cpu(), lstm_cpu.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(lstm.weight_hh_l0.grad.cpu(), lw_cpu, rtol=1e-5, atol=1e-6)


def test_pinned_memory_and_record_stream():
    p = torch.ones(4).pin_memory()
    assert p.is_pinned() and not torch.ones(4).is_pinned()
    x = torch.ones(4, device="musa")
    x.record_stream(torch.musa.current_stream())  # a no-op that must not raise
    assert torch.zeros(2, device="musa").untyped_storage().is_cuda  # torch_musa's quirk


def test_serialization_round_trip():
    buf = io.BytesIO()
    torch.save({"w": torch.arange(3.0, device="musa:1")}, buf)
    buf.seek(0)
    loaded = torch.load(buf)
    assert loaded["w"].device == torch.device("musa", 1)
    buf.seek(0)
    assert torch.load(buf, map_location="cpu")["w"].tolist() == [0.0, 1.0, 2.0]


# ---------------------------------------------------------------- device API
def test_device_api_semantics():
    m = torch.musa
    assert m.is_available() and m.device_count() == 2
    m.set_device(1)
    assert m.current_device() == 1
    m.set_device(-1)  # negative index: a no-op, as in torch_musa
    assert m.current_device() == 1
    with m.device(0):
        assert m.current_device() == 0
    assert m.current_device() == 1
    m.set_device(0)
    t = torch.ones(1, device="musa:1")
    with m.device_of(t):
        assert m.current_device() == 1
    assert m.get_device_name() == "MTT S4000"
    assert m.get_device_capability(0) == (2, 2)
    assert m.get_arch_list() == ["22"]
    assert m.is_bf16_supported() and m.is_tf32_supported()
    assert m._exchange_device(1) == 0 and m._maybe_exchange_device(0) == 1
    if FACTS["device_api_2_11"]:  # 2.11.0.post2: the current device, as torch.cuda
        assert m.get_device_properties().name == "MTT S4000"
    else:
        with pytest.raises(TypeError):
            m.get_device_properties()  # the argument is required in torch_musa
    with pytest.raises(AssertionError, match="Invalid device id"):
        m.get_device_properties(5)
    with pytest.raises(ValueError, match="Expected a musa device, but got: cpu"):
        m.get_device_properties("cpu")
    assert m.can_device_access_peer(0, 1) and not m.can_device_access_peer(0, 0)
    assert m.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]


def test_device_properties_fields_and_repr():
    p = torch.musa.get_device_properties(0)
    assert (p.name, p.major, p.minor, p.multi_processor_count) == ("MTT S4000", 2, 2, 48)
    assert p.total_memory == 48 << 30
    basic = (
        "_MusaDeviceProperties(name='MTT S4000', major='2, minor=2, total_memory=49152MB, "
        "multi_processor_count=48"
    )
    if FACTS["device_property_fields"] == "extended":  # 2.11.0.post2's 16 more fields
        assert repr(p) == basic.replace("major='2", "major=2") + (
            ", uuid=4d545453-0000-0000-0000-000000000000, pci_bus_id=16, pci_device_id=0, "
            "pci_domain_id=0, L2_cache_size=8MB)"
        )
        assert str(p.uuid) == "4d545453-0000-0000-0000-000000000000" and p.L2_cache_size == 8 << 20
        assert p.gcnArchName == p.name and p.warp_size == 128  # MP 2.x boards; 32 from MP 3.1
        missing_fields = ()
    else:
        assert repr(p) == basic + ")"
        missing_fields = ("warp_size", "uuid", "L2_cache_size", "gcnArchName")
    for missing in missing_fields:
        with pytest.raises(AttributeError):
            getattr(p, missing)
    with pytest.raises(AttributeError):
        p.name = "x"


def test_lazy_init_state(py):
    # torchada's activation makes `_initialized` follow the device; this process may have turned
    # torchada on, so the simulator alone is looked at in a fresh one.
    code = """
        import torch
        m = torch.musa
        before = m._initialized  # a by-value copy in torch_musa: always False
        torch.ones(1, device="musa")
        m.current_device()
        print(before, m._initialized, m.is_initialized(), len(m.default_generators), m.has_half)
    """
    r = py(code, env={"TORCHADA_SIMULATE": "1"})
    assert r.returncode == 0, r.stderr
    # 2.11.0.post2 reads _initialized live (a module __getattr__), 2.7.1 copied it at import.
    live = str(FACTS["live_initialized"])
    assert r.stdout.split() == ["False", live, "True", "2", "True"]


@pytest.mark.parametrize(
    "env,expected",
    [
        ({"TORCHADA_SIM_BOARD": "S5000"}, ["MTT S5000", [3, 1], 56, 2]),
        ({"TORCHADA_SIM_BOARD": "s80", "TORCHADA_SIM_DEVICES": "4"}, ["MTT S80", [2, 1], 32, 4]),
        ({"MUSA_VISIBLE_DEVICES": "1"}, ["MTT S4000", [2, 2], 48, 1]),
        (
            {"TORCHADA_SIM_DEVICES": "4", "MUSA_VISIBLE_DEVICES": "2,0,9,1"},
            ["MTT S4000", [2, 2], 48, 2],
        ),
    ],
)
def test_boards_and_visible_devices(py, env, expected):
    code = """
        import json, torch
        p = torch.musa.get_device_properties(0)
        print(json.dumps([p.name, list(torch.musa.get_device_capability(0)),
                          p.multi_processor_count, torch.musa.device_count()]))
    """
    r = py(code, env={"TORCHADA_SIMULATE": "1", **env})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == expected


def test_bad_board_names_the_variable(py):
    r = py("import torch", env={"TORCHADA_SIMULATE": "1", "TORCHADA_SIM_BOARD": "H100"})
    assert r.returncode != 0
    assert "TORCHADA_SIM_BOARD='H100'" in r.stderr and "S4000" in r.stderr


def test_plain_import_torch_has_no_musa(py):
    r = py("import torch, sys; print(hasattr(torch, 'musa'), 'torch_musa' in sys.modules)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False"]


def test_torch_musa_not_importable_without_asking(py):
    r = py("import torch_musa")
    assert r.returncode != 0 and "No module named 'torch_musa'" in r.stderr


def test_autoload_entry_point_respects_torch_switch(py):
    r = py(
        "import torch; print(hasattr(torch, 'musa'))",
        env={"TORCHADA_SIMULATE": "1", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert r.stdout.strip() == "False", r.stderr


# ---------------------------------------------------------------- streams and events
def test_streams_current_default_and_context():
    m = torch.musa
    s = m.Stream()
    assert isinstance(s, torch.Stream) and s.musa_stream != 0
    assert m.default_stream().musa_stream == 0
    assert not hasattr(s, "cuda_stream")
    with m.stream(s):
        assert m.current_stream() == s
    assert m.current_stream().musa_stream == 0
    assert repr(s).startswith("torch_musa.Stream device=musa:0 musa_stream=0x")
    assert s.query() and m.Stream.priority_range() == (0, -1)


def test_event_timing_is_real():
    import time

    m = torch.musa
    start, end = m.Event(enable_timing=True), m.Event(enable_timing=True)
    assert repr(start) == "<torch_musa.Event uninitialized>"
    start.record()
    time.sleep(0.02)
    end.record()
    end.synchronize()
    assert 15.0 <= start.elapsed_time(end) < 2000.0
    assert isinstance(start, torch.Event) and start.query()
    no_timing_a, no_timing_b = m.Event(), m.Event()
    no_timing_a.record()
    no_timing_b.record()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        no_timing_a.elapsed_time(no_timing_b)


# ---------------------------------------------------------------- memory
def test_memory_accounting():
    m = torch.musa
    m.synchronize()
    before = m.memory_allocated(0)
    x = torch.empty(1024 * 1024, dtype=torch.uint8, device="musa:0")
    assert m.memory_allocated(0) == before + 1024 * 1024
    assert m.max_memory_allocated(0) >= before + 1024 * 1024
    stats = m.memory_stats(0)
    assert stats["allocated_bytes.large_pool.current"] >= 1024 * 1024
    assert "num_ooms" in stats and "reserved_bytes.all.peak" in stats
    del x
    assert m.memory_allocated(0) == before
    m.reset_peak_memory_stats(0)
    assert m.max_memory_allocated(0) == before
    free, total = m.mem_get_info(0)
    assert total == 48 << 30 and 0 < free <= total
    with pytest.raises(TypeError):
        m.set_per_process_memory_fraction(1, 0)
    with pytest.raises(ValueError):
        m.set_per_process_memory_fraction(1.5, 0)


def test_out_of_memory_is_torch_oom():
    torch.musa.set_per_process_memory_fraction(0.0001, 1)
    try:
        # torch_musa's caching allocator's words, sizes as c10 formats them.
        words = (
            r"^MUSA out of memory\. Tried to allocate 64\.00 MiB\. GPU 1 has a total capacity "
            r"of \d+\.\d\d GiB of which .* is free\. .* allowed; Of the allocated memory "
        )
        with pytest.raises(torch.OutOfMemoryError, match=words):
            torch.empty(64 << 20, dtype=torch.uint8, device="musa:1")
        assert torch.musa.memory_stats(1)["num_ooms"] >= 1
    finally:
        torch.musa.set_per_process_memory_fraction(1.0, 1)


# ---------------------------------------------------------------- RNG
def test_rng_reproducibility_and_state():
    m = torch.musa
    m.manual_seed(1234)
    a = torch.randn(8, device="musa")
    m.manual_seed(1234)
    b = torch.randn(8, device="musa")
    assert torch.equal(a.cpu(), b.cpu())
    state = m.get_rng_state()
    c = torch.rand(4, device="musa")
    m.set_rng_state(state)
    assert torch.equal(c.cpu(), torch.rand(4, device="musa").cpu())
    g = torch.Generator("musa").manual_seed(7)
    g2 = torch.Generator("musa").manual_seed(7)
    assert torch.equal(
        torch.rand(3, device="musa", generator=g).cpu(),
        torch.rand(3, device="musa", generator=g2).cpu(),
    )
    m.manual_seed_all(5)
    d0 = torch.rand(2, device="musa:0").cpu()
    d1 = torch.rand(2, device="musa:1").cpu()
    assert torch.equal(d0, d1)
    assert m.initial_seed() == 5
    assert torch.random.fork_rng is m.fork_rng


def test_generator_state_is_seed_and_offset_like_a_philox_generator():
    # torch_musa's generators are Philox ones: a 16-byte state (seed, offset), offsets that
    # advance in multiples of 4, and set_offset replaying what was drawn from there.
    g = torch.Generator("musa").manual_seed(11)
    assert g.get_offset() == 0 and g.initial_seed() == 11
    first = torch.rand(5, device="musa", generator=g).cpu()
    after_one = g.get_offset()
    assert after_one > 0 and after_one % 4 == 0
    second = torch.rand(5, device="musa", generator=g).cpu()
    assert not torch.equal(first, second)
    g.set_offset(after_one)
    assert torch.equal(torch.rand(5, device="musa", generator=g).cpu(), second)
    state = g.get_state()
    assert state.dtype == torch.uint8 and state.numel() == 16 and state.device.type == "cpu"
    third = torch.rand(5, device="musa", generator=g).cpu()
    g.set_state(state)
    assert torch.equal(torch.rand(5, device="musa", generator=g).cpu(), third)
    with pytest.raises(RuntimeError, match="wrong size"):
        g.set_state(torch.zeros(8, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="multiple of 4"):
        g.set_offset(6)


def test_generator_pickles_and_checks_its_device_index():
    import pickle

    g = torch.Generator("musa:1").manual_seed(3)
    torch.randn(4, device="musa:1", generator=g)
    copy = pickle.loads(pickle.dumps(g))
    assert copy.device == torch.device("musa:1") and copy.initial_seed() == 3
    assert copy.get_offset() == g.get_offset()
    assert torch.equal(
        torch.randn(4, device="musa:1", generator=copy).cpu(),
        torch.randn(4, device="musa:1", generator=g).cpu(),
    )
    with pytest.raises(RuntimeError, match="Invalid device id: 7"):
        torch.Generator("musa:7")


def test_kaiser_window_on_musa_equals_cpu():
    for args in [(8,), (8, False), (9, True, 5.0)]:
        got = torch.kaiser_window(*args, device="musa")
        assert got.device.type == "musa"
        assert torch.allclose(got.cpu(), torch.kaiser_window(*args))


def test_dropout_draws_from_the_musa_generator():
    # native_dropout has no generator argument; on a device it uses that device's generator, so
    # torch.musa's seed and RNG state decide the mask, whatever the CPU generator does.
    m = torch.musa
    x = torch.ones(64, device="musa", requires_grad=True)
    torch.manual_seed(1)
    m.manual_seed(3)
    a = torch.nn.functional.dropout(x, 0.5)
    torch.manual_seed(2)
    m.manual_seed(3)
    state = m.get_rng_state()
    b = torch.nn.functional.dropout(x, 0.5)
    assert torch.equal(a.detach().cpu(), b.detach().cpu())
    torch.rand(7)  # CPU draws in between change nothing
    m.set_rng_state(state)
    c = torch.nn.functional.dropout(x, 0.5)
    assert torch.equal(a.detach().cpu(), c.detach().cpu())
    assert set(a.detach().cpu().tolist()) == {0.0, 2.0} and a.device.type == "musa"
    c.sum().backward()
    assert torch.equal(x.grad.cpu(), a.detach().cpu())  # d(mask * x * 2)/dx
    out, mask = torch.ops.aten.native_dropout(x.detach(), 0.5, False)
    assert mask.dtype == torch.bool and bool(mask.all()) and torch.equal(out.cpu(), x.cpu())
    out, mask = torch.ops.aten.native_dropout(x.detach(), 1.0, True)
    assert not bool(mask.any()) and float(out.abs().sum()) == 0.0


def test_lazy_conj_and_neg_views_and_copies_like_a_backend():
    # torch_musa has its own copy_; the generic one recursed on conj()/_neg_view() of musa tensors.
    x = torch.randn(5, dtype=torch.complex64)
    m = x.to("musa")
    assert m.conj().is_conj() and torch.equal(m.conj().cpu(), x.conj())
    assert torch.equal(m.conj().resolve_conj().cpu(), x.conj().resolve_conj())
    assert torch.equal(m._neg_view().cpu(), x._neg_view())
    assert torch.allclose(torch.fft.hfft(m).cpu(), torch.fft.hfft(x))
    assert torch.allclose((m.conj() @ m).cpu(), x.conj() @ x)
    y = m.clone()
    y.conj().copy_(m)  # into a conjugate view
    assert torch.equal(y.cpu(), x.conj())
    d = torch.zeros(3, 5, device="musa", dtype=torch.float64)
    d.copy_(torch.arange(5.0))  # broadcast and convert from CPU
    assert d.cpu()[2].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    t = torch.zeros(4, 4, device="musa")
    t[:, 1].copy_(torch.ones(4, device="musa:1"))  # strided view, across devices
    assert t.sum().item() == 4.0 and t[:, 1].cpu().tolist() == [1.0] * 4
    with pytest.raises(RuntimeError, match="expand|size"):
        torch.zeros(3, device="musa").copy_(torch.ones(4))


# ---------------------------------------------------------------- profiler
# torch 2.7 reads a PrivateUse1 backend's kernel times only while it is still named
# "privateuseone": a renamed backend (musa) reports no device time there, on hardware too.
_READS_RENAMED_DEVICE_TIME = 'use_device == "privateuseone"' not in inspect.getsource(
    torch.autograd.profiler.profile._parse_kineto_results
)


@pytest.mark.skipif(
    not _READS_RENAMED_DEVICE_TIME, reason="this torch's profiler drops a renamed backend's times"
)
def test_autograd_profiler_times_device_work_through_the_backend_stubs():
    import warnings

    x = torch.ones(128, 128, device="musa")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "not enabled" complaints from the profiler
        with torch.autograd.profiler.profile(use_device="musa") as prof:
            y = x @ x
            torch.musa.synchronize()
    assert float(y[0, 0]) == 128.0
    assert any(e.name == "aten::mm" for e in prof.function_events)
    total = sum(e.device_time_total for e in prof.key_averages() if e.key == "aten::mm")
    assert 0 < total < 60e6  # microseconds: positive and sane
    assert all(e.cpu_time_total >= 0 for e in prof.key_averages())


# ---------------------------------------------------------------- AMP
def test_autocast_and_grad_scaler():
    a = torch.randn(4, 4, device="musa")
    b = torch.randn(4, 4, device="musa")
    with torch.autocast("musa", dtype=torch.float16):
        assert (a @ b).dtype == torch.float16
        assert torch.exp(a.half()).dtype == torch.float32  # fp32 list
        assert torch.is_autocast_enabled()  # no-arg form means musa in torch_musa
    with torch.musa.amp.autocast(dtype=torch.bfloat16):
        assert (a @ b).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled()
    with pytest.raises(RuntimeError, match="unsafe to autocast"):
        with torch.autocast("musa"):
            torch.nn.functional.binary_cross_entropy(
                torch.rand(2, device="musa"), torch.rand(2, device="musa")
            )
    model = torch.nn.Linear(4, 1).musa()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.musa.amp.GradScaler(init_scale=1024.0)
    with torch.autocast("musa", dtype=torch.float16):
        loss = model(a).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 1024.0
    assert isinstance(scaler, torch.amp.GradScaler)


# ---------------------------------------------------------------- graphs, backends, profiler
def test_graph_capture_and_replay():
    m = torch.musa
    static_in = torch.zeros(4, device="musa")
    g = m.MUSAGraph()
    with m.graph(g):
        static_out = static_in * 3 + 1
    static_in.copy_(torch.arange(4.0))
    g.replay()
    assert static_out.tolist() == [1.0, 4.0, 7.0, 10.0]
    with pytest.raises(TypeError):
        m.graph(cuda_graph=m.MUSAGraph())
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        m.MUSAGraph().replay()


def test_graph_capture_runs_nothing_until_replay():
    # As on a device: captured writes to tensors that existed before (an optimizer step on
    # parameters, in-place updates of static buffers) take effect at each replay, not at capture.
    m = torch.musa
    w = torch.ones(3, device="musa")
    x = torch.full((3,), 2.0, device="musa")
    buf = torch.zeros(2, 3, device="musa")
    g = m.MUSAGraph()
    with m.graph(g):
        w.add_(x)
        y = w * 2
        buf[1].copy_(y)
        torch._foreach_mul_([x], 3.0)
    assert w.tolist() == [1.0] * 3 and x.tolist() == [2.0] * 3 and buf.sum().item() == 0
    g.replay()
    assert w.tolist() == [3.0] * 3 and y.tolist() == [6.0] * 3 and x.tolist() == [6.0] * 3
    assert buf.tolist() == [[0.0] * 3, [6.0] * 3]
    g.replay()
    assert w.tolist() == [9.0] * 3 and y.tolist() == [18.0] * 3 and buf[1].tolist() == [18.0] * 3


def test_mudnn_flag_is_frozen_by_disable_global_flags(py):
    # torch_musa's allow_tf32 is a ContextProp, as cuDNN's flags are: after
    # disable_global_flags() only flags() may change it. In a process of its own, as torch has no
    # undo for the freeze.
    r = py(
        "from torchada import _simulator\n_simulator.activate()\nimport torch, torch_musa\n"
        "m = torch.backends.mudnn\n"
        "m.allow_tf32 = False\n"
        "torch.backends.disable_global_flags()\n"
        "try:\n    m.allow_tf32 = True\nexcept RuntimeError as e:\n    print('refused:', e)\n"
        "with m.flags(allow_tf32=True):\n    print('inside', m.allow_tf32)\n"
        "print('after', m.allow_tf32)\n"
        "with m.flags():\n    pass\n"
        "try:\n    m.set_flags()\nexcept TypeError as e:\n    print('set_flags:', e)\n"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "refused: not allowed to set torch_musa.core.mudnn flags after disable_global_flags; "
        "please use flags() context manager instead",
        "inside True",
        "after False",
        "set_flags: set_flags() missing 1 required positional argument: '_allow_tf32'",
    ]


def test_mudnn_and_profiler_activity(py):
    mudnn = torch.backends.mudnn
    # In this process torchada may be on (muDNN's switch then follows torch's TF32 flag): the
    # default is torch_musa's own, read in a process with the simulator alone.
    r = py(
        "from torchada import _simulator\n_simulator.activate()\nimport torch, torch_musa\n"
        "print(torch.backends.mudnn.allow_tf32)"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "True"
    assert isinstance(mudnn.allow_tf32, bool) and isinstance(mudnn.version(), int)
    with pytest.raises(RuntimeError, match="set_allow_tf32_cublas expects a bool, but got int"):
        mudnn.allow_tf32 = 1
    for missing in ("enabled", "benchmark", "deterministic", "is_available"):
        assert not hasattr(mudnn, missing)
    # torch_musa's class body lists its own names so far: the docstring's.
    assert type(mudnn).__name__ == "MudnnModule" and mudnn.__all__ == ["__doc__"]
    act = torch.profiler.ProfilerActivity
    assert act.MUSA == act.PrivateUse1
    with torch.profiler.profile(activities=[act.CPU, act.MUSA]) as prof:
        torch.ones(3, device="musa").sum()
    assert prof.key_averages() is not None
    assert torch.musa.mccl.version() == (2, 11, 4)
    assert torch.musa.musart().musaError.success == 0
