"""The ``port`` command: ``python -m torchada port SRC --out DIR [--diff] [--report [PATH]]``."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchada.porting.cli import main

REPO = Path(__file__).resolve().parents[2]
KERNEL = "#include <cuda_runtime.h>\nvoid f() { cudaDeviceSynchronize(); cudaShinyNew(); }\n"


@pytest.fixture()
def src(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    root.mkdir()
    (root / "k.cu").write_text(KERNEL)
    (root / "hand.mu").write_text('asm volatile("");\n')
    return root


def run(argv, capsys):
    out = io.StringIO()
    code = main(argv, stdout=out)
    return code, out.getvalue(), capsys.readouterr().err


def test_port_to_out(src: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = run([str(src), "--out", str(out)], capsys)
    assert code == 0
    assert (out / "k.mu").read_text().startswith("#include <musa_runtime.h>")
    assert (out / "hand.mu").read_text() == 'asm volatile("");\n'
    assert "2 files" in stderr and "1 unported" in stderr
    assert (src / "k.cu").read_text() == KERNEL


def test_diff_without_out_is_a_dry_run(src: Path, capsys) -> None:
    code, stdout, _ = run([str(src), "--diff"], capsys)
    assert code == 0
    assert "--- a/k.cu" in stdout and "+++ b/k.mu" in stdout
    assert "-#include <cuda_runtime.h>" in stdout and "+#include <musa_runtime.h>" in stdout
    assert sorted(p.name for p in src.iterdir()) == ["hand.mu", "k.cu"]


def test_report_table_and_json(src: Path, tmp_path: Path, capsys) -> None:
    code, stdout, _ = run([str(src), "--out", str(tmp_path / "o1"), "--report"], capsys)
    assert code == 0
    assert "k.cu" in stdout and "cudaShinyNew" in stdout and "musa-source" in stdout
    path = tmp_path / "report.json"
    code, _, _ = run([str(src), "--out", str(tmp_path / "o2"), "--report", str(path)], capsys)
    assert code == 0
    data = json.loads(path.read_text())
    k = next(f for f in data["files"] if f["path"] == "k.cu")
    assert k["translated"] == {"cudaDeviceSynchronize": 1, "cuda_runtime.h": 1}
    assert list(k["remaining"]) == ["cudaShinyNew"]
    assert data["totals"]["files"] == 2


def test_in_place(src: Path, capsys) -> None:
    code, _, _ = run([str(src), "--in-place", "-q"], capsys)
    assert code == 0
    assert sorted(p.name for p in src.iterdir()) == ["hand.mu", "k.mu"]


def _listing(root: Path) -> list:
    """Every entry under root: kind, link target or file bytes."""
    entries = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                entries.append((rel, "link", os.readlink(path)))
            elif path.is_dir():
                entries.append((rel, "dir", None))
            else:
                entries.append((rel, "file", path.read_bytes()))
    return sorted(entries)


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
@pytest.mark.parametrize("single", [False, True])
def test_in_place_through_symlink_changes_nothing(src: Path, capsys, single: bool) -> None:
    # Every check happens before the first write: a symlink found late must not leave the tree
    # half renamed (k.cu already k.mu, the link dangling).
    (src / "sub").mkdir()
    (src / "sub" / "g.cu").write_text(KERNEL)
    (src / "b.cu").symlink_to("k.cu")
    (src / "subl").symlink_to("sub")
    before = _listing(src)
    code, _, stderr = run([str(src / "b.cu") if single else str(src), "--in-place"], capsys)
    assert code == 2
    assert f"{str(src / 'b.cu')!r} -> 'k.cu'" in stderr, stderr
    assert "--out DIR" in stderr and "nothing was changed" in stderr
    assert _listing(src) == before


@pytest.mark.parametrize(
    "argv_tail, message",
    [
        (["--out", "{tmp}/o", "--in-place"], "exclude each other"),
        ([], "pass --out DIR, --in-place or --diff"),
        (["--out", "{src}"], "is the source directory"),
        (["--out", "{tmp}"], "contains the source"),
        (["--out", "{src}/k.cu"], "not a directory"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_usage_errors_exit_2(src: Path, tmp_path: Path, capsys, argv_tail, message) -> None:
    argv = [str(src)] + [a.format(tmp=tmp_path, src=src) for a in argv_tail]
    code, _, stderr = run(argv, capsys)
    assert code == 2
    assert message in stderr


def test_missing_src_names_it(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "does-not-exist"
    code, _, stderr = run([str(missing), "--out", str(tmp_path / "o")], capsys)
    assert code == 2
    assert str(missing) in stderr and "does not exist" in stderr


def test_out_is_a_file(src: Path, tmp_path: Path, capsys) -> None:
    target = tmp_path / "plain-file"
    target.write_text("")
    code, _, stderr = run([str(src), "--out", str(target)], capsys)
    assert code == 2 and str(target) in stderr and "not a directory" in stderr


def test_python_dash_m(src: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "torchada", "port", str(src), "--out", str(out)],
        capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (out / "k.mu").exists()
    proc = subprocess.run(
        [sys.executable, "-m", "torchada", "port", str(tmp_path / "nope"), "--out", str(out)],
        capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "nope" in proc.stderr
