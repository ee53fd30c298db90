"""Runs the test suite as parts side by side, one pytest process each: ``python tools/test_parts.py
[JOBS]`` (tools/test.sh calls it when given no arguments).

The suite is mostly one process at a time (a test starts a fresh interpreter and waits for it),
so one pytest keeps one core busy; the parts keep two. The folders of each part are in
``tools/test_parts.json`` (measured times, so the parts take about as long as each other); the
last part is every folder and top-level test file that no other part names, so a new folder is
never left out. Each line a part prints comes prefixed with its number as soon as it is printed;
while no part prints, a line every 60 s says which are still running. The exit status is the
first failing part's, else 0.

Example::

    python tools/test_parts.py 2     # two pytest processes
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEARTBEAT_S = 60.0


def parts(jobs: int) -> "list[list[str]]":
    """The pytest paths of each part, ``jobs`` parts at most (the named parts first)."""
    named = json.loads((REPO / "tools" / "test_parts.json").read_text())["parts"][: jobs - 1]
    taken = {path for part in named for path in part}
    for path in taken:
        if not (REPO / path).exists():
            raise SystemExit(f"tools/test_parts.json names {path!r}, which does not exist")
    tests = REPO / "tests"
    everything = sorted(
        str(p.relative_to(REPO))
        for p in tests.iterdir()
        if (p.is_dir() and any(p.rglob("test_*.py"))) or p.name.startswith("test_")
    )
    rest = [path for path in everything if path not in taken]
    return [part for part in [*named, rest] if part]


def _pump(index: int, stream, lines: "queue.Queue") -> None:
    for line in stream:
        lines.put((index, line.rstrip("\n")))
    lines.put((index, None))


def main(argv: "list[str]") -> int:
    jobs = int(argv[0]) if argv else 2
    if jobs < 1:
        raise SystemExit(f"tools/test_parts.py: JOBS must be 1 or more, not {jobs}")
    todo = parts(jobs)
    lines: "queue.Queue" = queue.Queue()
    procs, started = [], time.monotonic()
    for i, paths in enumerate(todo, 1):
        print(f"[part {i}] python -m pytest -q {' '.join(paths)}", flush=True)
        proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "pytest", "-q", *paths],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        procs.append(proc)
        threading.Thread(target=_pump, args=(i, proc.stdout, lines), daemon=True).start()
    running = set(range(1, len(procs) + 1))
    while running:
        try:
            index, line = lines.get(timeout=HEARTBEAT_S)
        except queue.Empty:
            names = ", ".join(f"part {i}" for i in sorted(running))
            print(f"still running: {names} ({time.monotonic() - started:.0f} s)", flush=True)
            continue
        if line is None:
            running.discard(index)
            status = procs[index - 1].wait()
            took = time.monotonic() - started
            print(f"[part {index}] exit {status} after {took:.0f} s", flush=True)
        else:
            print(f"[part {index}] {line}", flush=True)
    # Every part has ended and been waited for above.
    return next((proc.returncode for proc in procs if proc.returncode), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
