"""Worked example (docs/native_ops.md): build the sync-counting override, then count how often a
small training loop waits for the device to read a value back.

    python -m torchada.run --simulate examples/native_override/count_syncs.py

(on a MUSA machine, drop --simulate.)
"""

from __future__ import annotations

import os
import sys

import torch

import torchada
from torchada import op_overrides

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "_local_scalar_dense"


def host_reads() -> int:
    return op_overrides.installed()[NAME]["calls"]


def train(steps: int, log_every_step: bool) -> int:
    """Runs a few steps; returns how many values were read back from the device."""
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = host_reads()
    total = torch.zeros((), device="cuda")
    for _ in range(steps):
        loss = model(torch.randn(8, 16, device="cuda")).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if log_every_step:
            print(f"  loss {loss.item():.4f}")  # one read per step
        else:
            total += loss.detach()  # stays on the device
    if not log_every_step:
        print(f"  mean loss {total.item() / steps:.4f}")  # one read in all
    return host_reads() - before


def main() -> int:
    if not torchada.is_enabled():
        print(f"needs MUSA: python -m torchada.run --simulate {sys.argv[0]}", file=sys.stderr)
        return 2
    op_overrides.load("torchada_example_sync_counter", [os.path.join(HERE, "sync_counter.cpp")])
    if NAME not in op_overrides.installed():
        print(f"the override is switched off (TORCHADA_DISABLE_OP_OVERRIDE_{NAME.upper()})")
        return 1
    every = train(5, log_every_step=True)
    once = train(5, log_every_step=False)
    print(f"host reads: {every} logging every step, {once} accumulating on the device")
    return 0


if __name__ == "__main__":
    sys.exit(main())
