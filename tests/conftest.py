"""Shared fixtures. The simulator, once activated, stays for the whole test process (a backend
rename cannot be undone); tests that need a pristine interpreter run a subprocess."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def musa_sim():
    """The simulated torch_musa module, activated in this process."""
    from torchada import _simulator

    return _simulator.activate()


@pytest.fixture
def musa_runtime_errors_read():
    """Reads the simulated runtime's pending error after a test that provokes runtime errors:
    errors are sticky until read, as CUDA's are, so a later test's launch check in the same
    process would otherwise report this test's error as its own."""
    yield
    from torchada._simulator import sdk

    sdk.load("musart").musaGetLastError()


@pytest.fixture(scope="module")
def torchada_on(musa_sim):
    """torchada enabled on the simulator for a whole test module, and disabled after it."""
    import torchada

    assert torchada.enable()
    yield
    torchada.disable()


def run_python(code: str, env: "dict | None" = None, timeout: float = 300, cwd=None):
    """Run ``code`` in a fresh interpreter; returns the CompletedProcess (text mode)."""
    full_env = dict(os.environ)
    full_env.pop("TORCHADA_SIMULATE", None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=cwd or REPO,
    )


@pytest.fixture
def py():
    return run_python


# ---------------------------------------------------------------- the simulator as a package
# On a MUSA machine torch_musa is an installed package whose own `torch.backends` entry point
# imports it at the end of `import torch`. `simulator_env(order)` gives a child process that
# state: the simulator's metadata (written by `python -m torchada simulator install`) and its
# package directory on PYTHONPATH, with torch_musa's entry point found before torchada's
# (order="musa-first") or after it ("musa-last"). "switch" is TORCHADA_SIMULATE=1 instead.
SIM_ORDERS = ("musa-first", "musa-last", "switch")
_SIM_TARGET = os.path.join(tempfile.gettempdir(), f"torchada-test-sim-{os.getpid()}")


def _installed_simulator() -> str:
    from torchada._simulator import SITE
    from torchada._simulator.install import install, is_installed

    if not is_installed(_SIM_TARGET):
        install(_SIM_TARGET)
    return SITE


def simulator_env(order: str, base: "dict | None" = None) -> dict:
    """An environment (copied from ``base``, default os.environ, without inherited torchada
    switches) in which a child's `import torch` meets the simulator as ``order`` says, and
    imports this checkout's torchada."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _INHERITED}
    theirs = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if order == "switch":
        env["TORCHADA_SIMULATE"] = "1"
        path = [REPO]
    elif order == "musa-first":
        path = [_SIM_TARGET, _installed_simulator(), REPO]
    elif order == "musa-last":
        # site-packages first: torchada's entry point (its dist-info there) is found first.
        path = [sysconfig.get_paths()["purelib"], REPO, _SIM_TARGET, _installed_simulator()]
    else:
        raise ValueError(order)
    env["PYTHONPATH"] = os.pathsep.join(path + theirs)
    return env


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_SIM_TARGET, ignore_errors=True)


# ---------------------------------------------------------------- end-to-end CUDA programs
# The two ways a CUDA-written program meets torchada, without any other change to it:
#   "runner": python -m torchada.run --simulate prog.py ...
#   "import": the program with `import torchada` added as its first line, run as
#             python prog.py ... with TORCHADA_SIMULATE=1 (the simulator's switch; on a MUSA
#             machine the line alone is the whole port).
#   "child":  the simulator installed as a package (its own entry point, as on a MUSA machine);
#             a parent process that did `import torchada` starts the program (with `import
#             torchada` as its first line) as a child, which inherits TORCHADA_ACTIVE=1.
# With torchrun=True the program is started by torch.distributed.run with two processes per node
# (under the runner: python -m torchada.run --simulate -m torch.distributed.run ...).
E2E_MODES = ("runner", "import", "child")
_CHILD_PARENT = """
import subprocess, sys
import torchada
assert torchada.is_enabled(), "the parent did not turn torchada on"
sys.exit(subprocess.run([sys.executable, *sys.argv[1:]]).returncode)
"""
_INHERITED = ("TORCHADA_SIMULATE", "TORCHADA_ACTIVE", "TORCHADA_REPORT", "TORCHADA_REPORT_OWNER")


def run_cuda_program(
    mode: str,
    program: str,
    args=(),
    *,
    workdir,
    torchrun: bool = False,
    timeout: float = 400,
    extra_env=None,
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in _INHERITED}
    env.update(extra_env or {})
    # This checkout's torchada, in the program and in every process it starts.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    launcher = launcher if torchrun else []
    if mode == "runner":
        cmd = [sys.executable, "-m", "torchada.run", "--simulate", *launcher, program]
    elif mode in ("import", "child"):
        with open(program) as f:
            source = f.read()
        ported = os.path.join(str(workdir), "imported_" + os.path.basename(program))
        with open(ported, "w") as f:
            f.write("import torchada\n" + source)
        if mode == "import":
            env["TORCHADA_SIMULATE"] = "1"
            cmd = [sys.executable, *launcher, ported]
        else:
            env = simulator_env("musa-first", env)
            cmd = [sys.executable, "-c", _CHILD_PARENT, *launcher, ported]
    else:
        raise ValueError(mode)
    return subprocess.run(
        [*cmd, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=str(workdir),
    )


def program_result(r: subprocess.CompletedProcess) -> dict:
    """The last JSON line a program printed, after checking that it exited cleanly."""
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    assert lines, r.stdout[-2000:]
    return json.loads(lines[-1])


def decreasing(values) -> bool:
    """Whether a run's losses are finite and end below where they started."""
    return all(math.isfinite(v) for v in values) and values[-1] < values[0]


@pytest.fixture
def cuda_program():
    """``cuda_program(mode, program, args, workdir=..., torchrun=False)``: see run_cuda_program."""
    return run_cuda_program


def pytest_collection_modifyitems(config, items):
    # Tests on the (simulated) MUSA device: those that take the simulator or torchada itself.
    for item in items:
        if {"musa_sim", "torchada_on"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.musa)


# Everything torchada may load where it has nothing to do (CPU, CUDA): the platform check, the
# entry point and the public API's module. No tables, no import hooks, no wrapt.
OFF_MUSA_MODULES = {
    "torchada",
    "torchada._activation",
    "torchada._autoload",
    "torchada._core",
    "torchada._core.env",
    "torchada._core.platform",
    "torchada._simulator",
    "torchada_hooks",
    "torchada_hooks.completion",
}

_LOADED_BY_TORCHADA = """
import json, sys, torch
import torchada
assert not torchada.is_enabled()
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("torchada", "wrapt")))))
"""


def modules_loaded_off_musa() -> set:
    """torchada's (and wrapt's) modules in sys.modules after `import torch; import torchada` in
    a fresh process with no simulation (a CPU or CUDA machine)."""
    r = run_python(_LOADED_BY_TORCHADA)
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout.strip().splitlines()[-1]))
