"""CUDA graph executable rotation on the simulator.

1. Under the cap, replay through torch.cuda.CUDAGraph with torchada on against torch_musa's own
   MUSAGraph.replay called directly (x1.00: until the first eviction it is that call; the
   target allows 2% of noise).
2. A replay that re-instantiates (cap 1, two graphs replayed in turn: each replay evicts the other
   and instantiates its own executable again) against a plain replay and against a capture.

    TORCHADA_SIMULATE=1 pytest bench/bench_graph_rotation.py --benchmark-only
"""

from __future__ import annotations

import pytest
import torch
from conftest import mark


@pytest.fixture(scope="module")
def rotation(musa_sim):
    import torchada
    from torchada._cuda import graph_rotation

    torchada.enable()
    plain = musa_sim.MUSAGraph.replay  # before any eviction: torch_musa's own method
    yield graph_rotation, plain


def _capture(x):
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        y = x * 2 + 1
    return g, y


@pytest.mark.benchmark(group="graph replay under the cap")
def test_replay_torch_musa(benchmark, rotation):
    mark(benchmark, "baseline")
    _, plain = rotation
    g, _ = _capture(torch.ones(64, device="musa"))
    benchmark(plain, g)


@pytest.mark.benchmark(group="graph replay under the cap")
def test_replay_torchada_under_cap(benchmark, rotation):
    # The same function until the first eviction: only noise separates them.
    mark(benchmark, "candidate", target=1.02)
    graph_rotation, _ = rotation
    g, _ = _capture(torch.ones(64, device="cuda"))
    assert graph_rotation.stats()["evicted"] == 0
    benchmark(g.replay)


@pytest.mark.benchmark(group="graph re-instantiating replay vs capture")
def test_capture(benchmark, rotation):
    mark(benchmark, "baseline")
    x = torch.ones(64, device="cuda")
    graphs = []

    def capture():
        graphs.append(_capture(x))
        if len(graphs) > 64:
            graphs.clear()

    benchmark(capture)


@pytest.mark.benchmark(group="graph re-instantiating replay vs capture")
def test_replay_reinstantiating(benchmark, rotation, monkeypatch):
    mark(benchmark, "candidate")
    graph_rotation, _ = rotation
    monkeypatch.setattr(graph_rotation._state, "cap", 1)
    x = torch.ones(64, device="cuda")
    (a, out_a), (b, out_b) = _capture(x), _capture(x)

    def both():
        a.replay()
        b.replay()

    before = graph_rotation.stats()["reinstantiated"]
    benchmark(both)
    assert graph_rotation.stats()["reinstantiated"] - before >= 2
    assert out_a.tolist() == out_b.tolist() == [3.0] * 64
