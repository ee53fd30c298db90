"""The torchada_hooks package itself: public API and import footprint."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

import torchada_hooks


def test_public_api():
    assert set(torchada_hooks.__all__) == {
        "ImportHooks",
        "ProxyFinder",
        "ProxyLoader",
        "ProxyModule",
        "SwapLedger",
        "is_sealed",
        "own_namespace",
        "peek_from",
        "proxy_spec",
        "resolve_unsealed",
        "seal",
        "seal_on_first_use",
    }
    for name in torchada_hooks.__all__:
        value = getattr(torchada_hooks, name)
        # Resolved from its own submodule, on first use.
        assert value.__module__.startswith("torchada_hooks.") and name in dir(torchada_hooks)
    assert issubclass(torchada_hooks.ProxyModule, types.ModuleType)
    with pytest.raises(AttributeError, match="'torchada_hooks' has no attribute 'not_a_name'"):
        torchada_hooks.not_a_name  # noqa: B018


def test_import_does_not_pull_in_torch():
    code = (
        "import sys, torchada_hooks.completion\n"
        "heavy = sorted(m for m in ('torch', 'numpy', 'wrapt') if m in sys.modules)\n"
        "assert not heavy, heavy\n"  # the light submodule (torch's entry point) loads no wrapt
        "import torchada_hooks\n"
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
