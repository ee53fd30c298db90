"""Where a cold build of torchada's native libraries spends its time: each translation unit of
``torchada_native`` (what a MUSA user's first run builds) and of the simulator's backend
(``torchada_musa_sim``, built on the simulated path only), compiled alone with the very command
torch's extension builder wrote, one at a time, timed as wall and as user+sys CPU seconds (on a
machine shared with other work the CPU figure is the one that holds; the wall figure grows with the
load).

    python bench/native_units.py [--library torchada_native] [--rounds 1]

The libraries are first built (or found) in a temporary cache, with the simulator, as a first run
builds them; then each unit of each is compiled again in a scratch directory. The last column,
"2 cores", is what the units of the library take on two idle cores (the longest of a greedy
split), the floor of its cold build before the link.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

LIBRARIES = ("torchada_native", "torchada_musa_sim")

BUILD = """
import sys
from torchada import _simulator
_simulator.activate()
from torchada._native import build, library
assert library.load() is not None, library.state()
print(build.last_build("torchada_native").path.parent)
print(build.last_build("torchada_musa_sim").path.parent)
"""


def compile_commands(build_dir: Path) -> Dict[str, str]:
    """``{object file: command}`` for the compile steps of a torch extension's ninja file."""
    ninja = subprocess.run(
        [sys.executable, "-c", "import ninja; print(ninja.BIN_DIR)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    listed = subprocess.run(
        [os.path.join(ninja, "ninja"), "-t", "commands"],
        cwd=build_dir,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    commands = {}
    for line in listed:
        words = shlex.split(line)
        if " -c " in line and "-o" in words:
            commands[words[words.index("-o") + 1]] = line
    return commands


def timed(command: str, cwd: str) -> Tuple[float, float]:
    """Wall and user+sys CPU seconds of one shell command (and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, shell=True, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def two_cores(cpu: List[float]) -> float:
    """The longer of two cores' shares when the units go, longest first, to the less loaded."""
    cores = [0.0, 0.0]
    for seconds in sorted(cpu, reverse=True):
        cores[cores.index(min(cores))] += seconds
    return max(cores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", choices=LIBRARIES, action="append")
    parser.add_argument("--rounds", type=int, default=1, help="compiles per unit (best is kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TORCHADA_CACHE_DIR=cache, TORCHADA_QUIET="1")
        start = time.perf_counter()
        dirs = subprocess.run(
            [sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        print(f"built both in a fresh cache: {time.perf_counter() - start:.1f} s wall")
        for name, build_dir in zip(LIBRARIES, map(Path, dirs)):
            if args.library and name not in args.library:
                continue
            print(f"\n{name}  (unit: wall s, user+sys s)")
            cpu = []
            for obj, command in sorted(compile_commands(build_dir).items()):
                with tempfile.TemporaryDirectory() as scratch:
                    runs = [timed(command, scratch) for _ in range(args.rounds)]
                wall, seconds = min(runs, key=lambda r: r[1])
                cpu.append(seconds)
                print(f"  {obj:<24} {wall:7.1f} {seconds:7.1f}")
            print(f"  {'all units':<24} {'':7} {sum(cpu):7.1f}   2 cores: {two_cores(cpu):.1f} s")


if __name__ == "__main__":
    main()
