"""A serving engine's CUDA graphs, vLLM-style piecewise capture, against eager execution.

A small model is split into pieces (one per layer); every piece is captured once per batch size
into one shared memory pool, in capture order, as vLLM's piecewise backend does. Requests then
arrive with mixed batch sizes, recent sizes more often (decode traffic), and each step copies the
batch into the size's static input and replays that size's pieces in order. A worker thread
serves part of the steps while the main thread serves the rest (engines capture on one thread and
replay on others). A graph that the engine drops is freed. Every output must equal eager's.

Usage: piecewise_graphs_cuda.py [LAYERS] [SIZES] [STEPS]. Prints one JSON line.
"""

import copy
import json
import random
import sys
import threading

import torch
import torch.nn as nn

LAYERS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
SIZES = int(sys.argv[2]) if len(sys.argv) > 2 else 8
STEPS = int(sys.argv[3]) if len(sys.argv) > 3 else 120
WIDTH = 16


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.up = nn.Linear(WIDTH, 2 * WIDTH)
        self.down = nn.Linear(2 * WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def main() -> None:
    torch.manual_seed(0)
    layers = nn.ModuleList(Layer() for _ in range(LAYERS)).cuda().eval()
    sizes = [1 << i for i in range(SIZES)]  # 1, 2, 4, ... as capture sizes are
    pool = torch.cuda.graph_pool_handle()
    stream = torch.cuda.Stream()
    graphs, inputs, outputs = {}, {}, {}
    with torch.no_grad():
        for bs in reversed(sizes):  # largest first, as vLLM captures
            x = torch.zeros(bs, WIDTH, device="cuda")
            inputs[bs] = x
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for layer in layers:  # warm-up, eager
                    layer(x)
            torch.cuda.current_stream().wait_stream(stream)
            hidden = x
            for i, layer in enumerate(layers):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, pool=pool, stream=stream):
                    out = layer(hidden)
                graphs[bs, i] = g
                outputs[bs, i] = out
                hidden = out

    rng = random.Random(0)
    recent = sizes[: max(2, SIZES // 3)]  # small (decode) sizes are hot
    plan = [rng.choice(recent) if rng.random() < 0.75 else rng.choice(sizes) for _ in range(STEPS)]
    worst = [0.0]
    serve_lock = threading.Lock()  # one request at a time uses a size's static buffers

    def serve(steps) -> None:
        for bs in steps:
            batch = torch.randn(bs, WIDTH, device="cuda")
            with serve_lock:
                inputs[bs].copy_(batch)
                for i in range(LAYERS):
                    graphs[bs, i].replay()
                got = outputs[bs, LAYERS - 1].clone()
            with torch.no_grad():
                want = batch
                for layer in layers:
                    want = layer(want)
            worst[0] = max(worst[0], (got - want).abs().max().item())

    worker = threading.Thread(target=serve, args=(plan[1::2],))
    worker.start()
    serve(plan[0::2])
    worker.join()

    # The engine drops its largest size's graphs (a smaller max batch after a reconfiguration).
    biggest = sizes[-1]
    for i in range(LAYERS):
        del graphs[biggest, i]
    serve(plan[:10])

    # Partial-network capture of one layer (a forward and a backward graph), beside the others.
    reference = copy.deepcopy(layers[0])
    graphed = torch.cuda.make_graphed_callables(layers[0], (torch.randn(4, WIDTH, device="cuda"),))
    for _ in range(3):
        batch = torch.randn(4, WIDTH, device="cuda")
        got = graphed(batch)
        with torch.no_grad():
            worst[0] = max(worst[0], (got - reference(batch)).abs().max().item())

    print(json.dumps({"graphs": LAYERS * SIZES, "steps": STEPS, "max_diff": worst[0]}))


if __name__ == "__main__":
    main()
