"""A program written for NVIDIA GPUs with nn.DataParallel over every visible GPU, and
torch.cuda.comm's broadcast/scatter/gather. Prints one JSON line."""

import json
import warnings

import torch
import torch.cuda.comm as comm
from torch import nn

# torch warns that it has no NCCL (reduce_add then adds on the device), on CUDA builds without it
# as on MUSA.
warnings.filterwarnings("ignore", message="PyTorch is not compiled with NCCL support")


def net():
    return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))


def main():
    torch.manual_seed(0)
    model, ref = net(), net()
    ref.load_state_dict(model.state_dict())
    model = nn.DataParallel(model).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(16, 4, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    losses = []
    for _ in range(5):
        opt.zero_grad()
        ref_opt.zero_grad()
        loss = nn.functional.mse_loss(model(x.cuda()), y.cuda())
        loss.backward()
        nn.functional.mse_loss(ref(x), y).backward()
        opt.step()
        ref_opt.step()
        losses.append(loss.item())
    weight_diff = max(
        (p.detach().cpu() - q.detach()).abs().max().item()
        for p, q in zip(model.module.parameters(), ref.parameters())
    )
    copies = comm.broadcast(torch.arange(3.0, device="cuda"), devices=[0, 1])
    chunks = comm.scatter(torch.arange(6.0).cuda(), devices=["cuda:0", "cuda:1"])
    gathered = comm.gather(chunks, destination="cuda:1")
    print(
        json.dumps(
            {
                "device_ids": model.device_ids,
                "param_device": str(next(model.parameters()).device),
                "losses": losses,
                "weight_diff": weight_diff,
                "broadcast": [[str(t.device), t.tolist()] for t in copies],
                "scatter": [[str(t.device), t.tolist()] for t in chunks],
                "gather": [str(gathered.device), gathered.tolist()],
            }
        )
    )


if __name__ == "__main__":
    main()
