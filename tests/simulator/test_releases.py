"""The simulated torch_musa releases (TORCHADA_SIM_RELEASE): each one's version gate, graph
semantics and C++ layout, numeric defects, accelerator allocator, extension macros and names, as
torchada/_simulator/releases.json and the release's own source say.

Each release runs in a fresh process (a process simulates one release for good).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from conftest import SIM_RELEASES as RELEASES
from conftest import run_python

from torchada._simulator import native, releases


def _older_torch(release: str) -> bool:
    """Whether the installed torch is older than ``release`` accepts (2.11.0.post2 on 2.9.1)."""
    import torch
    from torch._vendor.packaging.version import Version

    minimum = releases.facts(release)["torch_minimum"]
    return Version(Version(torch.__version__).base_version) < Version(minimum)


def _run(code: str, release: str, refused_here: bool = True, **env: str) -> "dict | None":
    """``code``'s last line of output, as JSON, run on ``release``; None where the installed torch
    is older than the release accepts, after checking that the import is refused so (unless
    ``refused_here`` is False: ``code`` handles the refusal itself)."""
    r = run_python(code, env={"TORCHADA_ACTIVE": "0", releases.SWITCH: release, **env})
    if refused_here and _older_torch(release):
        minimum = releases.facts(release)["torch_minimum"]
        assert r.returncode != 0
        assert f"torch version must not be less than v{minimum} when using torch_musa" in r.stderr
        return None
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_default_follows_the_installed_torch():
    assert releases.default_for("2.9.1+cu128") == "2.9.1.post1"
    assert releases.default_for("2.9.1.post1+musa5.2.0") == "2.9.1.post1"
    assert releases.default_for("2.11.0") == "2.11.0.post2"
    assert releases.default_for("2.7.1+cu126") == "2.7.1"
    assert releases.default_for("2.13.0+cpu") == "2.7.1"
    assert releases.resolve({}, torch_version="2.11.0+cpu") == "2.11.0.post2"
    assert releases.resolve({releases.SWITCH: " 2.9.1.post1 "}) == "2.9.1.post1"


def test_a_release_the_simulator_lacks_is_refused_by_name():
    with pytest.raises(ValueError) as e:
        releases.resolve({releases.SWITCH: "2.10.0"})
    message = str(e.value)
    assert "TORCHADA_SIM_RELEASE='2.10.0'" in message
    assert all(repr(r) in message for r in RELEASES)
    r = run_python(
        "import torch\nfrom torchada import _simulator\n_simulator.activate()",
        env={"TORCHADA_ACTIVE": "0", releases.SWITCH: "2.9"},
    )
    assert r.returncode != 0 and "TORCHADA_SIM_RELEASE='2.9' is not valid" in r.stderr


def test_the_switch_declares_exactly_the_modelled_releases():
    from torchada._core.env import switches

    (entry,) = [s for s in switches() if s.name == releases.SWITCH]
    assert sorted(entry.choices) == sorted(releases.table()["releases"]) == sorted(RELEASES)


GATE = """
import json, warnings, torch
from torchada import _simulator
if {version!r}:
    torch.__version__ = {version!r}  # only for the refusal, which comes before anything is built
out = {{}}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        m = _simulator.activate()
        out["version"] = m.__version__
    except RuntimeError as e:
        out["error"] = list(e.args)
out["warnings"] = [str(w.message) for w in caught if w.category is UserWarning
                   and "torch version" in str(w.message)]
