"""`python -m torchada simulator install|uninstall|status`: the simulator as a package."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO, run_python

from torchada._simulator import SITE, releases
from torchada._simulator.install import PTH, dist_info, install, is_installed, uninstall

DIST_INFO = dist_info(releases.resolve())


def _cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "torchada", "simulator", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": REPO, **(env or {})},
        cwd=REPO,
    )


def test_install_writes_a_distribution_with_torch_musas_entry_point(tmp_path):
    r = _cli("install", "--target", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert is_installed(tmp_path)
    assert (tmp_path / PTH).read_text().splitlines()[0] == SITE
    entry_points = (tmp_path / DIST_INFO / "entry_points.txt").read_text()
    assert entry_points == "[torch.backends]\ntorch_musa = torch_musa:_autoload\n"
    # A plain `import torch` now imports torch_musa by itself, which reports its distribution.
    code = """
        import importlib.metadata as md, sys, torch
        print(sys.modules["torch_musa"] is torch.musa, md.version("torch_musa"),
              torch.musa.device_count(), md.distribution("torch_musa").read_text("INSTALLER"))
    """
    r = run_python(code, env={"PYTHONPATH": os.pathsep.join([str(tmp_path), SITE, REPO])})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", releases.resolve(), "2", "torchada-simulator"]
    assert _cli("status", "--target", str(tmp_path)).stdout.startswith("installed in")


def test_uninstall_removes_exactly_what_install_wrote(tmp_path):
    (tmp_path / "other.pth").write_text("x\n")
    install(tmp_path)
    r = _cli("uninstall", "--target", str(tmp_path))
    assert r.returncode == 0 and "removed" in r.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.pth"]
    assert _cli("uninstall", "--target", str(tmp_path)).stdout.strip() == "not installed"
    assert _cli("status", "--target", str(tmp_path)).stdout.strip() == "not installed"


def test_pip_uninstall_removes_it_too(tmp_path):
    # pip uninstalls only inside an environment: a bare one, into whose site-packages it goes.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "env")], check=True
    )
    python = str(tmp_path / "env" / "bin" / "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    install(purelib)
    r = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "uninstall", "-y", "torch_musa"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert f"Successfully uninstalled torch_musa-{releases.resolve()}" in r.stdout
    assert not os.path.exists(os.path.join(purelib, DIST_INFO))
    assert not os.path.exists(os.path.join(purelib, PTH))


def test_install_refuses_beside_a_real_torch_musa(tmp_path):
    real = tmp_path / "real"
    (real / "torch_musa").mkdir(parents=True)
    (real / "torch_musa" / "__init__.py").write_text("")
    target = tmp_path / "site"
    # TORCHADA_DISABLE: this stand-in is no working torch_musa for `import torchada` to turn on.
    env = {"PYTHONPATH": f"{real}{os.pathsep}{REPO}", "TORCHADA_DISABLE": "1"}
    r = _cli("install", "--target", str(target), env=env)
    assert r.returncode == 1
    assert "a real torch_musa is importable" in r.stderr and str(real) in r.stderr
    assert not target.exists()


def test_install_leaves_another_torch_musas_metadata_alone(tmp_path):
    foreign = tmp_path / DIST_INFO
    foreign.mkdir()
    (foreign / "INSTALLER").write_text("pip\n")
    with pytest.raises(RuntimeError, match="belongs to another torch_musa installation"):
        install(tmp_path)
    assert uninstall(tmp_path) == [] and (foreign / "INSTALLER").read_text() == "pip\n"
