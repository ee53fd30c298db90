"""A PyTorch Lightning program written for NVIDIA GPUs: Trainer(accelerator="cuda") in full
precision, then Trainer(accelerator="gpu", precision="16-mixed"). Prints one JSON line."""

import json

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)
        )
        self.seen = {"devices": set(), "dtypes": set(), "is_cuda": set()}
        self.losses = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        assert x.is_cuda and x.device == torch.device("cuda", 0)
        out = self.net(x)
        self.seen["devices"].add(str(x.device))
        self.seen["devices"].add(str(self.net[0].weight.device))
        self.seen["dtypes"].add(str(out.dtype))
        self.seen["is_cuda"].add(x.is_cuda)
        loss = torch.nn.functional.mse_loss(out.float(), y)
        self.losses.append(loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 8, generator=g)
    y = x @ torch.randn(8, 1, generator=g) + 0.1
    return DataLoader(TensorDataset(x, y), batch_size=32, shuffle=False)


def fit(**trainer_args):
    L.seed_everything(0, verbose=False)
    model = Regressor()
    trainer = L.Trainer(
        devices=1,
        max_epochs=3,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **trainer_args,
    )
    trainer.fit(model, data())
    torch.cuda.synchronize()
    return {
        "root_device": str(trainer.strategy.root_device),
        "accelerator": type(trainer.accelerator).__name__,
        "precision": trainer.precision,
        "devices": sorted(model.seen["devices"]),
        "dtypes": sorted(model.seen["dtypes"]),
        "is_cuda": sorted(model.seen["is_cuda"]),
        "first_loss": model.losses[0],
        "last_loss": model.losses[-1],
        "steps": len(model.losses),
    }


print(
    json.dumps(
        {
            "full": fit(accelerator="cuda"),
            "mixed": fit(accelerator="gpu", precision="16-mixed"),
            "memory_allocated": torch.cuda.memory_allocated(torch.device("cuda:0")),
        }
    )
)
