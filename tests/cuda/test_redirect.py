"""torch.cuda on MUSA through torchada: every public name, by the registry's class."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

import pytest
import torch

from torchada._cuda import device_args as _device_args
from torchada._cuda.redirect import UnsupportedCUDAAPIError, load_table

TABLE = load_table()


pytestmark = pytest.mark.usefixtures("torchada_on")


def _original(module_name: str):
    module = importlib.import_module(module_name)
    return module.__dict__.get("__torchada_original__") or module


def _lacks(module_name: str, name: str) -> bool:
    """Whether ``name`` is one of the registry's names of a newer torch that this torch lacks
    (an unsupported name, or a submodule such as torch.cuda.green_contexts before 2.10)."""
    entry = TABLE[module_name]["names"].get(name)
    if entry is None:
        return False
    if entry["kind"] == "submodule":
        return importlib.util.find_spec(entry["module"]) is None
    return entry["kind"] == "unsupported" and not hasattr(_original(module_name), name)


def _public_names(absent: bool = False):
    for module_name in TABLE:
        if importlib.util.find_spec(module_name) is None:
            continue  # a module this torch lacks (torch.cuda.green_contexts before 2.10)
        original = _original(module_name)
        names = set(getattr(original, "__all__", None) or ())
        names.update(TABLE[module_name]["names"])
        for name in sorted(names):
            if _lacks(module_name, name) == absent:
                yield module_name, name


PUBLIC = list(_public_names())
ABSENT = list(_public_names(absent=True))


def test_registry_covers_torch_cuda_all():
    assert len(PUBLIC) > 150
    cuda_all = set(_original("torch.cuda").__all__)
    assert {n for m, n in PUBLIC if m == "torch.cuda"} >= cuda_all


@pytest.mark.parametrize("module_name,name", PUBLIC, ids=[f"{m}.{n}" for m, n in PUBLIC])
def test_every_public_name_resolves_by_its_class(module_name, name):
    proxy = importlib.import_module(module_name)
    entry = TABLE[module_name]["names"].get(name)
    target_name = TABLE[module_name]["target"]
    if entry is None and target_name is None:
        entry = {"kind": "unsupported"}
    kind = entry["kind"] if entry else "same"
    value = getattr(proxy, name)
    # Names that take a device come wrapped so that CUDA spellings work
    # (tests/cuda/test_device_args.py); the wrapper names what it wraps. No other name is wrapped.
    takes_device = name in _device_args.table().get(module_name, ())
    assert hasattr(value, "__torchada_wrapped__") == (takes_device and not isinstance(value, type))
    exposed, value = value, getattr(value, "__torchada_wrapped__", value)
    target = None
    if target_name == "@original":
        target = _original(module_name)
    elif target_name is not None:
        target = importlib.import_module(target_name)
    if kind == "same":
        assert value is getattr(target, name)
    elif kind == "renamed":
        to = entry["to"]
        if ":" in to:
            mod, _, attr = to.partition(":")
            expected = getattr(importlib.import_module(mod), attr)
        else:
            expected = getattr(target, to)
        assert value is expected
    elif kind == "submodule":
        assert value is sys.modules[entry["module"]]
        assert isinstance(value, types.ModuleType)
    elif kind == "original":
        assert value is getattr(_original(module_name), name)
    elif kind == "unsupported":
        with pytest.raises(UnsupportedCUDAAPIError) as err:
            value()
        text = str(err.value)
        assert f"{module_name}.{name} is unsupported on MUSA" in text and "Instead," in text
    else:
        assert kind == "filled" and value is not None
    # `from module import name` agrees with attribute access.
    ns: dict = {}
    exec(f"from {module_name} import {name} as v", ns)
    assert ns["v"] is exposed


def test_names_this_torch_lacks_are_absent():
    # As on CUDA with the same torch: torchada adds no API that this torch lacks (the newest
    # torch has every name of the registry, so there this checks nothing).
    for module_name, name in ABSENT:
        proxy = importlib.import_module(module_name)
        with pytest.raises(AttributeError, match=name):
            getattr(proxy, name)
        assert name not in dir(proxy)
        with pytest.raises(ImportError):
            exec(f"from {module_name} import {name}", {})


def test_identity_between_import_forms():
    import torch.cuda.amp as amp1
    from torch.cuda import Stream
    from torch.cuda import amp as amp2

    assert torch.cuda is sys.modules["torch.cuda"]
    assert amp1 is amp2 is torch.cuda.amp is sys.modules["torch.cuda.amp"]
    assert Stream is torch.cuda.Stream is torch.musa.Stream
    assert type(torch.cuda) is types.ModuleType  # sealed: plain-module attribute speed
    assert torch.cuda.__spec__.name == "torch.cuda" and torch.cuda.__name__ == "torch.cuda"
    assert importlib.reload(torch.cuda) is torch.cuda


def _cuda_program_asks() -> bool:
    # As a CUDA program asks: from a function that does not ask about MUSA itself.
    return torch.cuda.is_available()


def test_is_available_answers_for_musa_and_device_api():
    # The GPU a CUDA program can use is there (unless TORCHADA_FORCE_CUDA_AVAILABLE=0 asks for
    # the published answer, as one CI step does).
    from torchada._cuda.available import answers_for_musa

    assert _cuda_program_asks() is answers_for_musa()
    assert torch.cuda.device_count() == torch.musa.device_count() == 2
    assert torch.cuda.device_count is torch.musa.device_count
    assert torch.cuda.get_device_name(0) == "MTT S4000"
    assert torch.cuda._lazy_init is torch.musa._lazy_init
    assert torch.cuda.CUDAGraph is torch.musa.MUSAGraph


@pytest.mark.parametrize("value, answer", [("1", True), ("0", False), ("off", False)])
def test_force_cuda_available_switch(py, value, answer):
    r = py(
        "import torch, torchada; print(torch.cuda.is_available(), torch.musa.is_available())",
        env={"TORCHADA_SIMULATE": "1", "TORCHADA_FORCE_CUDA_AVAILABLE": value},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == f"{answer} True"


def test_filled_names_behave():
    c = torch.cuda
    assert c.get_gencode_flags() == "--offload-arch=mp_22"
    assert c.has_half is True and c.has_magma is False
    assert len(c.default_generators) == 2
    assert c.memory_cached() == torch.musa.memory_reserved()
    c.set_per_process_memory_fraction(0.5, 1)
    assert c.get_per_process_memory_fraction(1) == 0.5
    c.set_per_process_memory_fraction(1.0, 1)
    assert c.get_sync_debug_mode() == 0
    with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
        c.set_sync_debug_mode("loud")
    if hasattr(torch.musa, "set_sync_debug_mode"):
        # 2.11.0.post2 binds torch's synchronisation debug mode: torchada gets out of its way.
        c.set_sync_debug_mode("warn")
        assert c.get_sync_debug_mode() == 1
        c.set_sync_debug_mode(0)
    else:
        with pytest.warns(UserWarning, match="no synchronisation debug mode"):
            c.set_sync_debug_mode("warn")
    before = torch.musa.memory_allocated(0)
    ptr = c.caching_allocator_alloc(4096, 0)
    assert torch.musa.memory_allocated(0) == before + 4096
    c.caching_allocator_delete(ptr)
    assert torch.musa.memory_allocated(0) == before
    ext = c.get_stream_from_external(77, 0)
    assert ext.musa_stream == 77 and ext.cuda_stream == 77
    free, total = c.cudart().cudaMemGetInfo(0)
    assert total == 48 << 30
    with pytest.raises(AttributeError, match="cudaProfilerStart is unsupported on MUSA"):
        c.cudart().cudaProfilerStart
    assert c.nvtx.range_push("a") == 0 and c.nvtx.range_pop() == 0
    with c.nvtx.range("step {}", 1):
        pass
    assert c.nccl.version() == torch.musa.mccl.version()
    assert isinstance(c.memory.CUDAPluggableAllocator, type)


def test_graph_keyword_and_capture():
    g = torch.cuda.CUDAGraph()
    x = torch.zeros(3, device="musa")
    with torch.cuda.graph(cuda_graph=g):
        y = x + 2
    x.fill_(1.0)
    g.replay()
    assert y.tolist() == [3.0, 3.0, 3.0]
    with pytest.raises(TypeError, match="missing required argument: 'cuda_graph'"):
        torch.cuda.graph()
    with pytest.warns(UserWarning, match="pool argument is ignored"):
        f = torch.cuda.make_graphed_callables(lambda t: t * 2, (x,), pool=(0, 1))
    assert f(x).tolist() == [2.0, 2.0, 2.0]


def test_unsupported_class_and_module():
    if hasattr(_original("torch.cuda"), "GreenContext"):
        with pytest.raises(UnsupportedCUDAAPIError, match="green contexts"):
            torch.cuda.GreenContext()
        assert not isinstance(object(), torch.cuda.GreenContext)
    else:  # this torch has no green contexts on CUDA either
        with pytest.raises(AttributeError, match="GreenContext"):
            torch.cuda.GreenContext
    # A module unsupported as a whole: its own classes cannot be made (defining a jiterator
    # function is a row of its own: tests/cuda/test_torch_c_bindings.py).
    with pytest.raises(UnsupportedCUDAAPIError, match="NVRTC"):
        torch.cuda.jiterator._JittedFunction("template <typename T> T f(T x) { return x; }")


def test_unknown_names_fail_like_plain_torch():
    with pytest.raises(AttributeError, match="torch.cuda"):
        torch.cuda.no_such_function
    with pytest.raises(ImportError):
        exec("from torch.cuda import no_such_function", {})


def test_stream_attributes_renamed():
    s = torch.cuda.Stream()
    assert s.cuda_stream == s.musa_stream != 0
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    assert e.cuda_event == e.musa_event


def test_threads_see_one_object():
    import threading

    seen = []
    barrier = threading.Barrier(8)

    def worker():
        barrier.wait()
        seen.append(torch.cuda.memory.memory_allocated)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 8 and all(s is seen[0] for s in seen)


def test_docs_table_is_generated_from_the_registry():
    import os

    from torchada._cuda.registry_docs import render_cuda_table

    path = os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        "docs",
        "torch_cuda_names.md",
    )
    with open(path, encoding="utf-8") as fh:
        assert fh.read() == render_cuda_table(), "run: python -m torchada tables"
