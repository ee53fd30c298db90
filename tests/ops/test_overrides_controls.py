"""The controls of the operator overrides, through ``import torchada`` in fresh processes:
TORCHADA_ENABLE_CPP_OPS, TORCHADA_DISABLE_OP_OVERRIDE_<NAME>, TORCHADA_DEBUG_CPP_OPS,
TORCHADA_CPP_OPS_VERBOSE, MTGPU_TARGET; undo by torchada.disable(); doctor and build output."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys

import pytest

pytest.importorskip("torch")

SIM = {"TORCHADA_SIMULATE": "1"}

# Prints one JSON line: installed overrides, call counts, where musa isfinite is served from.
PROBE = """
import json, sys, torch
import torchada
from torchada import op_overrides

def served_by():
    for line in torch._C._dispatch_dump_table("aten::isfinite").splitlines():
        if line.startswith("PrivateUse1:"):
            return "override" if "op_override.h" in line else "default"

x = torch.tensor([1.0, float("inf")], device="cuda")
out = {"enabled": torchada.is_enabled(), "installed": sorted(op_overrides.installed()),
       "served_by": served_by(), "isfinite": torch.isfinite(x).cpu().tolist(),
       "state": op_overrides.state(), "native_loaded": "torchada_native" in sys.modules}
out["calls"] = {k: v["calls"] for k, v in op_overrides.installed().items()}
{extra}
print(json.dumps(out))
"""


def probe(py, env, extra=""):
    r = py(PROBE.replace("{extra}", extra), env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def test_off_by_default_and_loading_for_devices_installs_nothing(py):
    out, _ = probe(py, SIM)
    assert out["enabled"] and out["native_loaded"]  # device translation loaded the library
    assert out["installed"] == [] and out["served_by"] == "default"
    assert out["isfinite"] == [True, False]
    assert out["state"]["requested"] is False


def test_enable_debug_unknown_name_and_undo(py):
    extra = """
torchada.disable()
out["after_disable"] = {"installed": sorted(op_overrides.installed()), "served_by": served_by(),
                        "isfinite": torch.isfinite(x.to("musa")).cpu().tolist()}
torchada.enable()
out["after_enable"] = {"installed": sorted(op_overrides.installed()), "served_by": served_by()}
"""
    env = dict(
        SIM,
        TORCHADA_ENABLE_CPP_OPS="1",
        TORCHADA_DEBUG_CPP_OPS="1",
        TORCHADA_DISABLE_OP_OVERRIDE_NOPE="1",
    )
    out, err = probe(py, env, extra)
    assert out["installed"] == ["isfinite"] and out["served_by"] == "override"
    assert out["isfinite"] == [True, False] and out["calls"] == {"isfinite": 1}
    # One log line per overridden call, with the path it took.
    traces = [line for line in err.splitlines() if line.startswith("torchada.cpp_ops: ")]
    assert traces == ["torchada.cpp_ops: isfinite: aten::isfinite(Float[2] on musa:0) -> |x| < inf"]
    # The unknown name is named, with the known ones, once (enable ran twice).
    unknown = [line for line in err.splitlines() if "TORCHADA_DISABLE_OP_OVERRIDE_NOPE" in line]
    assert len(unknown) == 1 and "known overrides: isfinite" in unknown[0]
    # disable() removed it: the default serves musa tensors again; enable() puts it back.
    assert out["after_disable"] == {
        "installed": [],
        "served_by": "default",
        "isfinite": [True, False],
    }
    assert out["after_enable"] == {"installed": ["isfinite"], "served_by": "override"}


@pytest.mark.parametrize("suffix", ["ISFINITE", "isfinite"])
def test_disable_one_override_in_either_case(py, suffix):
    env = dict(SIM, TORCHADA_ENABLE_CPP_OPS="1", **{f"TORCHADA_DISABLE_OP_OVERRIDE_{suffix}": "1"})
    out, err = probe(py, env)
    assert out["installed"] == [] and out["served_by"] == "default"
    assert out["state"]["left_out"] == {"isfinite": "TORCHADA_DISABLE_OP_OVERRIDE_ISFINITE=1"}
    assert "names no operator override" not in err


def test_subsystem_switch_and_native_off(py):
    out, _ = probe(py, dict(SIM, TORCHADA_ENABLE_CPP_OPS="1", TORCHADA_DISABLE_CPP_OPS="1"))
    assert out["installed"] == [] and out["served_by"] == "default"
    out, err = probe(py, dict(SIM, TORCHADA_ENABLE_CPP_OPS="1", TORCHADA_NATIVE="0"))
    assert out["installed"] == [] and not out["native_loaded"]
    assert "TORCHADA_ENABLE_CPP_OPS=1 is ignored: TORCHADA_NATIVE=0" in err


def test_nothing_on_a_cpu_platform(py):
    code = """
import json, sys, torch
import torchada
from torchada import op_overrides
print(json.dumps({"enabled": torchada.is_enabled(), "installed": sorted(op_overrides.installed()),
                  "native_loaded": "torchada_native" in sys.modules}))