print(json.dumps(out))
"""


@pytest.mark.parametrize("release", ["2.9.1.post1", "2.11.0.post2"])
def test_a_torch_older_than_the_releases_is_refused(release):
    out = _run(GATE.format(version="2.8.0"), release, refused_here=False)
    minimum = releases.facts(release)["torch_minimum"]
    assert out["error"] == [
        f"torch version must not be less than v{minimum} when using torch_musa,",
        " but now torch version is 2.8.0",
    ]


@pytest.mark.parametrize("release", RELEASES)
def test_each_release_warns_on_a_torch_it_does_not_pair_with(release):
    import torch

    out = _run(GATE.format(version=""), release, refused_here=False)
    expected = releases.facts(release)["torch_expected"]
    if _older_torch(release):
        assert "error" in out  # e.g. 2.11.0.post2 on torch 2.9.1
        return
    assert out["version"] == f"{release}+0000000"
    if expected in torch.__version__:
        assert out["warnings"] == []  # the paired torch (2.11.0.post2 on 2.11.0, ...)
    else:
        assert out["warnings"] == [
            f"torch version should be v{expected} when using torch_musa, but now torch version "
            f"is {torch.__version__}"
        ]


GRAPHS = """
import ctypes, json, torch
from torchada import _simulator
from torchada._simulator import releases
m = _simulator.activate()
layout = releases.graph_layout(m.__version__.split("+")[0])

def members(g):
    address = ctypes.c_void_p.from_address(id(g) + object.__basicsize__).value
    return {name: ctypes.c_ubyte.from_address(address + layout[name]).value
            for name in ("has_graph_", "capture_ended_", "has_graph_exec_") if name in layout}

def errors(fn):
    try:
        fn()
    except RuntimeError as e:
        return str(e).splitlines()[0]
    return None

out = {}
s = m.Stream()
y = torch.zeros(3, device="musa")
g = m.MUSAGraph()
with m.stream(s):
    g.capture_begin(); y.add_(1); g.capture_end()
out["captured"] = members(g)
g.replay(); g.replay()
out["after_replays"] = y.tolist()
out["methods"] = sorted(n for n in ("instantiate", "raw_musa_graph", "raw_musa_graph_exec")
                        if hasattr(g, n))
if out["methods"]:
    k = m.MUSAGraph(keep_graph=True)
    with m.stream(s):
        k.capture_begin(); y.mul_(2); k.capture_end()
    out["kept"] = members(k)
    out["exec_before"] = errors(k.raw_musa_graph_exec)
    out["graph_handle"] = k.raw_musa_graph() != 0
    k.replay()  # instantiates first
    out["after_kept"] = y.tolist()
    out["exec_after"] = k.raw_musa_graph_exec() != 0
    out["reinstantiate"] = errors(k.instantiate)
    out["raw_graph_unkept"] = errors(g.raw_musa_graph)
    released = m._MUSAC._sim_graph_pools_released()
    k.reset()
    out["pools_released"] = m._MUSAC._sim_graph_pools_released() - released
    out["after_reset"] = members(k)
    out["replay_after_reset"] = errors(k.replay)
    out["pool_after_reset"] = errors(k.pool)
    out["handle_type"] = type(m.graph_pool_handle()).__name__
    out["pool_handle_name"] = m._POOL_HANDLE.__name__
