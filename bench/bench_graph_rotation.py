"""CUDA graph executable rotation on the simulator.

1. Under the cap, replay through torch.cuda.CUDAGraph with torchada on against torch_musa's own
   MUSAGraph.replay called directly (x1.00: until the first eviction it is that call; the
   target allows 2% of noise).
2. A replay that re-instantiates (cap 1, two graphs replayed in turn: each replay evicts the other
   and instantiates its own executable again) against a plain replay and against a capture.

3. The serving-shaped program of tests/e2e/test_graph_rotation.py at the driver's own limit:
   2112 graphs against the simulated 2048 and the default cap (1900), once, through the runner
   (about 20 minutes on 2 cores: every capture runs gc.collect(), as torch_musa's graph() does).

    TORCHADA_SIMULATE=1 pytest bench/bench_graph_rotation.py --benchmark-only
    TORCHADA_SIMULATE=1 pytest bench/bench_graph_rotation.py --benchmark-only -k "not default"
"""

from __future__ import annotations

import json
import os

import pytest
import torch
from conftest import REPO, child_last_line, mark

PIECEWISE = os.path.join(REPO, "tests", "e2e", "e2e_programs", "piecewise_graphs_cuda.py")


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


@pytest.mark.benchmark(group="serving past the default limit")
def test_piecewise_serving_past_the_default_limit(benchmark):
    # 264 layer pieces x 8 batch sizes, 6 steps: every output equal to eager's.
    mark(benchmark, "candidate", graphs=2112)
    args = ["-m", "torchada.run", "--simulate", PIECEWISE, "264", "8", "6"]
    out = benchmark.pedantic(lambda: json.loads(child_last_line(args, timeout=3600)), rounds=1)
    assert out["graphs"] == 2112 and out["max_diff"] <= 1e-6
    print(f"\n2112 graphs, default cap: {out}")
