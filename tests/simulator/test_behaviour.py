"""Behaviours where the simulator used to differ from real torch_musa 2.7.1 (each as real
torch_musa's source has it)."""

from __future__ import annotations

import warnings

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
    assert lines[3].split() == ["|", "MUSA", "OOMs:", "0", "|", "musaMalloc", "retries:", "0", "|"]
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