import inspect
out["graphed_params"] = list(inspect.signature(m.make_graphed_callables).parameters)
print(json.dumps(out))
"""


@pytest.mark.parametrize("release", RELEASES)
def test_graph_semantics_and_layout_are_the_releases(release):
    out = _run(GRAPHS, release)
    if out is None:
        return  # refused: the installed torch is older than the release accepts
    assert out["after_replays"] == [2.0, 2.0, 2.0]
    if release == "2.7.1":
        assert out["captured"] == {"has_graph_": 1, "has_graph_exec_": 1}
        assert out["methods"] == []
        assert "pool" not in out["graphed_params"]
        return
    assert out["captured"] == {"has_graph_": 1, "capture_ended_": 1, "has_graph_exec_": 1}
    assert out["methods"] == ["instantiate", "raw_musa_graph", "raw_musa_graph_exec"]
    # keep_graph: capture_end leaves the graph uninstantiated; replay instantiates it.
    assert out["kept"] == {"has_graph_": 1, "capture_ended_": 1, "has_graph_exec_": 0}
    assert out["exec_before"] == (
        "You cannot access the raw musaGraphExec_t instance until instantiate() has been called"
    )
    assert out["graph_handle"] and out["exec_after"]
    assert out["after_kept"] == [4.0, 4.0, 4.0]
    assert out["reinstantiate"] is None  # allowed again with keep_graph=True
    assert out["raw_graph_unkept"].startswith(
        "You cannot access the raw musaGraph_t instance unless MUSAGraph was initialized with "
        "keep_graph=true"
    )
    # reset() hands the private pool back and clears every flag.
    assert out["pools_released"] == 1
    assert out["after_reset"] == {"has_graph_": 0, "capture_ended_": 0, "has_graph_exec_": 0}
    assert out["replay_after_reset"].startswith(
        "Called MUSAGraph::replay without a preceding successful capture."
    )
    assert out["pool_after_reset"].startswith(
        "Called MUSAGraph::pool() without a preceding successful capture."
    )
    assert out["handle_type"] == "tuple" and out["pool_handle_name"] == "_POOL_HANDLE"
    assert out["graphed_params"][-1] == "pool"


PROBE = r"""
#include "torch_musa/csrc/aten/musa/MUSAGraph.h"
#include <cstddef>
struct Probe : at::musa::MUSAGraph {
  static void check() {
%s
  }
};
"""


@pytest.mark.parametrize("layout", ["2.7.1", "2.9.1.post1"])
def test_installed_header_declares_the_releases_layout(layout):
    compiler = shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        pytest.skip("no C++ compiler on this machine")
    import sysconfig

    from torch.utils import cpp_extension

    offsets = releases.table()["graph_layouts"][layout]
    checks = "\n".join(
        f'    static_assert(offsetof(Probe, {name}) == {offset}, "{name}");'
        for name, offset in offsets.items()
    )
    includes = [
        *cpp_extension.include_paths(),
        sysconfig.get_paths()["include"],
        str(native.csrc_dir() / "simulator" / "include_releases" / layout),
        str(native.include_dir()),
    ]
    r = subprocess.run(
        [compiler, "-std=c++17", "-fsyntax-only", "-w", "-x", "c++", "-"]
        + [f"-I{p}" for p in includes],
        input=PROBE % checks,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-3000:]


NUMERICS = """
import json, torch
from torchada import _simulator
m = _simulator.activate()
out = {}
a = torch.randn(4, 8, device="musa", dtype=torch.float16)
b = torch.randn(8, 3, device="musa", dtype=torch.float16)
out["plain_mm"] = torch.allclose(torch.mm(a, b).float(), a.float() @ b.float(), atol=1e-2)
try:
    r = torch.mm(a, b, out_dtype=torch.float32)
    out["mm"] = [r.dtype == torch.float32, r.abs().sum().item()]
    o = torch.full((4, 3), 5.0, device="musa")
    torch.mm(a, b, out_dtype=torch.float32, out=o)
    out["mm_out"] = o.unique().tolist()
    A = torch.randn(2, 4, 8, device="musa", dtype=torch.bfloat16)
    B = torch.randn(2, 8, 3, device="musa", dtype=torch.bfloat16)
    o = torch.full((2, 4, 3), 7.0, device="musa")
    torch.bmm(A, B, out_dtype=torch.float32, out=o)
    out["bmm_out"] = o.unique().tolist()
    try:
        torch.mm(a, b, out_dtype=torch.float64)
    except RuntimeError as e:
        out["bad_dtype"] = str(e).splitlines()[0]
except (RuntimeError, NotImplementedError, TypeError) as e:
    out["mm"] = "unsupported"
acc = {}
x = torch.ones(256, device="musa")
try:
    acc["allocated"] = torch.accelerator.memory_allocated()
    acc["info"] = list(torch.accelerator.get_memory_info()) if hasattr(
        torch.accelerator, "get_memory_info") else None
except AttributeError:
    acc = "no accelerator memory API"
except RuntimeError as e:
    acc = str(e).splitlines()[0][-60:]
