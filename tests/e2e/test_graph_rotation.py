"""More CUDA graphs than the MUSA driver lets live: torchada rotates their executables.

The simulated driver refuses ``musaGraphInstantiate`` past TORCHADA_SIM_GRAPH_EXEC_LIMIT live
executables, as the real one does past about 2048; the tests lower it (and torchada's cap) so
that a few dozen graphs are past it.
"""

from __future__ import annotations

import os
import threading

import pytest
import torch

from tests.conftest import program_result, run_python

PROGRAMS = os.path.join(os.path.dirname(__file__), "e2e_programs")
PIECEWISE = os.path.join(PROGRAMS, "piecewise_graphs_cuda.py")
# 6 layers x 8 batch sizes = 48 graphs: 3x the simulated limit.
LOWERED = {"TORCHADA_SIM_GRAPH_EXEC_LIMIT": "16", "TORCHADA_GRAPH_EXEC_CAP": "12"}


@pytest.mark.parametrize("mode", ["runner", "import"])
def test_piecewise_serving_past_the_driver_limit(mode, cuda_program, tmp_path):
    out = program_result(
        cuda_program(mode, PIECEWISE, ["6", "8", "120"], workdir=tmp_path, extra_env=LOWERED)
    )
    assert out["graphs"] == 48 and out["steps"] == 120
    assert out["max_diff"] <= 1e-6


def test_without_rotation_capture_fails_as_on_the_driver(cuda_program, tmp_path):
    r = cuda_program(
        "runner",
        PIECEWISE,
        ["6", "8", "10"],
        workdir=tmp_path,
        extra_env={**LOWERED, "TORCHADA_GRAPH_ROTATION": "0"},
    )
    assert r.returncode != 0
    # torch_musa's capture_end: musaGraphInstantiate failed, reported by its C10_MUSA_CHECK.
    assert "in capture_end" in r.stderr
    assert "RuntimeError: MUSA error: out of memory\nMUSA kernel errors might be" in r.stderr


_DRIVER_LIMIT = """
import gc, warnings, torch
from torchada import _simulator
musa = _simulator.activate()
x = torch.ones(2, device="musa")

def capture():
    g = musa.MUSAGraph()
    with musa.graph(g):
        x * 2
    return g

graphs = [capture() for _ in range(3)]
try:
    capture()
except RuntimeError as e:
    print("refused:", str(e).splitlines()[0])
graphs[0].reinstantiate_graph()  # destroys, then instantiates: still 3 live
try:
    capture()
except RuntimeError:
    print("still full")
graphs[0].reset()  # frees its executable
graphs[0] = capture()
del graphs[1]; gc.collect()  # so does the destructor
graphs.append(capture())
print("reused")
"""


