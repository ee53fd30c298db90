"""A CUDA training loop fed by DataLoader worker processes, with checkpoint and resume.

* ``DataLoader(num_workers=2, pin_memory=True)``; batches are copied to the GPU on a side
  ``torch.cuda.Stream`` one step ahead (``wait_stream`` before use, ``record_stream`` so the
  caching allocator knows the consumer stream);
* epochs timed with ``torch.cuda.Event(enable_timing=True)``;
* a checkpoint (model, optimizer, scaler, CUDA RNG state) written with ``torch.save`` after
  ``--save-at`` epochs, and ``--resume`` loading it with ``torch.load(map_location="cuda")``
  and continuing: the final weights equal those of the uninterrupted run.

Prints one JSON line; ``--final PATH`` writes the final weights (on the CPU) for comparison.

    python examples/dataloader_resume_cuda.py --epochs 4 --save-at 2 --ckpt ckpt.pt --final a.pt
    python examples/dataloader_resume_cuda.py --epochs 4 --resume ckpt.pt --final b.pt
"""

import argparse
import json
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Regression(Dataset):
    """Deterministic samples: item i depends only on i (whichever worker makes it)."""

    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.w = torch.randn(32, 1, generator=g)
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        g = torch.Generator().manual_seed(1000 + i)
        x = torch.randn(32, generator=g)
        y = torch.tanh(x @ self.w) + 0.01 * torch.randn(1, generator=g)
        info = get_worker_info()
        return x, y, torch.tensor(-1 if info is None else info.id)


class Prefetcher:
    """Copies the next batch to the GPU on a side stream while the current one is used."""

    def __init__(self, loader: DataLoader) -> None:
        self.it = iter(loader)
        self.stream = torch.cuda.Stream()
        self.pinned = []
        self.workers = set()
        self._preload()

    def _preload(self) -> None:
        try:
            x, y, worker = next(self.it)
        except StopIteration:
            self.batch = None
            return
        self.pinned.append(x.is_pinned() and y.is_pinned())
        self.workers.update(worker.tolist())
        with torch.cuda.stream(self.stream):
            self.batch = (x.cuda(non_blocking=True), y.cuda(non_blocking=True))

    def __iter__(self):
        return self

    def __next__(self):
        torch.cuda.current_stream().wait_stream(self.stream)
        batch = self.batch
        if batch is None:
            raise StopIteration
        for t in batch:
            t.record_stream(torch.cuda.current_stream())
        self._preload()
        return batch


def build():
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 1)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    scaler = torch.cuda.amp.GradScaler()
    return model, opt, scaler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--save-at", type=int, default=0)
    parser.add_argument("--ckpt", default="checkpoint.pt")
    parser.add_argument("--resume", default="")
    parser.add_argument("--final", default="")
    args = parser.parse_args()

    torch.cuda.set_device(0)
    torch.manual_seed(0)
    torch.cuda.manual_seed(0)
    model, opt, scaler = build()
    first_epoch = 0
    resumed_on = None
    if args.resume:
        ckpt = torch.load(args.resume, map_location="cuda")
        resumed_on = str(ckpt["model"]["0.weight"].device)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        scaler.load_state_dict(ckpt["scaler"])
        torch.cuda.set_rng_state(ckpt["cuda_rng"].cpu())
        first_epoch = ckpt["epoch"]

    dataset = Regression(256)
    epoch_losses, epoch_ms, pinned, workers = [], [], [], set()
    for epoch in range(first_epoch, args.epochs):
        loader = DataLoader(
            dataset,
            batch_size=32,
            shuffle=True,
            num_workers=2,
            pin_memory=True,
            generator=torch.Generator().manual_seed(epoch),
        )
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        total, count = 0.0, 0
        batches = Prefetcher(loader)
        model.train()
        for x, y in batches:
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16):
                loss = nn.functional.mse_loss(model(x).float(), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            total += loss.item() * x.shape[0]
            count += x.shape[0]
        end.record()
        end.synchronize()
        epoch_ms.append(start.elapsed_time(end))
        epoch_losses.append(total / count)
        pinned.extend(batches.pinned)
        workers |= batches.workers
        if args.save_at and epoch + 1 == args.save_at:
            torch.save(
                {
                    "model": model.state_dict(),
                    "opt": opt.state_dict(),
                    "scaler": scaler.state_dict(),
                    "cuda_rng": torch.cuda.get_rng_state(),
                    "epoch": epoch + 1,
                },
                args.ckpt,
            )

    weights = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    if args.final:
        torch.save(weights, args.final)
    print(
        json.dumps(
            {
                "first_epoch": first_epoch,
                "epoch_losses": epoch_losses,
                "epoch_ms": epoch_ms,
                "all_pinned": all(pinned),
                "workers": sorted(workers),
                "resumed_on": resumed_on,
                "param_device": str(next(model.parameters()).device),
                "checksum": sum(v.double().sum().item() for v in weights.values()),
            }
        ),
        flush=True,
    )
    if not all(math.isfinite(v) for v in epoch_losses):
        raise SystemExit(f"non-finite loss: {epoch_losses}")


if __name__ == "__main__":
    main()
