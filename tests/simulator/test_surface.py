"""The simulator's importable surface against each real torch_musa release's, module by module.

Each release (2.7.1, 2.9.1.post1, 2.11.0.post2) is simulated in a fresh process (the simulator
stays loaded for good once imported) and compared with its own reference,
torch_musa_<release>_surface.json. Every public name of the real modules must be present, or
listed with its reason in torchada/_simulator/omitted.json (2.7.1 at its top level, later releases
under "releases"); no name real torch_musa lacks may exist, unless listed there as a helper still
to move out; the parameters (names, order, kinds, defaults) of every function and class present
must be equal. The lists must stay exact: an entry that no longer holds fails too.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import SIM_RELEASES, run_python, sim_release_params

from torchada._simulator import omitted_path

HERE = os.path.dirname(os.path.abspath(__file__))

COMPARE = """
import json, sys
sys.path.insert(0, {here!r})
import torch
from torchada import _simulator
_simulator.activate()
import surface
r = surface.compare(release={release!r})
print(json.dumps({{"covered": r.covered, "not_importable": r.not_importable,
                  "real_public": r.real_public, "matched": r.matched, "missing": r.missing,
                  "extra": r.extra, "signatures": r.signatures}}))
"""


# The fewest names each release's simulation matches (the figures the README's simulator section
# gives for 2.7.1; measured for the others).
MATCHED_AT_LEAST = {"2.7.1": 302, "2.9.1.post1": 335, "2.11.0.post2": 343}


@pytest.fixture(scope="module", params=sim_release_params())
def release(request):
    return request.param


@pytest.fixture(scope="module")
def surface(release):
    # Each reference is one release's: that release is compared, whatever the torch.
    code = COMPARE.format(here=HERE, release=release)
    r = run_python(code, env={"TORCHADA_ACTIVE": "0", "TORCHADA_SIM_RELEASE": release})
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def omitted_all():
    with open(omitted_path(), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def omitted(omitted_all, release):
    if release == "2.7.1":
        return omitted_all
    return omitted_all["releases"][release]


def test_every_reason_is_given(omitted_all):
    assert sorted(omitted_all["releases"]) == sorted(r for r in SIM_RELEASES if r != "2.7.1")
    for lists in [omitted_all, *omitted_all["releases"].values()]:
        for section in ("modules", "names", "helpers"):
            for name, reason in lists[section].items():
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


def test_counts(surface, release):
    assert surface["real_public"] == surface["matched"] + len(surface["missing"])
    assert surface["matched"] >= MATCHED_AT_LEAST[release]
