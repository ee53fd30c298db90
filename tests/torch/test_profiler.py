"""The profiler on MUSA: CUDA activity is the MUSA (PrivateUse1) activity."""

from __future__ import annotations

import json
import os

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, record_function

import torchada

CPU, CUDA, MUSA = ProfilerActivity.CPU, ProfilerActivity.CUDA, ProfilerActivity.PrivateUse1


pytestmark = pytest.mark.usefixtures("torchada_on")

# torchada's own source directory: a venv's path may contain "torchada" too.
_SOURCE = os.path.dirname(torchada.__file__) + os.sep


def _torch_traces_musa() -> bool:
    # Whether this torch's Kineto lists the MUSA activity (torch's own answer, unpatched).
    return MUSA in torch.autograd._supported_activities()


def _cuda_written_loop(steps: int = 3) -> torch.Tensor:
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    model = model.to("musa")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 16, device="musa")
    for _ in range(steps):
        with record_function("train_step"):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
    torch.cuda.synchronize()
    return loss


def _keys(prof) -> set:
    return {e.key for e in prof.key_averages()}


def test_musa_is_the_musa_activity():
    assert ProfilerActivity.MUSA == MUSA
    assert CUDA != MUSA  # not redefined: translated where activities enter


def test_supported_activities_lists_cuda_as_musa():
    acts = torch.profiler.supported_activities()
    if _torch_traces_musa():
        assert {CPU, CUDA, MUSA} <= acts
    else:
        # Nothing traces MUSA on this torch: CUDA is not claimed either.
        assert acts == torch.autograd._supported_activities() and CUDA not in acts
    assert torch.profiler.profiler.supported_activities() == acts


@pytest.mark.parametrize(
    "activities",
    [
        [CPU, CUDA],
        {CPU, CUDA},
        (CPU, CUDA),
        [CPU, CUDA, MUSA],  # both: MUSA once, not "specified more than once"
        [CPU, {CUDA: []}],
        None,  # the default: supported_activities()
    ],
    ids=["list", "set", "tuple", "both", "dict", "default"],
)
def test_profile_cuda_activity_records_musa_loop(activities):
    kwargs = {} if activities is None else {"activities": activities}
    if any(isinstance(a, dict) for a in activities or ()) and not hasattr(
        torch.profiler.profiler, "_parse_activities"
    ):
        # This torch's profiler takes no {activity: filters}: its own error, passed through.
        with pytest.raises(TypeError, match="unhashable"):
            profile(**kwargs)
        return
    expected = {CPU, MUSA}
    if activities is None and not _torch_traces_musa():
        expected = {CPU}  # torch's default is what this torch's Kineto traces
    with profile(**kwargs) as prof:
        _cuda_written_loop()
    assert prof.activities == expected
    assert prof.use_device == ("musa" if MUSA in expected else None)
    keys = _keys(prof)
    assert {"train_step", "aten::addmm", "aten::relu"} <= keys
    assert next(e for e in prof.key_averages() if e.key == "train_step").count == 3


def test_cuda_sort_keys_and_table():
    with profile(activities=[CPU, CUDA], record_shapes=True) as prof:
        _cuda_written_loop(2)
    avgs = prof.key_averages()
    for key in ("cuda_time_total", "self_cuda_time_total", "device_time_total", "cpu_time_total"):
        table = avgs.table(sort_by=key, row_limit=5)
        assert "Name" in table and "aten::" in table
    by_cpu = avgs.table(sort_by="cpu_time_total", row_limit=1)
    assert "train_step" in by_cpu or "aten::" in by_cpu
    event = next(e for e in prof.events() if e.name == "aten::addmm")
    assert event.device_type == torch.autograd.DeviceType.CPU  # the op's CPU-side record
    with pytest.warns(FutureWarning, match="device_time_total"):
        assert event.cuda_time_total == event.device_time_total
    # Grouped by input shape, as CUDA programs do.
    assert any(e.input_shapes for e in prof.key_averages(group_by_input_shape=True))


def test_export_chrome_trace(tmp_path):
    with profile(activities=[CPU, CUDA]) as prof:
        _cuda_written_loop(1)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    names = {e.get("name") for e in json.loads(path.read_text())["traceEvents"]}
    assert "aten::addmm" in names and "train_step" in names


def test_schedule_and_toggle_collection_dynamic():
    traces = []
    with profile(
        activities=[CPU, CUDA],
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1),
        on_trace_ready=lambda p: traces.append(_keys(p)),
    ) as prof:
        for _ in range(5):
            _cuda_written_loop(1)
            prof.step()
    assert len(traces) == 1 and "aten::addmm" in traces[0]
    with profile(activities=[CPU, CUDA]) as prof:
        prof.toggle_collection_dynamic(False, [CUDA])
        prof.toggle_collection_dynamic(True, [CUDA])
        _cuda_written_loop(1)
    assert "aten::addmm" in _keys(prof)


@pytest.mark.parametrize(
    "kwargs", [{"use_cuda": True}, {"use_device": "cuda"}], ids=["use_cuda", "use_device"]
)
def test_autograd_profiler_cuda_means_musa(kwargs):
    with torch.autograd.profiler.profile(**kwargs) as prof:
        _cuda_written_loop(1)
    assert prof.use_device == "musa"
    assert {"aten::addmm", "train_step"} <= _keys(prof)
    assert "Self CPU" in prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=3)


def test_autograd_profiler_other_devices_untouched():
    with torch.autograd.profiler.profile() as prof:
        torch.ones(3) + 1
    assert prof.use_device is None and "aten::add" in _keys(prof)
    prof = torch.autograd.profiler.profile(enabled=False, use_cuda=True)
    assert not prof.enabled


def test_keyword_only_like_torch():
    with pytest.raises(TypeError):
        profile([CPU, CUDA])  # torch's profile takes keywords only


def test_disable_restores_profiler():
    torchada.disable()
    try:
        assert CUDA not in torch.profiler.supported_activities()
        cls = torch.profiler.profiler._KinetoProfile
        assert _SOURCE not in cls.__init__.__code__.co_filename
        assert _SOURCE not in torch.autograd.profiler.profile.__init__.__code__.co_filename
        # Plain torch asks for CUDA profiling (legacy path), which the CPU build cannot serve.
        prof = profile(activities=[CPU, CUDA])
        assert prof.use_device == "cuda"
    finally:
        assert torchada.enable()
