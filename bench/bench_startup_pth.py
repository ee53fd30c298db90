"""What ``torchada.pth`` costs at interpreter start where torchada is not active (its line is one
dictionary lookup then), and what choosing the devices costs where it is. Two throwaway virtual
environments over this interpreter see the same site-packages (through a path line, whose own
.pth files are then not run) and differ only in torchada's line: ``python -c pass`` is timed in
each, in fresh processes, with bytecode caches warm (a first run of each writes them).

    python -m pytest bench/bench_startup_pth.py --benchmark-only -s
"""

from __future__ import annotations

import os
import subprocess
import sysconfig
import venv

import pytest
from conftest import REPO, child_env, mark


def _environment(root: str, with_line: bool) -> str:
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(root)
    python = os.path.join(root, "bin", "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with open(os.path.join(purelib, "shared.pth"), "w") as f:
        # This checkout first: torchada_startup is the one its torchada.pth imports.
        f.write(f"{REPO}\n{sysconfig.get_paths()['purelib']}\n")
    if with_line:
        with open(os.path.join(REPO, "torchada.pth")) as src:
            line = src.read()
        with open(os.path.join(purelib, "zz_torchada.pth"), "w") as f:
            f.write(line)  # after shared.pth, as torchada.pth sorts after the editable finder
    return python


@pytest.fixture(scope="module")
def pythons(tmp_path_factory):
    base = tmp_path_factory.mktemp("startup")
    out = {
        "without": _environment(str(base / "without"), False),
        "with": _environment(str(base / "with"), True),
    }
    for python in out.values():  # warm the bytecode caches
        _start(python, {"TORCHADA_ACTIVE": "1", "CUDA_VISIBLE_DEVICES": "1"})
    return out


def _start(python: str, extra: dict) -> None:
    subprocess.run(
        [python, "-c", "pass"],
        check=True,
        env=child_env(extra),
        cwd="/",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _time(benchmark, python: str, extra: dict) -> None:
    benchmark.pedantic(_start, args=(python, extra), rounds=40, warmup_rounds=3)


@pytest.mark.benchmark(group="start-up .pth: torchada not active")
def test_start_without_the_pth(benchmark, pythons):
    mark(benchmark, "baseline")
    _time(benchmark, pythons["without"], {})


@pytest.mark.benchmark(group="start-up .pth: torchada not active")
def test_start_with_the_pth_inactive(benchmark, pythons):
    mark(benchmark, "candidate", target=1.02)
    _time(benchmark, pythons["with"], {})


@pytest.mark.benchmark(group="start-up .pth: torchada active")
def test_start_without_the_pth_active_env(benchmark, pythons):
    mark(benchmark, "baseline")
    _time(benchmark, pythons["without"], {"TORCHADA_ACTIVE": "1", "CUDA_VISIBLE_DEVICES": "1"})


@pytest.mark.benchmark(group="start-up .pth: torchada active")
def test_start_with_the_pth_active(benchmark, pythons):
    mark(benchmark, "candidate")
    _time(benchmark, pythons["with"], {"TORCHADA_ACTIVE": "1", "CUDA_VISIBLE_DEVICES": "1"})