out["accelerator"] = acc
out["native_allocated"] = m.memory_allocated()
print(json.dumps(out))
"""


@pytest.mark.parametrize("release", RELEASES)
def test_numeric_defects_and_accelerator_memory_are_the_releases(release):
    import torch

    out = _run(NUMERICS, release)
    if out is None:
        return  # refused: the installed torch is older than the release accepts
    assert out["plain_mm"] is True
    if release != "2.7.1" and hasattr(torch.ops.aten.mm, "dtype"):
        # Matmul.cpp: mm's out_dtype path runs with alpha 0 (zeros), bmm's swaps alpha and beta
        # (the output buffer as it was).
        assert out["mm"] == [True, 0.0]
        assert out["mm_out"] == [0.0]
        assert out["bmm_out"] == [7.0]
        assert out["bad_dtype"] == (
            "out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs"
        )
    elif out["mm"] != "unsupported":
        # Without the defect the out_dtype matmul is torch's own: the product, never zeros.
        assert out["mm"][1] > 0
    has_accelerator_memory = hasattr(torch.accelerator, "memory_allocated")
    if not has_accelerator_memory:
        assert out["accelerator"] == "no accelerator memory API"
    elif release == "2.11.0.post2":
        assert out["accelerator"]["allocated"] == out["native_allocated"] >= 256 * 4
        if out["accelerator"]["info"] is not None:
            free, total = out["accelerator"]["info"]
            assert total == 48 << 30 and free == total - out["native_allocated"]
    else:
        assert out["accelerator"].endswith("Allocator for musa is not a DeviceAllocator.")


NAMES = """
import inspect, json, os, torch
from torchada import _simulator
m = _simulator.activate()
names = ["get_stream_from_external", "get_gencode_flags", "set_sync_debug_mode",
         "get_sync_debug_mode", "AcceleratorError", "MemPoolContext", "_dump_snapshot",
         "_record_memory_history", "memory_stats_all", "caching_allocator_alloc",
         "host_memory_stats", "memory_cached", "list_gpu_processes", "_POOL_HANDLE",
         "align_rng_to_nv_gpu", "NV_GPU_REGISTRY"]
out = {"present": sorted(n for n in names if hasattr(m, n))}
out["backends_musa"] = hasattr(torch.backends, "musa") and torch.backends.musa is m.core.musa
out["backends_matmul"] = hasattr(getattr(torch.backends, "musa", None), "matmul")
out["memory_module_keeps"] = hasattr(m.memory, "_record_memory_history")
out["memory_dump_snapshot"] = hasattr(m.memory, "_dump_snapshot")
out["mempool"] = list(inspect.signature(m.MemPool).parameters)
out["event"] = list(inspect.signature(m.Event).parameters)
out["properties_default"] = inspect.signature(m.get_device_properties).parameters[
    "device"].default is None
out["initialized_before"] = m._initialized
torch.ones(1, device="musa")
out["initialized_after"] = m._initialized
p = m.get_device_properties(0)
out["uuid"] = str(p.uuid) if hasattr(p, "uuid") else None
out["pci"] = [getattr(p, n, None) for n in ("pci_bus_id", "pci_device_id", "pci_domain_id")]
if hasattr(m, "set_sync_debug_mode"):
    m.set_sync_debug_mode("warn")
    out["sync_debug"] = m.get_sync_debug_mode()
    out["gencode"] = m.get_gencode_flags()
out["rng_env"] = [os.environ.get("TORCH_ARCH_MP_COUNT"), os.environ.get(
    "TORCH_ARCH_MAXTHREADS_PER_MP")]
if hasattr(m, "get_stream_from_external"):
    s = m.get_stream_from_external(1234)
    out["external"] = [type(s).__name__, s.musa_stream if hasattr(s, "musa_stream") else None]
