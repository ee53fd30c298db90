"""Behaviours where the simulator used to differ from real torch_musa 2.7.1 (each as real
torch_musa's source has it)."""

from __future__ import annotations

import io
import os
import warnings
from typing import Union

import pytest
import torch
from conftest import run_python


def test_event_has_no_device_until_recorded(musa_sim):
    event = musa_sim.Event()
    assert event.device is None
    event.record(musa_sim.Stream(device=1))
    assert event.device == torch.device("musa", 1)


def test_stream_constructor_checks_like_the_c_one(musa_sim):
    with pytest.raises(TypeError, match="'foo' is an invalid keyword argument"):
        musa_sim.Stream(foo=1)
    with pytest.raises(RuntimeError, match="Priority was explicitly set for a external stream"):
        musa_sim.Stream(stream_ptr=1, priority=-1)
    external = musa_sim.Stream(stream_ptr=0x1234)
    assert external.musa_stream == 0x1234 and external.device == torch.device("musa", 0)
    with musa_sim.device(1):
        assert musa_sim.Stream(stream_ptr=0x99).device == torch.device("musa", 1)


@pytest.mark.parametrize("visible", ["", "-1", "5", "garbage"])
def test_no_visible_device_fails_at_lazy_init(visible):
    code = """
        import torch
        from torchada import _simulator
        _simulator.activate()
        print(torch.musa.device_count())
        try:
            torch.musa.current_device()
        except RuntimeError as exc:
            print(exc)
    """
    r = run_python(code, env={"MUSA_VISIBLE_DEVICES": visible, "TORCHADA_ACTIVE": "0"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["0", "No MUSA GPUs are available"]


def test_musa_error_takes_any_code(musa_sim):
    assert str(musa_sim.MusaError(1)) == "invalid argument (1)"
    # libmusart's own words for a code it does not know, as cudaGetErrorString says them.
    assert str(musa_sim.MusaError(12345)) == "unrecognized error code (12345)"
    with pytest.raises(musa_sim.MusaError, match=r"invalid device ordinal \(101\)"):
        musa_sim.check_error(101)
    musa_sim.check_error(0)


def test_latest_graph_instances_are_a_list(musa_sim):
    graph = musa_sim.MUSAGraph()
    instances = musa_sim.MUSAGraph.get_latest_instance()
    assert isinstance(instances, list) and graph in instances


def test_memory_summary_is_torch_musas_table(musa_sim):
    x = torch.ones(256, device="musa:1")
    lines = musa_sim.memory_summary(device=1).splitlines()
    assert lines[1] == "|                  Torch MUSA memory summary, device ID 1                 |"
    ooms = str(musa_sim.memory_stats(1).get("num_ooms", 0))  # an earlier test may have run out
    assert lines[3].split() == ["|", "MUSA", "OOMs:", ooms, "|", "musaMalloc", "retries:", "0", "|"]
    assert (
        lines[5] == "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |"
    )
    allocated = lines[7].split("|")
    assert allocated[1].strip() == "Allocated memory" and allocated[2].split() == ["1024", "B"]
    assert " from large pool" in "\n".join(lines)  # the full table, not the abbreviated one
    del x


def test_legacy_type_names(musa_sim):
    import torch_musa.core.musa as legacy

    assert repr(musa_sim.FloatTensor) == "<class 'torch_musa.FloatTensor'>"
    assert musa_sim.FloatStorage is legacy.FloatStorage
    assert musa_sim.FloatStorage.__module__ == "torch_musa.core.musa"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's TypedStorage deprecation, once per process
        assert musa_sim.HalfStorage(4).device == torch.device("musa", 0)


def test_legacy_tensor_constructor_takes_torchs_forms(musa_sim):
    # Sizes as ints or a torch.Size, data, and the device= keyword, as torch's legacy types.
    assert musa_sim.FloatTensor(torch.Size([2, 3])).shape == (2, 3)
    assert musa_sim.FloatTensor(4, device=1).device == torch.device("musa", 1)
    with musa_sim.device(1):
        assert musa_sim.FloatTensor(1).get_device() == 1
        assert musa_sim.LongTensor([5, 6], device=0).device == torch.device("musa", 0)
    assert musa_sim.FloatTensor([1.5, 2.5]).dtype == torch.float32
    with pytest.raises(TypeError, match="unexpected keyword argument 'pin_memory'"):
        musa_sim.FloatTensor(2, pin_memory=True)


def test_storage_ipc_names_exist_and_say_what_is_missing(musa_sim):
    storage = torch.ones(2, device="musa").untyped_storage()
    for name in ("_share_musa_", "_share_cuda_"):
        with pytest.raises(RuntimeError, match="MUSA IPC .* needs a MUSA device"):
            getattr(storage, name)()
    with pytest.raises(RuntimeError, match="Move the tensor to the CPU before sending it"):
        torch.UntypedStorage._new_shared_musa(0, 0, 0)
    with pytest.raises(RuntimeError, match="MUSA IPC"):
        torch.UntypedStorage._release_ipc_counter_cuda(0, 0, device=0)
    # As in torch_musa: device memory counts as shared, is_cuda answers for musa storages only.
    assert storage.is_shared() and storage.is_musa and storage.is_cuda
    assert not torch.ones(2).untyped_storage().is_cuda
    assert storage.musa() is storage
    copy = torch.ones(2).untyped_storage().musa(1)
    assert copy.device == torch.device("musa", 1)


def test_profiler_anti_patterns_name_musa(musa_sim, capsys):
    import torch.profiler._pattern_matcher as matcher

    # torch_musa puts its patterns into torch's profiler at import.
    assert matcher.report_all_anti_patterns is musa_sim.profiler.report_all_anti_patterns
    assert torch.profiler._utils.BasicEvaluation is musa_sim.profiler.BasicEvaluation
    activities = [torch.profiler.ProfilerActivity.CPU]
    # torch's first profile imports modules inside the profiled region, and its Python tracer keeps
    # pointers into their code objects, freed once imported: a frame name can then come back
    # undecodable (pytorch#136040). Profiling once before keeps those imports out of this profile.
    with torch.profiler.profile(activities=activities, with_stack=True):
        pass
    with torch.profiler.profile(activities=activities, with_stack=True, record_shapes=True) as prof:
        torch.zeros(64, 64).to("musa")
        torch.mm(torch.ones(8, 8, device="musa"), torch.ones(8, 8, device="musa"))
    assert musa_sim.profiler.ExtraMUSACopyPattern(prof).name == "Extra MUSA Copy Pattern"
    tf32 = musa_sim.profiler.FP32MatMulPattern(prof)
    before = torch.backends.mudnn.allow_tf32
    try:
        torch.backends.mudnn.allow_tf32 = False
        # One mm on a real device; structured ops on the simulator also record their out= call.
        matched = tf32.matched_events()
        assert matched and {e.name for e in matched} == {"aten::mm"}
        assert "torch.backends.mudnn.allow_tf32 = True" in tf32.description
        musa_sim.profiler.report_all_anti_patterns(prof)
        report = capsys.readouterr().out
        assert "TorchTidy Report" in report and "FP32 MatMul Pattern: " in report
        torch.backends.mudnn.allow_tf32 = True
        assert tf32.matched_events() == []
    finally:
        torch.backends.mudnn.allow_tf32 = before
    assert musa_sim.profiler.BasicEvaluation(prof.profiler).musa_events == []


def test_incidental_names_are_what_real_binds(musa_sim):
    import torch_musa.core._lazy_init as lazy_init
    from torch_musa.core import _utils, device, random, stream

    assert musa_sim.torch_musa is musa_sim and musa_sim.core.torch_musa is musa_sim
    from torchada._simulator import releases

    minimum = releases.facts(releases.resolve())["torch_minimum"]
    assert str(musa_sim.TORCH_MIN_VERSION) == minimum
    assert musa_sim.TORCH_MIN_VERSION <= type(musa_sim.TORCH_MIN_VERSION)(musa_sim.TORCH_VERSION)
    # The submodule keeps its name: core imports its _lazy_init function under another one.
    assert type(lazy_init).__name__ == "module" and musa_sim.core._lazy_init is lazy_init
    assert musa_sim.core.cmake_prefix_path == os.path.join(
        os.path.dirname(musa_sim.__file__), "share", "cmake"
    )
    assert _utils.DeviceUnion == Union[torch.device, int, str, None]
    assert random.current_device is device.current_device
    assert random.device_count is device.device_count
    assert stream.device is device.Device is musa_sim.device


def test_lazy_init_module_holds_what_torch_musa_sets_from_it(musa_sim):
    import torch_musa.core._lazy_init as lazy_init
    import torch_musa.core.musa as legacy

    for prefix in ("Double", "Float", "Long", "Int", "Short", "Char", "Byte", "Half", "Bool"):
        name = f"{prefix}Storage"
        assert getattr(musa_sim, name) is getattr(lazy_init, name) is getattr(legacy, name)
    assert musa_sim.BFloat16Storage is lazy_init.BFloat16Storage
    for name in ("musart", "MusaError", "check_error"):
        assert getattr(musa_sim, name) is getattr(lazy_init, name), name
    assert musa_sim.musart() is musa_sim._MUSAC._musart
    with pytest.raises(lazy_init.MusaError, match=r"out of memory \(2\)"):
        musa_sim.check_error(2)
    # torch_musa.device is core.device's context manager; core._lazy_init has its own.
    assert lazy_init.device is not musa_sim.device and "init" not in vars(musa_sim)
    assert musa_sim.current_device() == 0
    with lazy_init.device("musa:1"):
        assert musa_sim.current_device() == 1
        with lazy_init.device(0):
            assert musa_sim.current_device() == 0
        assert musa_sim.current_device() == 1
    assert musa_sim.current_device() == 0


def test_init_initialises_and_generators_land_on_torch_musa_only():
    code = """
        import torch
        from torchada import _simulator
        torch_musa = _simulator.activate()
        from torch_musa.core import _lazy_init
        print(torch_musa.is_initialized(), hasattr(torch_musa, "default_generators"))
        _lazy_init.init()
        print(torch_musa.is_initialized(), len(torch_musa.default_generators))
        print(_lazy_init.default_generators)
    """
    r = run_python(code, env={"TORCHADA_ACTIVE": "0"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["False False", "True 2", "()"]


def test_register_deserialization_entries_and_musa_restore(musa_sim):
    import torch.serialization as ser
    from torch_musa.core import serialization

    assert musa_sim.register_deserialization is serialization.register_deserialization
    entries = {priority: (tag, restore) for priority, tag, restore in ser._package_registry}
    assert entries[999] == (serialization._musa_tag, serialization._musa_deserialize)
    assert entries[20][1] is serialization._cuda_deserialize  # torch's CUDA tagger is kept
    # A saved musa tensor comes back on its device (torch's PrivateUse1 entry restores it first).
    buf = io.BytesIO()
    torch.save({"w": torch.arange(4.0, device="musa:1")}, buf)
    buf.seek(0)
    w = torch.load(buf)["w"]
    assert w.device == torch.device("musa", 1) and w.tolist() == [0.0, 1.0, 2.0, 3.0]
    # torch_musa's own restorer, for the locations torch's entry leaves to it.
    restored = serialization._musa_deserialize(torch.UntypedStorage(8), "musa:1")
    assert restored.device == torch.device("musa", 1) and restored.nbytes() == 8
    assert serialization._musa_deserialize(torch.UntypedStorage(8), "cpu") is None
    with pytest.raises(RuntimeError, match=r"device 5 but torch.musa.device.device_count\(\) is 2"):
        serialization._musa_deserialize(torch.UntypedStorage(8), "musa:5")


def test_cuda_checkpoint_is_refused_with_torch_musas_advice():
    # Without torchada: torch_musa's replacement of torch's CUDA deserializer answers.
    code = """
        import io
        import torch
        import torch.serialization as ser
        from torchada import _simulator
        _simulator.activate()
        buf = io.BytesIO()
        entry = (-1, lambda storage: "cuda:0", lambda storage, location: None)
        ser._package_registry.insert(0, entry)
        torch.save(torch.ones(2), buf)
        ser._package_registry.remove(entry)
        buf.seek(0)
        try:
            torch.load(buf)
        except RuntimeError as exc:
            print(exc)
        buf.seek(0)
        print(torch.load(buf, map_location="musa:1").device)
    """
    r = run_python(code, env={"TORCHADA_ACTIVE": "0"})
    assert r.returncode == 0, r.stderr
    refusal, device = r.stdout.splitlines()
    assert refusal.startswith("Attempting to deserialize object on a CUDA device")
    assert "please use torch.load with map_location=torch.device('musa')" in refusal
    assert device == "musa:1"


def test_musa_extension_build_constants(musa_sim, monkeypatch):
    from torch_musa.utils import musa_extension as ext

    monkeypatch.delenv("CXX", raising=False)
    assert ext.get_cxx_compiler() == "c++"
    monkeypatch.setenv("CXX", "clang++")
    assert ext.get_cxx_compiler() == "clang++"
    lib = os.path.join(os.path.dirname(musa_sim.__file__), "lib")
    assert ext.TORCH_MUSA_LIB_PATH == lib and os.path.isdir(lib)
    assert not [f for f in os.listdir(lib) if f.endswith(".so")]  # nothing to link, as it says
    assert ext.COMMON_MCC_FLAGS == [] and ext.RERUN_CMAKE is False
    assert ext.SUBPROCESS_DECODE_ARGS == () and ext.install_requires == ["packaging"]
    assert ext.torch_musa is musa_sim


UMM_LOAD = """
    import io, os
    import torch
    from torchada import _simulator
    torch_musa = _simulator.activate()
    state = {"w": torch.randn(256, 64), "b": torch.randn(64)}
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    before = torch_musa.memory_allocated(0)
    loaded = torch.load(buf, map_location="musa")
    assert all(torch.equal(loaded[k].cpu(), state[k]) for k in state)
    storage = torch.ones(2).untyped_storage()
    print(os.environ["CPU_UNIFIED_FLAG"], loaded["w"].device,
          torch_musa.max_memory_allocated(0) - before,
          storage.to(device="musa:1") is storage)
"""


@pytest.mark.parametrize(
    "conf,expected",
    [
        (None, "False musa:0 65792 False"),
        ("cpu:unified", "True musa:0 0 True"),
        ("expandable_segments:True, cpu:unified", "True musa:0 0 True"),
    ],
)
def test_unified_memory_from_the_environment(conf, expected):
    # With cpu:unified, torch.load onto the device takes no device memory: storages move in place.
    env = {"TORCHADA_ACTIVE": "0"}
    if conf is not None:
        env["PYTORCH_MUSA_ALLOC_CONF"] = conf
    r = run_python(UMM_LOAD, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [expected]


@pytest.mark.parametrize(
    "conf,unified",
    [
        ("cpu::unified", True),
        ("backend:native,cpu:unified", True),
        ("cpu:unified:1", False),
        ("CPU:unified", False),
        ("", False),
    ],
)
def test_parse_env_for_umm_reads_the_cpu_option(musa_sim, monkeypatch, conf, unified):
    monkeypatch.setenv("PYTORCH_MUSA_ALLOC_CONF", conf)
    monkeypatch.setenv("CPU_UNIFIED_FLAG", "True")
    try:
        musa_sim.parseEnvForUMM()
        assert os.environ["CPU_UNIFIED_FLAG"] == str(unified)
        storage = torch.ones(2).untyped_storage()
        assert (storage.to(device="musa") is storage) is unified
    finally:
        if unified:
            musa_sim._MUSAC._musa_reset_unified_cpu_allocator()
        os.environ["CPU_UNIFIED_FLAG"] = "False"


def test_use_unified_cpu_allocator_moves_only_managed_memory(musa_sim):
    pageable = torch.ones(4)
    with musa_sim.use_unified_cpu_allocator():
        assert os.environ["CPU_UNIFIED_FLAG"] == "True"
        managed = torch.arange(4.0).untyped_storage()
        assert managed.to(device="musa:1") is managed
        assert managed.device == torch.device("musa", 1)
        # The hardware would fault on pageable memory handed to the device: refused here.
        with pytest.raises(RuntimeError, match="pageable host memory, which a MUSA device"):
            pageable.untyped_storage().to(device="musa")
        with pytest.raises(RuntimeError, match="MUSA device memory, which the host cannot"):
            torch.ones(2, device="musa").untyped_storage().edit_device("cpu")
    assert os.environ["CPU_UNIFIED_FLAG"] == "False"
    storage = torch.ones(2).untyped_storage()
    copy = storage.to(device="musa")
    assert copy is not storage and storage.device.type == "cpu"


def test_unified_cpu_allocator_needs_a_device():
    code = """
        import torch
        from torchada import _simulator
        _simulator.activate()
        try:
            torch.ones(2)
        except RuntimeError as exc:
            print(exc)
    """
    env = {
        "TORCHADA_ACTIVE": "0",
        "MUSA_VISIBLE_DEVICES": "",
        "PYTORCH_MUSA_ALLOC_CONF": "cpu:unified",
    }
    r = run_python(code, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        "MUSA error: no MUSA-capable device is detected (error code 100) from "
        "musaMallocManaged(&ptr, size, musaMemAttachGlobal)"
    )


def test_sparse_results_fail_as_a_backend_without_sparse_kernels(musa_sim):
    # Sparse layouts on the device are not simulated: converting to one fails where torch's own
    # fallback sends the result to the device, not later with an unrelated copy error.
    x = torch.randn(3, 3, device="musa")
    with pytest.raises(NotImplementedError, match="'Sparsemusa' backend"):
        x.to_sparse()