"""
    r = py(code, env={"TORCHADA_ENABLE_CPP_OPS": "1", "TORCHADA_PLATFORM": "cpu"})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"enabled": False, "installed": [], "native_loaded": False}


def test_bad_mtgpu_target_warns_at_import_and_fails_build(py):
    env = dict(SIM, TORCHADA_ENABLE_CPP_OPS="1", MTGPU_TARGET="sm_80")
    out, err = probe(py, env)
    assert out["installed"] == ["isfinite"]  # no .mu kernel needs a target here
    assert "MTGPU_TARGET='sm_80' is not a MUSA architecture" in err and "mp_22" in err
    r = subprocess.run(
        [sys.executable, "-m", "torchada", "build"],
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
        timeout=600,
    )
    assert r.returncode == 2
    assert "MTGPU_TARGET='sm_80' is not a MUSA architecture: use mp_<digits>" in r.stderr


def test_doctor_shows_overrides_and_target(py):
    env = dict(
        os.environ,
        TORCHADA_SIMULATE="1",
        TORCHADA_ENABLE_CPP_OPS="1",
        TORCHADA_SIM_BOARD="S5000",
        TORCHADA_DISABLE_OP_OVERRIDE_ISFINITE="0",
    )
    r = subprocess.run(
        [sys.executable, "-m", "torchada", "doctor", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    ops = json.loads(r.stdout)["op_overrides"]
    assert sorted(ops["installed"]) == ["isfinite"]
    assert ops["installed"]["isfinite"]["op"] == "aten::isfinite"
    assert ops["target_arch"] == "mp_31"  # S5000: capability (3, 1)
    assert ops["musa_kernels"] == "none in the sources"
    text = subprocess.run(
        [sys.executable, "-m", "torchada", "doctor"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    ).stdout
    assert "op overrides  isfinite (aten::isfinite, 0 calls)" in text
    assert "MUSA target   mp_31" in text and "MUSA kernels  none in the sources" in text


# ---------------------------------------------------------------- in-process units
def test_target_arch(musa_sim, monkeypatch):
    from torchada._native import library as _native

    monkeypatch.delenv("MTGPU_TARGET", raising=False)
    major, minor = musa_sim.get_device_capability(0)
    assert _native.target_arch() == f"mp_{major}{minor}"
    monkeypatch.setenv("MTGPU_TARGET", "mp_31")
    assert _native.target_arch() == "mp_31"
    for bad in ("sm_80", "mp22", "mp_", "22", "mp_2x"):
        monkeypatch.setenv("MTGPU_TARGET", bad)
        match = r"MTGPU_TARGET=.* use mp_<digits>.*MTGPU_TARGET=mp_22"
        with pytest.raises(ValueError, match=match):
            _native.target_arch()


def test_verbose_variable_maps_onto_the_build_switch(monkeypatch):
    from torchada._native import build as _build
    from torchada._native import library as _native

    for name in ("TORCHADA_VERBOSE_BUILD", "TORCHADA_CPP_OPS_VERBOSE"):
        monkeypatch.delenv(name, raising=False)
    assert not _build.verbose_builds(_native.VERBOSE_ENV)
    monkeypatch.setenv("TORCHADA_CPP_OPS_VERBOSE", "1")
    assert _build.verbose_builds(_native.VERBOSE_ENV)
    assert not _build.verbose_builds()  # only where the native library asks for it


def test_mu_sources_skipped_without_a_compiler(tmp_path, monkeypatch, caplog):
    from torchada._native import library as _native

    for name in ("PYTORCH_MCC", "MUSA_HOME", "MUSA_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no mcc on it
    if _native.find_mcc() is not None:
        pytest.skip("a MUSA compiler is installed here")
    cpp, mu = tmp_path / "ops.cpp", tmp_path / "kernels.mu"
    plan = _native.plan([cpp], [mu])
    assert plan.sources == [cpp] and not plan.compiles_musa and plan.arch is None
    assert plan.musa_note() == "skipped (no MUSA compiler, mcc, found): kernels.mu"
    with caplog.at_level(logging.INFO, logger="torchada"):
        _native.log_musa_skip("test-lib", plan)
        _native.log_musa_skip("test-lib", plan)
    skips = [r.getMessage() for r in caplog.records if "MUSA kernels" in r.getMessage()]
    assert skips == [
        "torchada: test-lib: MUSA kernels skipped (no MUSA compiler, mcc, found): kernels.mu"
    ]
    assert _native.plan([cpp], []).musa_note() == "none in the sources"


def test_mcc_discovery_and_target_in_the_plan(tmp_path, monkeypatch, musa_sim):
    # Discovery only: nothing is compiled here (that needs a real MUSA toolchain).
    from torchada._native import library as _native

    mcc = tmp_path / "bin" / "mcc"
    mcc.parent.mkdir()
    mcc.write_text("")
    monkeypatch.delenv("PYTORCH_MCC", raising=False)
    monkeypatch.setenv("MUSA_HOME", str(tmp_path))
    assert _native.find_mcc() is None  # not executable: not a compiler
    mcc.chmod(mcc.stat().st_mode | stat.S_IXUSR)
    assert _native.find_mcc() == str(mcc)
    monkeypatch.setenv("MTGPU_TARGET", "mp_31")
    cpp, mu = tmp_path / "ops.cpp", tmp_path / "kernels.mu"
    plan = _native.plan([cpp], [mu])
    assert plan.sources == [cpp, mu] and plan.arch == "mp_31" and plan.compiles_musa
    assert plan.musa_note() == f"compiled for mp_31 with {mcc}: kernels.mu"
