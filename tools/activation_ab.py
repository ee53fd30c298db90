"""Compares activation on the simulator between another checkout and this one, in alternating fresh
processes, so that both see the same machine load.

    python tools/activation_ab.py OTHER_CHECKOUT [--pairs N]

Each process imports torch and torch_musa (the simulator), then times ``import torchada`` in CPU
time (on a busy machine wall time also counts other processes' turns); the two checkouts take
turns, each on ``PYTHONPATH``, in the benchmarks' environment (``bench/conftest.py``'s
``child_env``: none of this process's switches, bytecode caches warm, as users run). Prints the
medians of each side and the median of the pairwise differences (other minus this), in CPU ms.

Example (the previous revision against this checkout)::

    git worktree add /tmp/old HEAD~1
    python tools/activation_ab.py /tmp/old --pairs 11
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

HERE = Path(__file__).resolve().parent.parent

# The benchmarks' environment for measured children: no switch of this process leaks in, and
# bytecode is cached.
sys.path.insert(0, str(HERE / "bench"))
from conftest import child_env  # noqa: E402

TIMED = """
import time, torch, torch_musa
t = time.process_time()
import torchada
print((time.process_time() - t) * 1e3)
"""


def activation_ms(checkout: Path) -> float:
    """``import torchada``'s CPU ms in a fresh process running ``checkout``."""
    env = child_env({"PYTHONPATH": str(checkout), "TORCHADA_SIMULATE": "1"})
    out = subprocess.run(
        [sys.executable, "-c", TIMED],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(out.strip().splitlines()[-1])


def pairs(other: Path, count: int) -> List[Tuple[float, float]]:
    """``count`` (other, this) pairs, after one unmeasured warm-up run of each."""
    activation_ms(other), activation_ms(HERE)
    return [(activation_ms(other), activation_ms(HERE)) for _ in range(count)]


def main(argv: "List[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("other", type=Path, help="the checkout to compare this one with")
    parser.add_argument("--pairs", type=int, default=11, help="pairs of processes (default 11)")
    args = parser.parse_args(argv)
    if not (args.other / "torchada" / "__init__.py").is_file():
        parser.error(f"{args.other} is not a torchada checkout (no torchada/__init__.py there)")
    if args.pairs < 1:
        parser.error(f"--pairs must be at least 1, not {args.pairs}")
    measured = pairs(args.other.resolve(), args.pairs)
    other = statistics.median(a for a, _ in measured)
    this = statistics.median(b for _, b in measured)
    diff = statistics.median(a - b for a, b in measured)
    n = len(measured)
    print(f"CPU ms: other {other:.1f}, this {this:.1f}, other - this {diff:+.1f} ({n} pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
