"""CUDA graphs, as in PyTorch's CUDA-graph documentation, against eager execution.

1. Inference: warm up on a side stream, capture a model's forward with ``torch.cuda.graph``,
   then ``static_input.copy_(...)`` and ``g.replay()`` for new data.
2. Whole-network capture of a training iteration (forward, backward, ``optimizer.step()``),
   replayed on new batches; the weights must equal those of the same iterations run eagerly.
3. Partial-network capture with ``torch.cuda.make_graphed_callables`` (a module and a function),
   trained for a few steps against an eager copy.

Prints one JSON line with the largest differences found.
"""

import copy
import json

import torch
import torch.nn as nn


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 4)).cuda()


def batches(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(8, 16, generator=g).cuda(), torch.randn(8, 4, generator=g).cuda())
        for _ in range(n)
    ]


def max_diff(a, b) -> float:
    return max((x - y).abs().max().item() for x, y in zip(a, b))


def inference() -> float:
    model = make_model().eval()
    static_input = torch.randn(8, 16, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad():
        with torch.cuda.stream(s):
            for _ in range(3):
                model(static_input)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_output = model(static_input)
        diffs = []
        for x, _ in batches(4, seed=1):
            static_input.copy_(x)
            g.replay()
            diffs.append((static_output - model(x)).abs().max().item())
    return max(diffs)


def whole_network_training() -> "tuple[float, list]":
    torch.manual_seed(0)
    model = make_model()
    eager = copy.deepcopy(model)
    loss_fn = nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    eager_opt = torch.optim.SGD(eager.parameters(), lr=0.1)
    data = batches(6, seed=2)
    static_input, static_target = (t.clone() for t in data[0])

    # Warm-up iterations on a side stream (they train too: the eager copy does the same).
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss_fn(model(static_input), static_target).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(s)
    for _ in range(3):
        eager_opt.zero_grad(set_to_none=True)
        loss_fn(eager(data[0][0]), data[0][1]).backward()
        eager_opt.step()

    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        static_loss = loss_fn(model(static_input), static_target)
        static_loss.backward()
        opt.step()

    losses = []
    for x, y in data[1:]:
        static_input.copy_(x)
        static_target.copy_(y)
        g.replay()
        losses.append(static_loss.item())
        eager_opt.zero_grad(set_to_none=True)
        loss_fn(eager(x), y).backward()
        eager_opt.step()
    torch.cuda.synchronize()
    return max_diff(model.parameters(), eager.parameters()), losses


def graphed_callables_training() -> float:
    torch.manual_seed(0)
    module1 = nn.Linear(16, 32).cuda()
    module2 = nn.Sequential(nn.ReLU(), nn.Linear(32, 4)).cuda()
    eager1, eager2 = copy.deepcopy(module1), copy.deepcopy(module2)

    def scale_shift(t):
        return t * 0.5 + 1.0

    x = torch.randn(8, 16, device="cuda")
    h = torch.randn(8, 32, device="cuda", requires_grad=True)
    module1 = torch.cuda.make_graphed_callables(module1, (x,))
    module2 = torch.cuda.make_graphed_callables(module2, (h,))
    graphed_fn = torch.cuda.make_graphed_callables(scale_shift, (h,))

    params = list(module1.parameters()) + list(module2.parameters())
    eager_params = list(eager1.parameters()) + list(eager2.parameters())
    opt = torch.optim.SGD(params, lr=0.1)
    eager_opt = torch.optim.SGD(eager_params, lr=0.1)
    for x, y in batches(4, seed=3):
        opt.zero_grad(set_to_none=True)
        out = module2(graphed_fn(module1(x)))
        nn.functional.mse_loss(out[:, :4], y).backward()
        opt.step()
        eager_opt.zero_grad(set_to_none=True)
        ref = eager2(scale_shift(eager1(x)))
        nn.functional.mse_loss(ref[:, :4], y).backward()
        eager_opt.step()
    torch.cuda.synchronize()
    return max_diff(params, eager_params)


def main() -> None:
    torch.cuda.set_device(0)
    inference_diff = inference()
    training_diff, losses = whole_network_training()
    callables_diff = graphed_callables_training()
    print(
        json.dumps(
            {
                "inference_diff": inference_diff,
                "training_weight_diff": training_diff,
                "training_losses": losses,
                "graphed_callables_weight_diff": callables_diff,
                "capturing_after": torch.cuda.is_current_stream_capturing(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
