"""A small CUDA-written training program: nothing in it knows about MUSA or torchada.

Run it on a Moore Threads GPU (or the bundled simulator) unchanged:
    python -m torchada.run --simulate examples/train_cuda.py
"""

import argparse

import torch
import torch.nn as nn


def make_data(n: int, device: torch.device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 16, generator=g)
    w = torch.randn(16, 1, generator=g)
    y = torch.sin(x @ w) + 0.05 * torch.randn(n, 1, generator=g)
    return x.to(device, non_blocking=True), y.cuda()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()

    assert torch.cuda.device_count() > 0, "needs a GPU"
    torch.cuda.set_device(0)
    torch.cuda.manual_seed(0)
    device = torch.device("cuda")
    print(
        f"device: {torch.cuda.get_device_name()} (capability {torch.cuda.get_device_capability()})"
    )

    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 1)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scaler = torch.cuda.amp.GradScaler()
    x, y = make_data(512, device)

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    stream = torch.cuda.Stream()
    losses = []
    start.record()
    with torch.cuda.stream(stream):
        for _ in range(args.steps):
            opt.zero_grad(set_to_none=True)
            with torch.cuda.amp.autocast(dtype=torch.float16):
                loss = nn.functional.mse_loss(model(x).float(), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())
    torch.cuda.current_stream().wait_stream(stream)
    end.record()
    torch.cuda.synchronize()

    print(f"loss: {losses[0]:.4f} -> {losses[-1]:.4f} over {args.steps} steps")
    print(f"time: {start.elapsed_time(end):.1f} ms on the device's clock")
    print(f"peak memory: {torch.cuda.max_memory_allocated() / 1024:.1f} KiB")
    print(f"parameters live on: {next(model.parameters()).device}")
    if losses[-1] >= losses[0]:
        raise SystemExit("training did not reduce the loss")


if __name__ == "__main__":
    main()
