"""The torchada_hooks package itself: public API and import footprint."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import torchada_hooks


def test_public_api():
    assert set(torchada_hooks.__all__) == {
        "ImportHooks",
        "ProxyFinder",
        "ProxyLoader",
        "ProxyModule",
        "SwapLedger",
        "is_sealed",
        "proxy_spec",
        "seal",
        "seal_on_first_use",
    }
    for name in torchada_hooks.__all__:
        assert getattr(torchada_hooks, name) is not None
    assert issubclass(torchada_hooks.ProxyModule, types.ModuleType)


def test_import_does_not_pull_in_torch():
    code = (
        "import sys, torchada_hooks\n"
        "heavy = sorted(m for m in ('torch', 'numpy') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
        "assert not any(isinstance(f, torchada_hooks.ProxyFinder) for f in sys.meta_path)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        # The repository root, so the child imports this checkout's package.
        cwd=str(Path(torchada_hooks.__file__).resolve().parents[1]),
    )
    assert result.returncode == 0, result.stderr
