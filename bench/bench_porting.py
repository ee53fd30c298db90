"""Throughput of the source porter.

    python -m pytest bench/bench_porting.py --benchmark-only -q

Two porters on the same text: run it in each checkout with the same ``TORCHADA_PORT_CORPUS``.

The corpus is the golden extension sources (tests/porting/porting_golden/input) repeated to ~3 MB.
They are denser in CUDA API use than typical extension code, so this is a conservative figure.
Timings are CPU time (``time.process_time``) so that other load on the machine does not skew them;
``extra_info`` carries MB/s for the best and the mean round.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Dict

import pytest

from torchada.porting import port_source, port_tree

#: The corpus: the golden inputs; TORCHADA_PORT_CORPUS names another folder (an older checkout's
#: golden inputs, to compare two porters on the same text).
GOLDEN = Path(
    os.environ.get("TORCHADA_PORT_CORPUS")
    or Path(__file__).resolve().parent.parent / "tests" / "porting_golden" / "input"
)
TARGET_BYTES = 3_000_000
#: Required throughput; override for slower machines with TORCHADA_PORT_MIN_MBPS.
MIN_MBPS = float(os.environ.get("TORCHADA_PORT_MIN_MBPS", "20"))


def _golden_sources() -> Dict[str, str]:
    return {
        p.name: p.read_text("utf-8")
        for p in sorted(GOLDEN.iterdir())
        if p.is_file() and p.suffix not in (".mu", ".muh")
    }


@pytest.fixture(scope="module")
def corpus() -> str:
    unit = "\n".join(_golden_sources().values())
    return "\n".join([unit] * (TARGET_BYTES // len(unit) + 1))


def _record(benchmark, nbytes: int) -> float:
    stats = benchmark.stats.stats
    best = nbytes / stats.min / 1e6
    benchmark.extra_info["bytes"] = nbytes
    benchmark.extra_info["MB/s (best)"] = round(best, 1)
    benchmark.extra_info["MB/s (mean)"] = round(nbytes / stats.mean / 1e6, 1)
    return best


@pytest.mark.benchmark(group="porting", timer=time.process_time)
def test_port_source_throughput(benchmark, corpus: str) -> None:
    ported, report = benchmark.pedantic(
        port_source, args=(corpus,), rounds=7, iterations=1, warmup_rounds=1
    )
    assert report.translation_count > 10_000 and ported != corpus
    best = _record(benchmark, len(corpus.encode("utf-8")))
    assert best >= MIN_MBPS, f"porting ran at {best:.1f} MB/s, below {MIN_MBPS} MB/s"


@pytest.fixture(scope="module")
def source_tree(tmp_path_factory) -> Path:
    """~3 MB tree: the golden sources copied into enough sub-directories."""
    root = tmp_path_factory.mktemp("bench_src")
    sources = _golden_sources()
    unit = sum(len(t.encode("utf-8")) for t in sources.values())
    for i in range(TARGET_BYTES // unit + 1):
        sub = root / f"pkg{i:03d}"
        sub.mkdir()
        for name, text in sources.items():
            (sub / name).write_text(text, "utf-8")
    shutil.copy(GOLDEN / "handwritten.mu", root / "pkg000" / "handwritten.mu")
    return root


def _tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


@pytest.mark.benchmark(group="porting", timer=time.process_time)
def test_port_tree_cold(benchmark, source_tree: Path, tmp_path: Path) -> None:
    """A full port into an empty output directory (read, port, write every file)."""
    counter = iter(range(1_000))

    def fresh_out():
        return (source_tree, tmp_path / f"out{next(counter)}"), {}

    report = benchmark.pedantic(port_tree, setup=fresh_out, rounds=3, iterations=1)
    assert report.written and report.totals()["translations"] > 10_000
    _record(benchmark, _tree_bytes(source_tree))


@pytest.mark.benchmark(group="porting", timer=time.process_time)
def test_port_tree_nothing_changed(benchmark, source_tree: Path, tmp_path: Path) -> None:
    """Second run on an unchanged tree: nothing is ported again and nothing is written."""
    out = tmp_path / "out"
    port_tree(source_tree, out)
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}

    report = benchmark.pedantic(port_tree, args=(source_tree, out), rounds=5, iterations=1)

    assert report.written == []
    assert {r.status for r in report.files} == {"cached"}
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == stamps
    benchmark.extra_info["files"] = len(report.files)
    benchmark.extra_info["written"] = len(report.written)
    _record(benchmark, _tree_bytes(source_tree))
