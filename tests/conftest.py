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
