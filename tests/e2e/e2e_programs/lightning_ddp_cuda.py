"""A PyTorch Lightning program written for two NVIDIA GPUs: Trainer(accelerator="cuda",
devices=2, strategy="ddp"). Lightning starts the second rank itself, by running this script again
in a child process. Each rank writes what it measured to <out>/rank<N>.json."""

import json
import os
import sys

import lightning as L
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
        self.seen = set()
        self.losses = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        self.seen.add((str(x.device), x.is_cuda, str(self.net.weight.device)))
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.losses.append(loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main(out_dir: str) -> None:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(128, 4, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.25
    trainer = L.Trainer(
        accelerator="cuda",
        devices=2,
        strategy="ddp",
        max_epochs=3,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    model = Regressor()
    trainer.fit(model, DataLoader(TensorDataset(x, y), batch_size=8))
    result = {
        "rank": trainer.global_rank,
        "world": trainer.world_size,
        "pid": os.getpid(),
        "accelerator": type(trainer.accelerator).__name__,
        "root_device": str(trainer.strategy.root_device),
        "backend": dist.get_backend() if dist.is_initialized() else None,
        "seen": sorted(map(list, model.seen)),
        "first_loss": model.losses[0],
        "last_loss": model.losses[-1],
        "steps": len(model.losses),
        "weights": [p.detach().cpu().reshape(-1).tolist() for p in model.parameters()],
    }
    with open(os.path.join(out_dir, f"rank{trainer.global_rank}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1])