from torchada._simulator import extension_support
ext = m.MUSAExtension("x", ["x.cpp"])
out["macros"] = sorted(name for name, _ in (ext.define_macros or []))
print(json.dumps(out))
"""


@pytest.mark.parametrize("release", RELEASES)
def test_names_are_the_releases(release):
    out = _run(NAMES, release, TORCH_RNG_ALIGN="h100-pcie")
    if out is None:
        return  # refused: the installed torch is older than the release accepts
    present = set(out["present"])
    if release == "2.7.1":
        assert present == {
            "MemPoolContext",
            "_dump_snapshot",
            "_record_memory_history",
            "memory_stats_all",
        }
        assert out["backends_musa"] is False
        assert out["mempool"] == ["allocator"]
        assert out["event"] == ["enable_timing", "blocking", "interprocess"]
        assert out["properties_default"] is False
        assert out["uuid"] is None
        assert out["rng_env"] == [None, None]  # 2.7.1 reads no TORCH_RNG_ALIGN
        assert out["macros"] == []
        return
    # Both later releases.
    assert {
        "get_stream_from_external",
        "caching_allocator_alloc",
        "host_memory_stats",
        "memory_cached",
        "list_gpu_processes",
        "_POOL_HANDLE",
        "align_rng_to_nv_gpu",
        "NV_GPU_REGISTRY",
    } <= present
    # No longer re-exported at the top level; 2.11.0.post2 also drops _dump_snapshot itself.
    assert not present & {"_record_memory_history", "memory_stats_all", "_dump_snapshot"}
    assert out["memory_module_keeps"] is True
    assert out["backends_musa"] is True and out["backends_matmul"] is False
    assert out["event"] == ["enable_timing", "blocking", "interprocess", "external"]
    assert out["rng_env"] == ["114", "2048"]
    assert out["external"][0] == "ExternalStream"
    assert out["macros"] == ["MUSA_COMP_VERSION", "MUSPARSE_VERSION", "REAL_MUSA_VERSION"]
    if release == "2.9.1.post1":
        assert "MemPoolContext" in present and out["memory_dump_snapshot"] is True
        assert not present & {"get_gencode_flags", "set_sync_debug_mode", "AcceleratorError"}
        assert out["mempool"] == ["allocator", "use_on_oom"]
        assert out["properties_default"] is False
        assert out["initialized_after"] is False  # a copy, as real's
        assert out["uuid"] is None and out["pci"] == [None, None, None]
    else:
        assert {
            "get_gencode_flags",
            "set_sync_debug_mode",
            "get_sync_debug_mode",
            "AcceleratorError",
        } <= present
        assert "MemPoolContext" not in present and out["memory_dump_snapshot"] is False
        assert out["mempool"] == ["allocator", "use_on_oom", "no_split"]
        assert out["properties_default"] is True
        assert out["initialized_before"] is False and out["initialized_after"] is True
        assert out["uuid"].startswith("4d545453-") and out["pci"] == [16, 0, 0]
        assert out["sync_debug"] == 1 and out["gencode"] == "--offload-arch=mp_22"


def test_an_unknown_rng_alignment_fails_the_import():
    r = run_python(
        "import torch\nfrom torchada import _simulator\n_simulator.activate()",
        env={"TORCHADA_ACTIVE": "0", releases.SWITCH: "2.9.1.post1", "TORCH_RNG_ALIGN": "X1"},
    )
    assert r.returncode != 0
    if _older_torch("2.9.1.post1"):  # the version gate comes first, as in real's __init__
        assert "torch version must not be less than v2.9.1" in r.stderr
        return
    assert "ValueError: Unknown NV GPU 'X1'. Available: A100, A800, B200, H100" in r.stderr


def test_extensions_refuse_to_build_without_the_version_file(tmp_path):
    from torchada._simulator import extension_support

    with pytest.raises(RuntimeError, match="^Missing MUSA version macro: MUSA_COMP_VERSION$"):
        extension_support.musa_version_macros(str(tmp_path))
    (tmp_path / "share").mkdir()
    (tmp_path / "share" / "musa_versions.json").write_text('{"MUSA_COMP_VERSION": "1"}')
    with pytest.raises(RuntimeError, match="^Missing MUSA version macro: MUSPARSE_VERSION$"):
        extension_support.musa_version_macros(str(tmp_path))
    shipped = os.path.join(
        os.path.dirname(__import__("torchada").__file__), "_simulator", "site", "torch_musa"
    )
    assert [n for n, _ in extension_support.musa_version_macros(shipped)] == [
        "MUSA_COMP_VERSION",
        "MUSPARSE_VERSION",
        "REAL_MUSA_VERSION",
    ]
