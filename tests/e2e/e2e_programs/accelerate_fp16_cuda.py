"""An accelerate training loop written for NVIDIA GPUs: Accelerator(mixed_precision="fp16"),
prepare(), accelerator.backward() and a gradient-scaled optimizer step. Prints one JSON line."""

import json

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(512, 16)
y = (x @ torch.randn(16, 1)).tanh()
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Linear(64, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)

accelerator = Accelerator(mixed_precision="fp16")
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
seen = {"input": set(), "output_dtype": set(), "inner_dtype": set()}
# accelerate hands outputs back in float32; inside the model autocast runs the layers in fp16.
accelerator.unwrap_model(model)[0].register_forward_hook(
    lambda module, args, out: seen["inner_dtype"].add(str(out.dtype))
)
epoch_losses = []
for _epoch in range(4):
    total = 0.0
    for xb, yb in loader:
        seen["input"].add(str(xb.device))
        out = model(xb)
        seen["output_dtype"].add(str(out.dtype))
        loss = torch.nn.functional.mse_loss(out.float(), yb)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        total += loss.item()
    epoch_losses.append(total / len(loader))

accelerator.wait_for_everyone()
unwrapped = accelerator.unwrap_model(model)
print(
    json.dumps(
        {
            "device": str(accelerator.device),
            "is_cuda_device": accelerator.device == torch.device("cuda"),
            "inner_dtypes": sorted(seen["inner_dtype"]),
            "inputs": sorted(seen["input"]),
            "output_dtypes": sorted(seen["output_dtype"]),
            "param_device": str(next(unwrapped.parameters()).device),
            "param_dtype": str(next(unwrapped.parameters()).dtype),
            "scaler": type(accelerator.scaler).__name__ if accelerator.scaler else None,
            "scale": accelerator.scaler.get_scale() if accelerator.scaler else None,
            "epoch_losses": epoch_losses,
            "memory_allocated": torch.cuda.memory_allocated(accelerator.device),
        }
    )
)