def test_simulated_driver_counts_live_executables():
    # torch_musa alone: capture_end instantiates; reset() and the destructor free.
    r = run_python(_DRIVER_LIMIT, env={"TORCHADA_SIM_GRAPH_EXEC_LIMIT": "3"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[:3] == [
        "refused: MUSA error: out of memory",
        "still full",
        "reused",
    ]
    r = run_python(_DRIVER_LIMIT, env={"TORCHADA_SIM_GRAPH_EXEC_LIMIT": "abc"})
    assert "TORCHADA_SIM_GRAPH_EXEC_LIMIT='abc' is not valid: use a whole number" in r.stderr


# The same program at the driver's own limit (2112 graphs, default cap) takes about 20 minutes on
# 2 cores: it is a benchmark (bench/bench_graph_rotation.py), not part of the suite.


# ---------------------------------------------------------------- in this process
@pytest.fixture
def small_cap(torchada_on, monkeypatch):
    from torchada._cuda import graph_rotation

    monkeypatch.setattr(graph_rotation._state, "cap", 4)
    return graph_rotation


def _capture(fn, *, pool=None, mode="global"):
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g, pool=pool, capture_error_mode=mode):
        out = fn()
    return g, out


def test_rotation_keeps_outputs_right_and_replay_plain_until_evicting(small_cap):
    import torch_musa

    plain = torch_musa.MUSAGraph.replay
    before = small_cap.stats()
    x = torch.ones(3, device="cuda")
    graphs = [_capture(lambda i=i: x * i)[:2] for i in range(3)]
    # Under the cap: nothing rotates, replay is torch_musa's own method.
    assert small_cap.stats()["live"] == before["live"] + 3
    if before["evicted"] == 0:
        assert torch.cuda.CUDAGraph.replay is plain
    graphs += [_capture(lambda i=i: x * i)[:2] for i in range(3, 10)]
    stats = small_cap.stats()
    assert stats["live"] == 4 and stats["evicted"] >= 6
    assert torch.cuda.CUDAGraph.replay is not plain
    for step in range(3):
        x.fill_(step + 1)
        for i in [9, 0, 5, 0, 1, 2, 3, 4, 6, 7, 8, 0]:
            g, out = graphs[i]
            g.replay()
            assert torch.equal(out, torch.full((3,), float((step + 1) * i), device="musa"))
    assert small_cap.stats()["live"] == 4
    assert small_cap.stats()["reinstantiated"] > stats["reinstantiated"]


def test_shared_pool_reset_free_and_recapture_after_eviction(small_cap):
    x = torch.arange(4.0, device="cuda")
    g1, hidden = _capture(lambda: x * 2)
    g2, out = _capture(lambda: hidden + 1, pool=g1.pool())
    pool = g1.pool()
    fillers = [_capture(lambda i=i: x - i) for i in range(6)]  # evicts g1 and g2
    assert g1.pool() == pool  # an evicted graph still answers for its pool
    with pytest.raises(RuntimeError, match="already owns a captured graph"):
        g1.capture_begin()
    x.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    g1.replay()
    g2.replay()
    assert out.tolist() == [3.0, 5.0, 7.0, 9.0]
    # update_musa_graph_with_profile re-instantiates every graph, evicted ones included.
    torch.musa.update_musa_graph_with_profile()
    assert small_cap.stats()["live"] <= 4
    live = small_cap.stats()["live"]
    g1.reset()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g1.replay()
    assert small_cap.stats()["live"] in (live, live - 1)
    del fillers
    import gc

    gc.collect()
    assert small_cap.stats()["live"] <= 1  # g2, if it is live: the freed graphs left the count


def test_replay_on_threads_while_capturing(small_cap):
    x = torch.ones(8, device="cuda")
    graphs = [_capture(lambda i=i: x + i) for i in range(8)]
    errors = []

    def replay_all(order):
        try:
            for _ in range(5):
                for i in order:
                    g, out = graphs[i]
                    g.replay()
                    if out[0].item() != 1 + i:
                        errors.append((i, out[0].item()))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=replay_all, args=(o,)) for o in ([0, 1, 2, 3], [7, 6, 5])]
    for t in threads:
        t.start()
    # Captures while they replay; "thread_local" lets the other threads synchronise meanwhile.
    more = [_capture(lambda i=i: x * i, mode="thread_local") for i in range(4)]
    for t in threads:
        t.join()
    assert errors == []
    for i, (g, out) in enumerate(more):
        g.replay()
        assert out.tolist() == [float(i)] * 8


def test_cap_setting_refuses_bad_values(monkeypatch):
    from torchada._cuda import graph_rotation

    monkeypatch.setenv("TORCHADA_GRAPH_EXEC_CAP", "abc")
    with pytest.raises(ValueError, match="TORCHADA_GRAPH_EXEC_CAP='abc' is not valid: use a whole"):
        graph_rotation.cap_setting()
    monkeypatch.setenv("TORCHADA_GRAPH_EXEC_CAP", "64")
    assert graph_rotation.cap_setting() == 64


def test_disable_gives_evicted_graphs_their_executables_back():
    code = """
import torch, torchada
x = torch.ones(4, device="cuda")
graphs = []
for i in range(10):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x + i
    graphs.append((g, y))
torchada.disable()  # torch_musa's own replay again, for all ten
x.fill_(2)
for i, (g, y) in enumerate(graphs):
    g.replay()
    assert y[0].item() == 2 + i, (i, y)
print("ok")
"""
    r = run_python(code, env={"TORCHADA_SIMULATE": "1", "TORCHADA_GRAPH_EXEC_CAP": "4"})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
