"""Shared fixtures. The simulator, once activated, stays for the whole test process (a backend
rename cannot be undone); tests that need a pristine interpreter run a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def musa_sim():
    """The simulated torch_musa module, activated in this process."""
    from torchada import _simulator

    return _simulator.activate()


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


# ---------------------------------------------------------------- end-to-end CUDA programs
# The two ways a CUDA-written program meets torchada, without any other change to it:
#   "runner": python -m torchada.run --simulate prog.py ...
#   "import": the program with `import torchada` added as its first line, run as
#             python prog.py ... with TORCHADA_SIMULATE=1 (the simulator's switch; on a MUSA
#             machine the line alone is the whole port).
# With torchrun=True the program is started by torch.distributed.run with two processes per node
# (under the runner: python -m torchada.run --simulate -m torch.distributed.run ...).
E2E_MODES = ("runner", "import")
_INHERITED = ("TORCHADA_SIMULATE", "TORCHADA_ACTIVE", "TORCHADA_REPORT", "TORCHADA_REPORT_OWNER")


def run_cuda_program(
    mode: str,
    program: str,
    args=(),
    *,
    workdir,
    torchrun: bool = False,
    timeout: float = 400,
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in _INHERITED}
    # This checkout's torchada, in the program and in every process it starts.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    launcher = launcher if torchrun else []
    if mode == "runner":
        cmd = [sys.executable, "-m", "torchada.run", "--simulate", *launcher, program]
    elif mode == "import":
        with open(program) as f:
            source = f.read()
        ported = os.path.join(str(workdir), "imported_" + os.path.basename(program))
        with open(ported, "w") as f:
            f.write("import torchada\n" + source)
        env["TORCHADA_SIMULATE"] = "1"
        cmd = [sys.executable, *launcher, ported]
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


@pytest.fixture
def cuda_program():
    """``cuda_program(mode, program, args, workdir=..., torchrun=False)``: see run_cuda_program."""
    return run_cuda_program
