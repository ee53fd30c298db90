"""torch.accelerator on MUSA: every public name, checked by what it does."""

from __future__ import annotations

import collections

import pytest
import torch

import torchada
from torchada._torch import accelerator as _accelerator

pytestmark = pytest.mark.usefixtures("torchada_on")


@pytest.fixture(autouse=True)
def device_zero():
    torch.accelerator.set_device_index(0)
    yield
    torch.accelerator.set_device_index(0)


def _musa(index=0):
    return torch.device("musa", index)


def check_current_accelerator():
    acc = torch.accelerator.current_accelerator()
    assert acc == torch.device("musa") and acc.type == "musa"
    assert torch.accelerator.current_accelerator(check_available=True).type == "musa"


def check_device_count():
    assert torch.accelerator.device_count() == torch.musa.device_count() == 2


def check_is_available():
    assert torch.accelerator.is_available() is True


def check_current_device_index():
    assert torch.accelerator.current_device_index() == 0
    torch.musa.set_device(1)
    assert torch.accelerator.current_device_index() == 1


def check_current_device_idx():
    with pytest.warns(FutureWarning, match="current_device_index"):
        assert torch.accelerator.current_device_idx() == 0


def check_set_device_index():
    torch.accelerator.set_device_index(1)
    assert torch.musa.current_device() == 1
    assert torch.empty(1, device="musa").device == _musa(1)
    torch.accelerator.set_device_index("cuda:0")  # a CUDA spelling means the musa device
    assert torch.musa.current_device() == 0
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        torch.accelerator.set_device_index("cpu")


def check_set_device_idx():
    with pytest.warns(FutureWarning, match="set_device_index"):
        torch.accelerator.set_device_idx(1)
    assert torch.musa.current_device() == 1


def check_current_stream():
    stream = torch.accelerator.current_stream()
    assert stream.device == _musa(0)
    assert stream.stream_id == torch.musa.current_stream().stream_id
    assert torch.accelerator.current_stream("cuda:1").device == _musa(1)


def check_set_stream():
    s = torch.musa.Stream()
    torch.accelerator.set_stream(s)
    try:
        assert torch.musa.current_stream() == s
        assert torch.accelerator.current_stream().stream_id == s.stream_id
    finally:
        torch.accelerator.set_stream(torch.musa.default_stream())


def check_synchronize():
    x = torch.randn(64, device="musa") * 2
    torch.accelerator.synchronize()
    torch.accelerator.synchronize(1)
    torch.accelerator.synchronize("cuda:1")
    torch.accelerator.synchronize(_musa(0))
    assert x.device == _musa(0)


def check_device_index():
    with torch.accelerator.device_index(1):
        assert torch.musa.current_device() == 1
        assert torch.empty(1, device="musa").device == _musa(1)
    assert torch.musa.current_device() == 0
    with torch.accelerator.device_index(None):
        assert torch.musa.current_device() == 0


def check_get_device_capability():
    cap = torch.accelerator.get_device_capability()
    dtypes = cap["supported_dtypes"]
    assert {torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool} <= dtypes
    assert torch.qint8 not in dtypes  # not allocatable on musa
    assert torch.accelerator.get_device_capability("cuda:1") == cap


def check_empty_cache():
    x = torch.empty(1 << 20, device="musa")
    del x
    torch.accelerator.empty_cache()
    assert torch.accelerator.memory_allocated() == torch.musa.memory_allocated()


def check_empty_host_cache():
    pinned = torch.empty(16).pin_memory()
    del pinned
    torch.accelerator.empty_host_cache()  # no crash; nothing to release on MUSA


def check_memory_allocated():
    before = torch.accelerator.memory_allocated()
    x = torch.empty(1 << 16, dtype=torch.uint8, device="musa")
    assert torch.accelerator.memory_allocated() == before + (1 << 16)
    assert torch.accelerator.memory_allocated(0) == torch.musa.memory_allocated(0)
    y = torch.empty(1 << 10, dtype=torch.uint8, device="musa:1")
    assert torch.accelerator.memory_allocated("cuda:1") == torch.musa.memory_allocated(1) >= 1024
    del x, y


def check_max_memory_allocated():
    torch.accelerator.reset_peak_memory_stats()
    x = torch.empty(1 << 18, dtype=torch.uint8, device="musa")
    peak = torch.accelerator.max_memory_allocated()
    del x
    assert peak >= 1 << 18 and torch.accelerator.max_memory_allocated() == peak
    assert peak == torch.musa.max_memory_allocated()


