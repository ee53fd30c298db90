"""Every proxied module, read whole, looks like the module it stands in for (issue 42).

Generated from the proxy tables (``load_table()``): for each module, ``from M import *``,
``vars(M)``, ``dir(M)`` and ``inspect.getmembers(M)`` with torchada on (the simulator) are compared
name by name with the same reads in a process without torchada. One child process gathers each
side, for all modules at once (every child pays for ``import torch``).

Allowed differences, and why:

- Added names. The proxy machinery's dunders (``__dir__``, ``__torchada_original__``, and
  ``__getattr__`` while a proxy is not sealed); the module's rows in the tables (what torchada
  fills or renames); the names of the MUSA module a table row redirects to (``torch.cuda``
  resolves on ``torch_musa``, so ``torch.cuda.MUSAGraph`` exists); names torch_musa itself sets on
  the original module when it loads (``torch.distributed.is_mccl_available``).
- Missing names. The original's own PEP 562 ``__getattr__`` (the proxy's machinery answers
  instead); and in a module torch_musa lacks entirely (a table target of null), the names that
  are not its own functions and classes, which raise AttributeError by design. ``dir()`` still
  lists those, as it does on the original.

The star import's values must be the ones the proxy resolves (``ctypes.CDLL`` is torchada's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO

from torchada._cuda.redirect import load_table

MODULES = sorted(load_table())

PROXY_DUNDERS = {"__dir__", "__torchada_original__", "__getattr__"}

_GATHER = """
import importlib, inspect, json, sys
ON = sys.argv[2] == "on"
if ON:
    import torchada
    assert torchada.is_enabled(), "torchada did not turn on"
names = json.loads(sys.argv[1])
for name in names:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
out = {}
for name in names:
    module = sys.modules.get(name)
    if module is None:
        out[name] = None
        continue
    star = {}
    try:
        exec(f"from {name} import *", star)
        error = None
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    star.pop("__builtins__", None)
    listed = dir(module)
    got = {
        "star_error": error,
        "star": sorted(star),
        "star_not_resolved": sorted(k for k, v in star.items() if getattr(module, k, 0) is not v),
        "vars": sorted(vars(module)),
        "dir": listed,
        "members": sorted(n for n, _ in inspect.getmembers(module)),
    }
    if ON:
        from torchada._cuda.redirect import load_table

        original = vars(module).get("__torchada_original__")
        target = load_table()[name].target
        got["proxied"] = original is not None
        got["original"] = sorted(vars(original)) if original is not None else []
        redirected = target not in (None, "@original")
        got["target"] = dir(importlib.import_module(target)) if redirected else []
        got["unresolvable"] = sorted(n for n in listed if not hasattr(module, n))
    out[name] = got
print("GATHERED " + json.dumps(out))
"""


def _env(on: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHADA_")}
    if on:
        env["TORCHADA_SIMULATE"] = "1"
    return env


@pytest.fixture(scope="module")
def namespaces():
    """``{"off": {module: reads}, "on": {module: reads}}``, gathered by two concurrent children."""
    children = {
        side: subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_GATHER), json.dumps(MODULES), side],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(side == "on"),
            cwd=REPO,
        )
        for side in ("off", "on")
    }
    gathered = {}
    for side, child in children.items():
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, f"{side}: {err[-3000:]}"
        line = [ln for ln in out.splitlines() if ln.startswith("GATHERED ")][-1]
        gathered[side] = json.loads(line[len("GATHERED ") :])
    return gathered


def _added(name: str, on: dict) -> set:
    """Names torchada's proxy of ``name`` may carry that the original module lacks."""
    rows = set(load_table()[name].names)
    return set(PROXY_DUNDERS) | rows | set(on["original"]) | set(on["target"])


def _allowed_missing(name: str, key: str, on: dict) -> set:
    allowed = {"__getattr__"}
    if key != "dir" and load_table()[name].target is None:
        allowed |= set(on["unresolvable"])
    return allowed


@pytest.mark.parametrize("name", MODULES)
def test_namespace_matches_the_original(name, namespaces):
    off, on = namespaces["off"][name], namespaces["on"][name]
    if off is None:
        assert on is None, f"{name} is not in this torch, yet torchada serves it"
        pytest.skip(f"{name} is not in this torch")
    assert on is not None and on["proxied"], f"{name} is not proxied with torchada on"
    assert on["star_error"] is None and off["star_error"] is None, (on, off)
    assert on["star_not_resolved"] == [], "star import bound values the proxy does not hold"
    added = _added(name, on)
    for key in ("star", "vars", "dir", "members"):
        missing = set(off[key]) - set(on[key]) - _allowed_missing(name, key, on)
        extra = set(on[key]) - set(off[key]) - added
        assert not missing, f"{key}({name}) lacks the original's {sorted(missing)}"
        assert not extra, f"{key}({name}) has names the original lacks: {sorted(extra)}"
