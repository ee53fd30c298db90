"""Where the simulator's training step spends its time: bench_simulator.py's tiny model, each
phase of the step (zero_grad, forward, backward, optimizer step) timed inside the step loop, on
CPU tensors and on the simulated musa device, best of several runs.

    TORCHADA_SIMULATE=1 python bench/sim_step_phases.py [--threads N] [--steps 300] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_simulator import tiny_training  # noqa: E402

PHASES = ("zero_grad", "forward", "backward", "optimizer step")


def phase_times(device: str, steps: int, runs: int) -> dict:
    """Best per-step microseconds of each phase, and of the whole step."""
    model, opt, x, y = tiny_training(device)
    clock = time.perf_counter
    best = dict.fromkeys((*PHASES, "step"), float("inf"))
    for run in range(runs + 1):  # the first run warms up
        spent = dict.fromkeys(PHASES, 0.0)
        start = clock()
        for _ in range(steps):
            t0 = clock()
            opt.zero_grad()
            t1 = clock()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            t2 = clock()
            loss.backward()
            t3 = clock()
            opt.step()
            t4 = clock()
            for name, dt in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                spent[name] += dt
        total = clock() - start
        if run:
            for name in PHASES:
                best[name] = min(best[name], spent[name] / steps * 1e6)
            best["step"] = min(best["step"], total / steps * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, help="intra-op threads (default: torch's)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if not hasattr(torch, "musa"):
        sys.exit("no musa device: run with TORCHADA_SIMULATE=1")
    cpu = phase_times("cpu", args.steps, args.runs)
    musa = phase_times("musa", args.steps, args.runs)
    print(f"{torch.get_num_threads()} intra-op thread(s), best of {args.runs} x {args.steps} steps")
    print(f"{'phase':16} {'cpu us':>8} {'musa us':>8} {'ratio':>6}")
    for name in (*PHASES, "step"):
        print(f"{name:16} {cpu[name]:8.0f} {musa[name]:8.0f} {musa[name] / cpu[name]:6.2f}")


if __name__ == "__main__":
    main()
