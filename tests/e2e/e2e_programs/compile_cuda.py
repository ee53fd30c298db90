"""torch.compile on CUDA: a small transformer-style block, compiled with the default backend
(Inductor), against eager: forward outputs, gradients, and a few training steps with the compiled
model and a compiled optimizer step. Prints one JSON line."""

import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


def with_positions(x: torch.Tensor) -> torch.Tensor:
    # Tensors created inside compiled code on "cuda", as CUDA programs write them.
    t = x.shape[1]
    pos = torch.arange(t, device="cuda").float().unsqueeze(-1) / t
    mask = torch.ones(t, t, device=x.device).tril()
    scale = torch.tensor(2.0, device=torch.device("cuda"))
    if x.is_cuda and x.device == torch.device("cuda", 0):
        scale = scale + 1
    return (mask @ (x + pos)) * scale


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="inductor")
    args = parser.parse_args()

    torch.manual_seed(0)
    eager = Block().cuda()
    model = Block().cuda()
    model.load_state_dict(eager.state_dict())
    compiled = torch.compile(model, backend=args.backend)
    x = torch.randn(2, 8, 32, device="cuda")

    out_eager = eager(x)
    out_compiled = compiled(x)
    out_eager.square().mean().backward()
    out_compiled.square().mean().backward()
    fwd_diff = (out_eager - out_compiled).abs().max().item()
    grad_diff = max(
        (a.grad - b.grad).abs().max().item() for a, b in zip(eager.parameters(), model.parameters())
    )

    # Training with the compiled model and a compiled optimizer step (as in PyTorch's compiled
    # optimizer recipe), against the same steps in eager mode.
    opt_e = torch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    opt_c = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    @torch.compile(backend=args.backend)
    def compiled_opt_step():
        opt_c.step()

    losses_e, losses_c = [], []
    for _ in range(3):
        for m, opt, losses in ((eager, opt_e, losses_e), (compiled, opt_c, losses_c)):
            opt.zero_grad(set_to_none=True)
            loss = m(x).square().mean()
            loss.backward()
            if opt is opt_c:
                compiled_opt_step()
            else:
                opt.step()
            losses.append(loss.item())
    weight_diff = max(
        (a - b).abs().max().item() for a, b in zip(eager.parameters(), model.parameters())
    )
    y = torch.randn(2, 8, 32, device="cuda")
    created = torch.compile(with_positions, backend=args.backend, fullgraph=True)(y)
    created_diff = (created - with_positions(y)).abs().max().item()
    torch.cuda.synchronize()
    print(
        json.dumps(
            {
                "backend": args.backend,
                "device": str(out_compiled.device),
                "fwd_diff": fwd_diff,
                "grad_diff": grad_diff,
                "weight_diff": weight_diff,
                "created_device": str(created.device),
                "created_diff": created_diff,
                "losses_eager": losses_e,
                "losses_compiled": losses_c,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
