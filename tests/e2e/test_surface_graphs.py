"""CUDA graphs of a small model on MUSA: capture once, replay with new static inputs."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.usefixtures("torchada_on")


def _model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.LayerNorm(32), torch.nn.GELU(), torch.nn.Linear(32, 8)
    )
    return model.to("musa").eval()


def _warm_up(model, static_input, stream):
    # As CUDA programs do before capturing: a few iterations on a side stream.
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            model(static_input)
    torch.cuda.current_stream().wait_stream(stream)


def test_capture_and_replay_matches_eager():
    model = _model()
    static_input = torch.randn(4, 16, device="musa")
    stream = torch.cuda.Stream()
    pool = torch.cuda.graph_pool_handle()
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad():
        _warm_up(model, static_input, stream)
        with torch.cuda.graph(cuda_graph=graph, pool=pool, stream=stream):
            static_output = model(static_input)
    assert graph.pool() == pool
    for _ in range(3):
        new = torch.randn(4, 16, device="musa")
        static_input.copy_(new)
        graph.replay()
        with torch.no_grad():
            expected = model(new)
        torch.testing.assert_close(static_output, expected)
        assert static_output.device.type == "musa"


def test_two_graphs_share_a_pool_and_positional_graph_argument():
    model = _model()
    x = torch.randn(2, 16, device="musa")
    g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.no_grad():
        with torch.cuda.graph(g1):
            hidden = model[:2](x)
        with torch.cuda.graph(g2, pool=g1.pool()):
            out = model[2:](hidden)
    x.copy_(torch.ones_like(x))
    g1.replay()
    g2.replay()
    with torch.no_grad():
        torch.testing.assert_close(out, model(torch.ones_like(x)))


def test_make_graphed_callables_module_matches_eager():
    model = _model()
    sample = torch.randn(4, 16, device="musa")
    graphed = torch.cuda.make_graphed_callables(model, (sample,))
    for _ in range(2):
        x = torch.randn(4, 16, device="musa")
        with torch.no_grad():
            torch.testing.assert_close(graphed(x), model(x))


def test_host_sync_during_capture_is_refused():
    g = torch.cuda.CUDAGraph()
    x = torch.ones(2, device="musa")
    capturing = []

    def capture():
        with torch.cuda.graph(g):
            capturing.append(torch.cuda.is_current_stream_capturing())
            (x * 2).sum().item()

    with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing"):
        capture()
    assert capturing == [True]
    assert not torch.cuda.is_current_stream_capturing()
