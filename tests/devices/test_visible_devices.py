"""CUDA_VISIBLE_DEVICES pins a worker to its GPU on MUSA, in every process and whichever
``torch.backends`` entry point torch runs first (torchada's .pth chooses the devices at interpreter
start), and counts within an inherited MUSA_VISIBLE_DEVICES. The rule: torchada_startup.plan and
docs/devices.md."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_python, simulator_env

import torchada_startup
from torchada_startup import VisibleDevicesError, plan

HERE = Path(__file__).resolve().parent / "visible"
ORDERS = ("musa-first", "musa-last")


# ------------------------------------------------------------------ the rule, case by case
def _seen(env: dict) -> "str | None":
    env = dict(env)
    torchada_startup.apply(plan(env), env)
    return env.get("MUSA_VISIBLE_DEVICES")


@pytest.mark.parametrize(
    "musa,cuda,seen",
    [
        (None, "1", "1"),
        (None, "3,1", "3,1"),
        ("2,3", "1", "3"),
        ("2,3", "1,0", "3,2"),
        ("3,1", "0", "3"),
        ("all", "2", "2"),
        ("ALL", "0,3", "0,3"),
        ("2,3", "2,3", "2,3"),  # the same value in both: one setting written twice
        (" 1", "1 ", " 1"),
        # As CUDA reads it: up to the first negative or empty entry or repeated index.
        (None, "", "-1"),
        (None, "-1", "-1"),
        ("2,3", "-1", "-1"),
        ("2,3", "", "-1"),
        ("2,3", "1,-1,0", "3"),
        ("2,3", "1,1", "3"),
        (None, "0,,1", "0"),
        ("0,1", None, "0,1"),
        ("all", None, "all"),
        (None, None, None),
    ],
)
def test_what_the_process_sees(musa, cuda, seen):
    pairs = (("MUSA_VISIBLE_DEVICES", musa), ("CUDA_VISIBLE_DEVICES", cuda))
    env = {k: v for k, v in pairs if v is not None}
    assert _seen(env) == seen
    if musa is not None and seen != musa:
        # What torchada derived stays apart from what the user set.
        env_after = dict(env)
        torchada_startup.apply(plan(env_after), env_after)
        assert env_after["TORCHADA_MUSA_VISIBLE_FROM_CUDA"] == seen
        assert env_after["TORCHADA_MUSA_VISIBLE_BASE"] == musa
        assert env_after["CUDA_VISIBLE_DEVICES"] == cuda


def test_a_derived_value_is_read_again_against_the_users_one():
    env = {"MUSA_VISIBLE_DEVICES": "2,3", "CUDA_VISIBLE_DEVICES": "1"}
    torchada_startup.apply(plan(env), env)
    assert plan(env) == {}  # applied twice (the .pth, then the activation): the same
    # A child whose launcher set another CUDA_VISIBLE_DEVICES counts within the user's 2,3.
    child = {**env, "CUDA_VISIBLE_DEVICES": "0"}
    assert _seen(child) == "2"
    # CUDA_VISIBLE_DEVICES unset: the user's value is back, and torchada's records go.
    child = {k: v for k, v in env.items() if k != "CUDA_VISIBLE_DEVICES"}
    torchada_startup.apply(plan(child), child)
    assert child == {"MUSA_VISIBLE_DEVICES": "2,3"}
    # Without a user's value, CUDA_VISIBLE_DEVICES counts every GPU, as on CUDA.
    env = {"CUDA_VISIBLE_DEVICES": "2,3"}
    torchada_startup.apply(plan(env), env)
    assert _seen({**env, "CUDA_VISIBLE_DEVICES": "1"}) == "1"


@pytest.mark.parametrize(
    "musa,cuda,why",
    [
        ("2,3", "2", "it names GPU 2, and MUSA_VISIBLE_DEVICES gives this process 2 GPUs (0 to 1)"),
        ("0", "1", "it names GPU 1, and MUSA_VISIBLE_DEVICES gives this process 1 GPU (GPU 0)"),
        ("x", "0", "MUSA_VISIBLE_DEVICES gives this process no GPU (the driver reads indices"),
        (None, "GPU-5d1e2f30-aa", "'GPU-5d1e2f30-aa' is a UUID, and MUSA chooses GPUs by index"),
        ("2,3", "0,MIG-1", "'MIG-1' is a UUID, and MUSA chooses GPUs by index only"),
        (None, "gpu0", "'gpu0' is not a device index"),
    ],
)
def test_what_cannot_be_read_is_an_error_naming_both(musa, cuda, why):
    env = {"CUDA_VISIBLE_DEVICES": cuda}
    if musa is not None:
        env["MUSA_VISIBLE_DEVICES"] = musa
    with pytest.raises(VisibleDevicesError) as err:
        plan(env)
    where = f"MUSA_VISIBLE_DEVICES={musa!r}" if musa is not None else "MUSA_VISIBLE_DEVICES unset"
    assert str(err.value).startswith(
        f"CUDA_VISIBLE_DEVICES={cuda!r} cannot choose this process's GPUs within {where}: {why}"
    )
    assert "set it" in str(err.value).lower() or "Set CUDA_VISIBLE_DEVICES" in str(err.value)


def test_the_switch_reads_on_as_torchada_does():
    from torchada._core.env import ON

    assert torchada_startup.ON == ON


# ------------------------------------------------------------------ the .pth file
def test_the_pth_file_is_installed_with_the_package():
    # The line shipped, and the one the installation put at the top of site-packages (editable
    # or not): what setup.py installs is this file.
    line = (Path(REPO) / "torchada.pth").read_text()
    installed = [Path(d) / "torchada.pth" for d in site.getsitepackages()]
    installed = [p for p in installed if p.exists()]
    assert installed, "torchada.pth is not in site-packages: reinstall torchada (pip install -e .)"
    assert installed[0].read_text() == line
    assert line.startswith('import os; "TORCHADA_ACTIVE" in os.environ and ')


def test_the_pth_line_imports_nothing_unless_torchada_is_active():
    code = (
        "import json, os, sys; print(json.dumps([m in sys.modules for m in "
        "('torchada_startup', 'torch', 'torchada')] + [os.environ.get('MUSA_VISIBLE_DEVICES')]))"
    )
    env = {"CUDA_VISIBLE_DEVICES": "1", "MUSA_VISIBLE_DEVICES": "2,3"}
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TORCHADA_")}

    def run(extra):
        r = subprocess.run(
            [sys.executable, "-c", code],
            env={**clean, **env, **extra},
            capture_output=True,
            text=True,
            cwd="/",
        )
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    assert run({}) == [False, False, False, "2,3"]
    assert run({"TORCHADA_ACTIVE": "0"}) == [True, False, False, "2,3"]
    assert run({"TORCHADA_ACTIVE": "1", "TORCHADA_DISABLE": "1"}) == [True, False, False, "2,3"]
    assert run({"TORCHADA_ACTIVE": "1"}) == [True, False, False, "3"]
    # A setting that cannot be read is left for torchada's activation to refuse.
    assert run({"TORCHADA_ACTIVE": "1", "CUDA_VISIBLE_DEVICES": "2"}) == [True, False, False, "2,3"]


# ------------------------------------------------------------------ workers on a 4-GPU machine
def _launch(order: str, kind: str, values, tmp_path, musa=None) -> list:
    env = simulator_env(order)
    env["TORCHADA_SIM_DEVICES"] = "4"
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("MUSA_VISIBLE_DEVICES", None)
    if musa is not None:
        env["MUSA_VISIBLE_DEVICES"] = musa
    out = tmp_path / f"{order}-{kind}"
    out.mkdir()
    r = subprocess.run(
        [sys.executable, str(HERE / "launcher.py"), kind, str(out), *values],
        env=env,
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
        timeout=900,
    )
    assert r.returncode == 0, r.stderr
    results = []
    for n in range(len(values)):
        err = out / f"{kind}-{n}.err"
        if err.exists():
            results.append(json.loads(err.read_text()))
            continue
        got = json.loads((out / f"{kind}-{n}.json").read_text())
        # Both entry-point orders happen: torch_musa's found first, or torchada's.
        eps = got.pop("entry_points")
        assert (eps.index("torch_musa") < eps.index("torchada")) == (order == "musa-first"), eps
        results.append(got)
    return results


def _on(physical: int) -> dict:
    return {"count": 1, "current": 0, "physical": physical, "musa": str(physical)}


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize(
    "musa,values,physical",
    [(None, ["1", "3"], [1, 3]), ("2,3", ["0", "1"], [2, 3]), ("all", ["1", "3"], [1, 3])],
    ids=["no-musa", "musa-list", "musa-all"],
)
def test_each_worker_lands_on_the_gpu_its_launcher_chose(order, musa, values, physical, tmp_path):
    got = _launch(order, "subprocess", values, tmp_path, musa)
    assert got == [_on(p) for p in physical]


@pytest.mark.parametrize("order", ORDERS)
def test_a_contradictory_setting_fails_with_a_message(order, tmp_path):
    got = _launch(order, "subprocess", ["2", "GPU-5d1e2f30", "-1"], tmp_path, "2,3")
    out_of_range, uuid, hidden = got
    for err, value, why in (
        (out_of_range, "2", "it names GPU 2, and MUSA_VISIBLE_DEVICES gives this process 2 GPUs"),
        (uuid, "GPU-5d1e2f30", "'GPU-5d1e2f30' is a UUID, and MUSA chooses GPUs by index only"),
    ):
        assert err["code"] != 0
        assert (
            f"CUDA_VISIBLE_DEVICES={value!r} cannot choose this process's GPUs within "
            f"MUSA_VISIBLE_DEVICES='2,3': {why}"
        ) in err["stderr"]
    # -1 hides every GPU, as on CUDA.
    assert hidden == {"count": 0, "musa": "-1"}


@pytest.mark.parametrize("kind", ["spawn", "torchrun", "ray"])
def test_workers_started_every_way_land_on_their_gpu(kind, tmp_path):
    # torch_musa's entry point first: the order in which devices used to be counted too early.
    assert _launch("musa-first", kind, ["1", "0"], tmp_path, "2,3") == [_on(3), _on(2)]


def test_forkserver_workers_land_on_their_gpu(tmp_path):
    # One forkserver per launcher, started with the environment of the first worker.
    assert _launch("musa-first", "forkserver", ["1"], tmp_path, "2,3") == [_on(3)]


def test_importing_torchada_first_with_a_contradictory_setting_fails(tmp_path):
    env = {
        "TORCHADA_SIMULATE": "1",
        "TORCHADA_ACTIVE": "0",
        "TORCHADA_SIM_DEVICES": "4",
        "CUDA_VISIBLE_DEVICES": "2",
        "MUSA_VISIBLE_DEVICES": "0,1",
    }
    r = run_python("import torchada", env=env)
    assert r.returncode != 0
    assert "VisibleDevicesError: CUDA_VISIBLE_DEVICES='2' cannot choose" in r.stderr
