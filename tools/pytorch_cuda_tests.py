"""Runs PyTorch's own CUDA tests (test_cuda.py, test_cuda_multigpu.py) through torchada on the
simulated MUSA device, and counts the outcomes.

    python tools/pytorch_cuda_tests.py DIR [-j JOBS] [-k EXPR] [--out results.json]

DIR holds unmodified copies of PyTorch's ``test/test_cuda.py`` and ``test/test_cuda_multigpu.py``
(the project does not ship them). They are copied into a scratch folder with a conftest that asks
for the simulator and imports torchada before any test module (torch.testing reads
``torch.cuda.is_available()`` at import: True on MUSA, so the CUDA branches run). PyTorch runs
its CUDA graph tests only where torch.version.cuda is set, which it is not on MUSA, so the
conftest turns them on (``--no-graphs`` leaves them
skipped); a capture that a failing test leaves open is ended after it. Each test class runs in a
process of its own, with a time limit per test and a cap on the address space, so that a test
that sets a memory fraction or allocates many GiB fails alone. Needs pytest-timeout.

The two names of newer ``common_utils`` that the copies import (``TEST_CUDAMALLOCASYNC``,
``skipIfSandcastle``) are defined by the conftest when the installed torch lacks them: version
skew between the copies and the torch, not something the adapter does.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Tuple

FILES = ("test_cuda.py", "test_cuda_multigpu.py")

CONFTEST = """\
import os
os.environ.setdefault("TORCHADA_SIMULATE", "1")
import unittest

import torchada  # noqa: F401  (before torch.testing reads torch.cuda)
import torch
import torch.testing._internal.common_utils as common_utils

# Names of a newer common_utils than the installed torch's (skew, not the adapter).
if not hasattr(common_utils, "TEST_CUDAMALLOCASYNC"):
    common_utils.TEST_CUDAMALLOCASYNC = (
        common_utils.TEST_CUDA and torch.cuda.get_allocator_backend() == "cudaMallocAsync"
    )
if not hasattr(common_utils, "skipIfSandcastle"):
    common_utils.skipIfSandcastle = lambda reason: unittest.skipIf(
        common_utils.IS_SANDCASTLE, reason
    )
if os.environ.get("TORCHADA_PYTORCH_TESTS_GRAPHS") == "1":
    # PyTorch gates its graph tests on torch.version.cuda, which stays None on MUSA.
    common_utils.TEST_CUDA_GRAPH = True

import pytest

_capturing = []
_capture_begin = torch.cuda.CUDAGraph.capture_begin
_capture_end = torch.cuda.CUDAGraph.capture_end


def _begin(self, *args, **kwargs):
    _capturing.append(self)
    return _capture_begin(self, *args, **kwargs)


def _end(self, *args, **kwargs):
    if self in _capturing:
        _capturing.remove(self)
    return _capture_end(self, *args, **kwargs)


torch.cuda.CUDAGraph.capture_begin = _begin
torch.cuda.CUDAGraph.capture_end = _end


@pytest.fixture(autouse=True)
def _end_captures_left_open():
    # A test that fails inside a capture leaves it open; the next tests of the class would
    # then fail on their first host synchronisation. End it, as a process per test would.
    yield
    while _capturing:
        try:
            _end(_capturing[-1])
        except Exception:
            _capturing.pop()
"""


def _classes(work: Path, name: str) -> List[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", name],
        cwd=work,
        capture_output=True,
        text=True,
    )
    found = []
    for line in out.stdout.splitlines():
        m = re.match(r"([\w/.]+\.py)::(\w+)::", line)
        if m and m.group(2) not in found:
            found.append(m.group(2))
    if not found:
        sys.stderr.write(out.stdout[-4000:] + out.stderr[-4000:])
    return found


def _run_class(work: Path, name: str, cls: str, kexpr: str, mem_gib: int) -> Path:
    report = work / f"{name}-{cls}.xml"
    cmd = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout=60",
        f"--junitxml={report}", f"{name}::{cls}",
    ]  # fmt: skip
    if kexpr:
        cmd += ["-k", kexpr]
    limit = f"ulimit -v {mem_gib * 1024 * 1024}; " if mem_gib else ""
    shell = limit + " ".join(f"'{c}'" for c in cmd)
    with open(work / f"{name}-{cls}.log", "w") as log:
        subprocess.run(["bash", "-c", shell], cwd=work, stdout=log, stderr=subprocess.STDOUT)
    return report


def _outcomes(report: Path) -> Dict[str, Tuple[str, str]]:
    if not report.exists():
        return {f"{report.stem}::<crashed>": ("error", "the process died before writing a report")}
    results = {}
    for case in ET.parse(report).iter("testcase"):
        test = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        outcome, text = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                text = (node.get("message") or "").strip().splitlines()
                text = text[0][:300] if text else ""
                break
        results[test] = (outcome, text)
    return results


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", help="folder with PyTorch's test_cuda.py and test_cuda_multigpu.py")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="test classes run at once")
    parser.add_argument("-k", default="", help="pytest -k expression, passed on")
    parser.add_argument("--out", help="write every test's outcome and message here (JSON)")
    parser.add_argument("--mem-gib", type=int, default=12, help="address-space cap per process")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (logs)")
    parser.add_argument(
        "--no-graphs",
        action="store_true",
        help="leave the CUDA graph tests skipped (PyTorch runs them only where torch.version.cuda "
        "is set, which it is not on MUSA; by default they run)",
    )
    args = parser.parse_args(argv)
    source = Path(args.dir)
    missing = [f for f in FILES if not (source / f).is_file()]
    if missing:
        parser.error(f"{source} lacks {', '.join(missing)}: copy them from PyTorch's test/ folder")
    work = Path(tempfile.mkdtemp(prefix="torchada-pytorch-tests-"))
    for f in FILES:
        shutil.copy(source / f, work / f)
    (work / "conftest.py").write_text(CONFTEST)
    os.environ["TORCHADA_PYTORCH_TESTS_GRAPHS"] = "0" if args.no_graphs else "1"
    results: Dict[str, Tuple[str, str]] = {}
    jobs = []
    for name in FILES:
        classes = _classes(work, name)
        if not classes:
            results[f"{name}::<collection>"] = ("error", "collection failed")
        jobs += [(name, cls) for cls in classes]
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        reports = pool.map(lambda job: _run_class(work, *job, args.k, args.mem_gib), jobs)
        for (name, _), report in zip(jobs, reports):
            for test, outcome in _outcomes(report).items():
                results[f"{name}::{test}"] = outcome
    counts = collections.Counter(outcome for outcome, _ in results.values())
    for name in FILES:
        mine = collections.Counter(o for t, (o, _) in results.items() if t.startswith(name))
        print(f"{name}: " + ", ".join(f"{n} {k}" for k, n in sorted(mine.items())))
    print("total: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    if args.keep:
        print(f"logs in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