def check_memory_reserved():
    assert torch.accelerator.memory_reserved() == torch.musa.memory_reserved()
    assert torch.accelerator.memory_reserved(_musa(0)) >= torch.accelerator.memory_allocated()


def check_max_memory_reserved():
    assert torch.accelerator.max_memory_reserved() == torch.musa.max_memory_reserved()
    assert torch.accelerator.max_memory_reserved() >= torch.accelerator.memory_reserved()


def check_memory_stats():
    x = torch.empty(100, device="musa")
    stats = torch.accelerator.memory_stats()
    assert isinstance(stats, collections.OrderedDict)
    assert stats["allocated_bytes.all.current"] == torch.accelerator.memory_allocated()
    assert list(stats) == sorted(stats)
    assert torch.accelerator.memory_stats("cuda:0") == stats
    del x


def check_reset_peak_memory_stats():
    x = torch.empty(1 << 18, dtype=torch.uint8, device="musa")
    del x
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == torch.accelerator.memory_allocated()


def check_reset_accumulated_memory_stats():
    torch.empty(10, device="musa")
    assert torch.accelerator.memory_stats()["allocation.all.allocated"] > 0
    torch.accelerator.reset_accumulated_memory_stats()
    assert torch.accelerator.memory_stats()["allocation.all.allocated"] == 0


def check_get_memory_info():
    free, total = torch.accelerator.get_memory_info()
    assert (free, total) == torch.musa.mem_get_info(0)
    assert 0 < free <= total
    assert torch.accelerator.get_memory_info("cuda:1")[1] == torch.musa.mem_get_info(1)[1]


def check_Graph():
    x = torch.zeros(4, device="musa")
    graph = torch.accelerator.Graph()
    assert isinstance(graph, torch.accelerator.Graph)
    with torch.musa.stream(torch.musa.Stream()), graph:
        y = x * 2 + 1
    x.fill_(3.0)
    graph.replay()
    assert y.tolist() == [7.0] * 4
    shared = torch.accelerator.Graph(
        keep_graph=True, pool=graph.pool(), capture_error_mode="thread_local"
    )
    shared.capture_begin()
    z = x - 1
    shared.capture_end()
    shared.instantiate()
    x.fill_(10.0)
    shared.replay()
    assert z.tolist() == [9.0] * 4 and shared.pool() == graph.pool()
    shared.reset()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        shared.replay()


CHECKS = {name[len("check_") :]: fn for name, fn in globals().items() if name.startswith("check_")}


def _public_names():
    names = set(torch.accelerator.__all__)
    for sub in ("memory", "graphs"):  # not in every torch (2.7 has neither)
        names.update(getattr(getattr(torch.accelerator, sub, None), "__all__", ()))
    return sorted(names)


def test_every_public_name_is_checked():
    missing = set(_public_names()) - set(CHECKS)
    assert not missing, f"torch.accelerator names without a MUSA check: {sorted(missing)}"


@pytest.mark.parametrize("name", _public_names())
def test_public_name(name):
    if name not in CHECKS:
        pytest.fail(f"torch.accelerator.{name} is not handled by torchada's tests")
    CHECKS[name]()


def test_memory_module_names_are_served_too():
    memory = getattr(torch.accelerator, "memory", None)
    if memory is None:
        # A torch without the memory API: torchada serves only what this torch has.
        served = set(_accelerator.SERVED) & set(dir(torch.accelerator))
        assert served <= set(torch.accelerator.__all__)
        return
    for name in memory.__all__:
        assert getattr(memory, name) is getattr(torch.accelerator, name)


def test_disable_restores_accelerator():
    torchada.disable()
    try:
        for name in ("memory_allocated", "empty_cache", "get_device_capability"):
            if hasattr(torch.accelerator, name):  # not in every torch (2.7 has none)
                assert getattr(torch.accelerator, name).__module__.startswith("torch.accelerator")
        if hasattr(torch.accelerator, "Graph"):
            assert torch.accelerator.Graph.__module__ == "torch.accelerator.graphs"
        with pytest.raises(ValueError, match="cuda doesn't match the current accelerator"):
            torch.accelerator.synchronize("cuda:0")
        if hasattr(torch.accelerator, "memory_allocated"):
            from torchada._core.musa_release import release

            if release() == "2.11.0.post2":  # its allocator serves torch's generic path
                assert torch.accelerator.memory_allocated() == torch.musa.memory_allocated()
            else:
                with pytest.raises(RuntimeError, match="not a DeviceAllocator"):
                    torch.accelerator.memory_allocated()  # torch's generic path, no torchada
    finally:
        assert torchada.enable()
