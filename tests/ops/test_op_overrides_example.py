"""The worked example of docs/native_ops.md (examples/native_override), built and run as the guide
says. Its operator, aten::_local_scalar_dense, has a kernel of the simulator's own (as nearly
every operator has one in torch_musa): the override must take precedence while installed, hand
the operator back when removed, and the dispatcher's warning about it must not leak out.

The first run builds the example (a cold build of one C++ file, cached afterwards)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "native_override"
GUIDE = REPO / "docs" / "native_ops.md"
NAME = "_local_scalar_dense"
RUN_COMMAND = "python -m torchada.run --simulate examples/native_override/count_syncs.py"

PRECEDENCE = """
import json, logging, os, sys, warnings
logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
import torch
import torchada
from torchada import op_overrides

NAME = "_local_scalar_dense"

def served_by():
    for line in torch._C._dispatch_dump_table("aten::" + NAME).splitlines():
        if line.startswith("PrivateUse1:"):
            return line.split("registered at ")[1].split(":")[0].rsplit("/", 1)[-1]

def reads():
    values = [torch.tensor(v, dtype=d, device="musa").item()
              for v, d in [(3.5, torch.float32), (-2, torch.int64), (True, torch.bool),
                           (1.25, torch.float16), (2 + 3j, torch.complex64)]]
    values.append(bool(torch.ones((), device="musa")))
    return [repr(v) for v in values]

out = {"before": served_by()}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    op_overrides.load("torchada_example_sync_counter",
                      [os.path.join("examples", "native_override", "sync_counter.cpp")])
out["python_warnings"] = [str(w.message) for w in caught]
info = op_overrides.installed()[NAME]
out["during"] = served_by()
out["shadows"], out["previous"] = info["shadows"], info["previous"].rsplit("/", 1)[-1]
calls0 = info["calls"]
out["values_on"] = reads()
out["counted"] = op_overrides.installed()[NAME]["calls"] - calls0
torchada.disable()
out["after"] = served_by()
out["values_off"] = reads()
out["installed_off"] = sorted(op_overrides.installed())
torchada.enable()
out["reinstalled"] = served_by()
print(json.dumps(out))
"""


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHADA_")}
    env.update(extra)
    return env


def test_override_takes_precedence_over_the_backend_kernel_and_hands_it_back():
    r = subprocess.run(
        [sys.executable, "-c", PRECEDENCE],
        capture_output=True,
        text=True,
        env=_env(TORCHADA_SIMULATE="1"),
        cwd=REPO,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["before"] == "sim_kernels.cpp"  # the simulator's own kernel
    assert out["during"] == "op_override.h"  # ours wins while installed
    assert out["shadows"] is True and out["previous"].startswith("sim_kernels.cpp")
    assert out["counted"] == 6  # every read went through it ...
    assert out["values_on"] == out["values_off"]  # ... and gave what the backend gives
    assert out["values_on"] == ["3.5", "-2", "True", "1.25", "(2+3j)", "True"]
    assert out["after"] == "sim_kernels.cpp" and out["installed_off"] == []  # handed back
    assert out["reinstalled"] == "op_override.h"  # a loaded extension stays loaded
    # The dispatcher's "Overriding a previously registered kernel" is held back; torchada says
    # what it replaced instead, once per install.
    assert out["python_warnings"] == []
    assert "Overriding a previously registered kernel" not in r.stderr
    replaced = [line for line in r.stderr.splitlines() if "replaces the MUSA backend" in line]
    assert len(replaced) == 2 and "aten::_local_scalar_dense (registered at" in replaced[0]


def test_worked_example_runs_as_the_guide_says():
    assert RUN_COMMAND in GUIDE.read_text()
    r = subprocess.run(
        [sys.executable, *RUN_COMMAND.split()[1:]],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=REPO,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "host reads: 5 logging every step, 1 accumulating on the device" in r.stdout
    off = subprocess.run(
        [sys.executable, *RUN_COMMAND.split()[1:]],
        capture_output=True,
        text=True,
        env=_env(TORCHADA_DISABLE_OP_OVERRIDE__LOCAL_SCALAR_DENSE="1"),
        cwd=REPO,
        timeout=600,
    )
    assert off.returncode == 1
    assert "switched off" in off.stdout


def test_guide_shows_the_example_files_as_they_are():
    # The guide quotes the example whole: what it shows is what the tests above build and run.
    guide = GUIDE.read_text()
    blocks = re.findall(r"```(?:cpp|python)\n(.*?)```", guide, flags=re.S)
    for path in (EXAMPLE / "sync_counter.cpp",):
        assert path.read_text() in blocks, f"docs/native_ops.md no longer shows {path.name} as is"


# ---------------------------------------------------------------- register(), in-process
def _fake(name, overrides):
    module = types.ModuleType(name)
    module.op_overrides = lambda: [dict(o, calls=0, installed=False) for o in overrides]
    module.install_op_override = module.remove_op_override = lambda n: None
    module.set_op_override_trace = lambda sink: None
    return module


def test_register_refuses_a_module_without_overrides():
    from torchada import op_overrides

    match = r"'plain' defines no operator overrides.*torchada_ops::bind"
    with pytest.raises(TypeError, match=match):
        op_overrides.register(types.ModuleType("plain"))


def test_register_refuses_a_name_defined_twice(monkeypatch):
    from torchada import op_overrides
    from torchada._ops import overrides as _cpp_ops

    monkeypatch.setattr(_cpp_ops, "_extensions", [])
    monkeypatch.setattr(_cpp_ops, "_active", False)  # register only, install nothing
    entry = {"name": "twice", "op": "aten::abs", "summary": ""}
    op_overrides.register(_fake("first_ext", [entry]))
    with pytest.raises(ValueError, match="second_ext defines operator overrides named twice"):
        op_overrides.register(_fake("second_ext", [entry]))
