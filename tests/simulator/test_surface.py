"""The simulator's importable surface against real torch_musa 2.7.1's, module by module.

Runs in a fresh process (the simulator stays loaded for good once imported). Every public name of
the real modules must be present, or listed with its reason in torchada/_simulator/omitted.json;
no name real torch_musa lacks may exist, unless listed there as a helper still to move out; the
parameters (names, order, kinds, defaults) of every function and class present must be equal. The
list must stay exact: an entry that no longer holds fails too.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import run_python

from torchada._simulator import omitted_path

HERE = os.path.dirname(os.path.abspath(__file__))

COMPARE = f"""
import json, sys
sys.path.insert(0, {HERE!r})
import torch
from torchada import _simulator
_simulator.activate()
import surface
r = surface.compare()
print(json.dumps({{"covered": r.covered, "not_importable": r.not_importable,
                  "real_public": r.real_public, "matched": r.matched, "missing": r.missing,
                  "extra": r.extra, "signatures": r.signatures}}))
"""


@pytest.fixture(scope="module")
def surface():
    # The reference is 2.7.1's: that release is compared, whatever the torch.
    r = run_python(COMPARE, env={"TORCHADA_ACTIVE": "0", "TORCHADA_SIM_RELEASE": "2.7.1"})
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def omitted():
    with open(omitted_path(), encoding="utf-8") as f:
        return json.load(f)


def test_every_reason_is_given(omitted):
    for section in ("modules", "names", "helpers"):
        for name, reason in omitted[section].items():
            assert name.startswith("torch_musa") and len(reason) > 20, (section, name)


def test_no_module_missing_without_a_reason(surface, omitted):
    assert sorted(surface["not_importable"]) == sorted(omitted["modules"])
    assert "torch_musa" in surface["covered"] and "torch_musa.core.device" in surface["covered"]


def test_no_public_name_missing_without_a_reason(surface, omitted):
    assert sorted(surface["missing"]) == sorted(omitted["names"])


def test_no_name_that_real_torch_musa_lacks(surface, omitted):
    public = [n for n in surface["extra"] if not n.rsplit(".", 1)[1].startswith("_")]
    assert public == []
    top_level = [n for n in surface["extra"] if n.count(".") == 1]
    assert top_level == []  # torch.musa._X: what adapters reach for
    assert sorted(surface["extra"]) == sorted(omitted["helpers"])


def test_signatures_equal_real_ones(surface):
    assert surface["signatures"] == []


def test_counts(surface, omitted):
    # The figures the README's simulator section gives.
    assert surface["real_public"] == surface["matched"] + len(surface["missing"])
    assert surface["matched"] >= 302
