"""A program that lets torch.cuda.is_available() choose, the most common way CUDA code is written:
a trainer whose device setting is "auto" (as minGPT's), a GPT-style training setup that picks
bfloat16 where the GPU supports it and a fused AdamW on CUDA (as nanoGPT's), pinned batches and a
loss scaler enabled only with CUDA; then Lightning's Trainer(accelerator="auto") and accelerate's
Accelerator() with their defaults, where they are installed (null where not: a user's install of
torch and torchada alone, as CI's minimal-install step has it). Prints one JSON line."""

import json
from contextlib import nullcontext

import torch
from torch.utils.data import DataLoader, TensorDataset


def auto_device(setting: str = "auto") -> str:
    if setting == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return setting


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 16, generator=g)
    y = (x @ torch.randn(16, 1, generator=g)).tanh()
    return TensorDataset(x, y)


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Linear(64, 1))


def train_fp32(device: str):
    """A plain float32 loop on ``device``: the reference is the same loop on the CPU."""
    use_cuda = device != "cpu"
    loader = DataLoader(data(), batch_size=32, pin_memory=torch.cuda.is_available() and use_cuda)
    net = model().to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    pinned, seen = [], set()
    for _ in range(3):
        for xb, yb in loader:
            pinned.append(xb.is_pinned())
            xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
            seen.add(str(xb.device))
            loss = torch.nn.functional.mse_loss(net(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    weights = {k: v.detach().cpu() for k, v in net.state_dict().items()}
    return weights, {"pinned": all(pinned), "devices": sorted(seen)}


def train_gpt_style(device: str):
    """Mixed precision chosen the way GPT training scripts choose it."""
    dtype = (
        "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
    )
    device_type = "cuda" if "cuda" in device else "cpu"
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[
        dtype
    ]
    ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type, ptdtype)
    scaler = torch.amp.GradScaler("cuda", enabled=(dtype == "float16"))
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    net = model().to(device)
    use_fused = device_type == "cuda"
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2, fused=use_fused)
    x, y = data().tensors
    x, y = x.to(device), y.to(device)
    losses, out_dtypes = [], set()
    for _ in range(8):
        with ctx:
            out = net(x)
            out_dtypes.add(str(out.dtype))
            loss = torch.nn.functional.mse_loss(out.float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return {
        "dtype": dtype,
        "autocast_dtypes": sorted(out_dtypes),
        "fused": use_fused,
        "scaler_enabled": scaler.is_enabled(),
        "param_device": str(next(net.parameters()).device),
        "losses": losses,
    }


def train_with_scaler(device: str):
    """fp16 autocast with GradScaler(enabled=use_cuda), as many CUDA examples write it."""
    use_cuda = torch.cuda.is_available()
    scaler = torch.amp.GradScaler("cuda", enabled=use_cuda)
    net = model().to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    x, y = data().tensors
    x, y = x.to(device), y.to(device)
    for _ in range(3):
        with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_cuda):
            loss = torch.nn.functional.mse_loss(net(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    return {"enabled": scaler.is_enabled(), "scale": scaler.get_scale() if use_cuda else None}


def lightning_auto():
    try:
        import lightning as L
    except ModuleNotFoundError:  # not installed
        return None

    class Regressor(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = model()
            self.devices = set()

        def training_step(self, batch, batch_idx):
            x, y = batch
            self.devices.add(str(x.device))
            return torch.nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    module = Regressor()
    trainer = L.Trainer(
        accelerator="auto",
        devices=1,
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module, DataLoader(data(), batch_size=64))
    return {
        "accelerator": type(trainer.accelerator).__name__,
        "root_device": str(trainer.strategy.root_device),
        "devices": sorted(module.devices),
    }


def accelerate_default():
    try:
        from accelerate import Accelerator
    except ModuleNotFoundError:  # not installed
        return None

    accelerator = Accelerator()
    net, loader = accelerator.prepare(model(), DataLoader(data(), batch_size=64))
    return {
        "device": str(accelerator.device),
        "param_device": str(next(net.parameters()).device),
        "batch_device": str(next(iter(loader))[0].device),
    }


device = auto_device()
weights, fp32 = train_fp32(device)
reference, _ = train_fp32("cpu")
print(
    json.dumps(
        {
            "is_available": torch.cuda.is_available(),
            "version_cuda": torch.version.cuda,
            "device": device,
            "fp32": fp32,
            "max_weight_diff_vs_cpu": max(
                (weights[k] - reference[k]).abs().max().item() for k in reference
            ),
            "gpt_style": train_gpt_style(device),
            "scaler": train_with_scaler(device),
            "lightning": lightning_auto(),
            "accelerate": accelerate_default(),
        }
    )
)
