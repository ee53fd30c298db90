"""port_tree: output layout, safety checks, incremental behaviour."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from torchada.porting import PortPathError, port_tree

GOLDEN_INPUT = Path(__file__).parent / "porting_golden" / "input"
MANIFEST = ".torchada-port.json"


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "kernels").mkdir(parents=True)
    shutil.copy(GOLDEN_INPUT / "fused_stream.cu", src / "kernels" / "fused_stream.cu")
    shutil.copy(GOLDEN_INPUT / "fused_common.cuh", src / "kernels" / "fused_common.cuh")
    shutil.copy(GOLDEN_INPUT / "handwritten.mu", src / "kernels" / "handwritten.mu")
    shutil.copy(GOLDEN_INPUT / "cublas_gemm.cpp", src / "gemm.cpp")
    (src / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\n")
    (src / "blob.h").write_bytes(b"\x00\x01cudaMalloc\x00")
    (src / "latin1.cpp").write_bytes("// caf\xe9\ncudaMalloc(p);\n".encode("latin-1"))
    (src / "notes.txt").write_text("cudaMalloc stays here\n")
    return src


def files_under(root: Path) -> dict:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def mtimes(root: Path) -> dict:
    return {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_layout_and_statuses(tree: Path, tmp_path: Path) -> None:
    before = files_under(tree)
    out = tmp_path / "out"
    report = port_tree(tree, out)
    assert files_under(tree) == before  # sources untouched
    produced = files_under(out)
    assert set(produced) == {
        "kernels/fused_stream.mu", "kernels/fused_common.muh", "kernels/handwritten.mu",
        "gemm.cpp", "setup.py", "blob.h", "latin1.cpp", "notes.txt",
    }  # fmt: skip
    assert produced["kernels/handwritten.mu"] == before["kernels/handwritten.mu"]
    assert produced["blob.h"] == before["blob.h"]
    assert produced["latin1.cpp"] == before["latin1.cpp"]
    assert produced["notes.txt"] == before["notes.txt"]
    assert produced["setup.py"] == before["setup.py"]
    # The renamed header is included under its new name.
    assert b'#include "fused_common.muh"' in produced["kernels/fused_stream.mu"]
    status = {r.path: r.status for r in report.files}
    assert status == {
        "blob.h": "binary", "gemm.cpp": "ported", "kernels/fused_common.cuh": "ported",
        "kernels/fused_stream.cu": "ported", "kernels/handwritten.mu": "musa-source",
        "latin1.cpp": "non-utf8", "notes.txt": "copied", "setup.py": "copied",
    }  # fmt: skip
    assert any("UTF-8" in n for n in report.file("latin1.cpp").notes)
    assert any("binary" in n for n in report.file("blob.h").notes)
    assert report.file("kernels/fused_stream.cu").output_path == "kernels/fused_stream.mu"
    assert sorted(report.written) == sorted(produced)
    assert report.totals()["translations"] > 50


def test_keep_cu_names(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    port_tree(tree, out, rename_cu=False)
    assert (out / "kernels" / "fused_stream.cu").exists()
    assert b'#include "fused_common.cuh"' in (out / "kernels" / "fused_stream.cu").read_bytes()


def test_second_run_writes_nothing_and_keeps_mtimes(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = port_tree(tree, out)
    stamps = mtimes(out)
    second = port_tree(tree, out)
    assert second.written == []
    assert mtimes(out) == stamps
    assert {r.status for r in second.files} == {"cached"}
    # Cached reports carry the same findings as the first run.
    assert second.file("gemm.cpp").translated == first.file("gemm.cpp").translated
    assert second.totals()["translations"] == first.totals()["translations"]


def test_only_changed_source_is_rewritten(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    port_tree(tree, out)
    stamps = mtimes(out)
    path = tree / "gemm.cpp"
    path.write_text(path.read_text() + "\nvoid extra() { cudaDeviceSynchronize(); }\n")
    report = port_tree(tree, out)
    assert report.written == ["gemm.cpp"]
    assert b"musaDeviceSynchronize" in (out / "gemm.cpp").read_bytes()
    changed = {p for p, t in mtimes(out).items() if stamps.get(p) != t}
    assert {p.name for p in changed} == {"gemm.cpp", MANIFEST}


def test_unchanged_output_is_not_rewritten_without_manifest(tree: Path, tmp_path: Path) -> None:
    # Even when the cache is gone, identical output leaves the file (and its mtime) alone.
    out = tmp_path / "out"
    port_tree(tree, out)
    (out / MANIFEST).unlink()
    stamps = {p: t for p, t in mtimes(out).items()}
    report = port_tree(tree, out)
    assert report.written == []
    assert {p: t for p, t in mtimes(out).items() if p.name != MANIFEST} == stamps


def test_edited_output_is_repaired(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    port_tree(tree, out)
    target = out / "gemm.cpp"
    good = target.read_bytes()
    target.write_bytes(b"broken")
    report = port_tree(tree, out)
    assert report.written == ["gemm.cpp"] and target.read_bytes() == good


def test_option_change_invalidates_cache(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    port_tree(tree, out)
    report = port_tree(tree, out, rewrite_comments=True)
    assert "cached" not in {r.status for r in report.files}


def test_stale_outputs_removed(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    port_tree(tree, out)
    (tree / "gemm.cpp").unlink()
    report = port_tree(tree, out)
    assert not (out / "gemm.cpp").exists()
    assert report.file("gemm.cpp").status == "removed"


def test_manifest_is_json(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    port_tree(tree, out)
    data = json.loads((out / MANIFEST).read_text())
    assert data["files"]["kernels/fused_stream.cu"]["out"] == "kernels/fused_stream.mu"


def test_dry_run_writes_nothing(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    seen = []
    report = port_tree(tree, out, dry_run=True, on_ported=lambda r, a, b: seen.append(r.path))
    assert not out.exists()
    assert "gemm.cpp" in report.written
    assert sorted(seen) == ["gemm.cpp", "kernels/fused_common.cuh", "kernels/fused_stream.cu"]
    report = port_tree(tree, None, dry_run=True)
    assert report.written == []


def test_single_file(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text("cudaFree(p);\n")
    out = tmp_path / "out"
    report = port_tree(src, out)
    assert (out / "k.mu").read_text() == "musaFree(p);\n"
    assert report.written == ["k.mu"]


# --------------------------------------------------------------------- safety
def test_missing_source(tmp_path: Path) -> None:
    with pytest.raises(PortPathError, match="nope.*does not exist"):
        port_tree(tmp_path / "nope", tmp_path / "out")


def test_out_required(tree: Path) -> None:
    with pytest.raises(PortPathError, match="no output directory"):
        port_tree(tree)


def test_out_equal_to_source_refused(tree: Path) -> None:
    with pytest.raises(PortPathError, match="is the source directory"):
        port_tree(tree, tree)
    with pytest.raises(PortPathError, match="is the source directory"):
        port_tree(tree, tree / "kernels" / "..")


def test_out_containing_source_refused(tree: Path) -> None:
    with pytest.raises(PortPathError, match="contains the source"):
        port_tree(tree, tree.parent)


def test_out_that_is_a_file_refused(tree: Path, tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(PortPathError, match="not a directory"):
        port_tree(tree, target)


def test_out_inside_source_is_skipped_by_the_walk(tree: Path) -> None:
    out = tree / "build" / "musa"
    port_tree(tree, out)
    report = port_tree(tree, out)
    assert not any(r.path.startswith("build/") for r in report.files)
    assert (out / "gemm.cpp").exists() and not (out / "build").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_escaping_symlink_refused(tree: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.h"
    secret.write_text("cudaMalloc")
    (tree / "link.h").symlink_to(secret)
    out = tmp_path / "out"
    with pytest.raises(PortPathError, match="link.h.*points outside the source tree"):
        port_tree(tree, out)
    assert not out.exists()  # refused before writing anything


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_escaping_directory_symlink_refused(tree: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tree / "ext").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PortPathError, match="ext.*points outside"):
        port_tree(tree, tmp_path / "out")


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_internal_symlinks(tree: Path, tmp_path: Path) -> None:
    (tree / "alias.cpp").symlink_to(tree / "gemm.cpp")
    (tree / "kalias").symlink_to(tree / "kernels")
    out = tmp_path / "out"
    report = port_tree(tree, out)
    assert (out / "alias.cpp").read_bytes() == (out / "gemm.cpp").read_bytes()
    assert not (out / "alias.cpp").is_symlink()
    assert not (out / "kalias").exists()
    assert any("kalias" in n for n in report.notes)


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_destination_symlink_escape_refused(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "victim").mkdir()
    (out / "kernels").symlink_to(tmp_path / "victim")
    with pytest.raises(PortPathError, match="outside the output directory"):
        port_tree(tree, out)
    assert list((tmp_path / "victim").iterdir()) == []
    assert [p.name for p in out.iterdir()] == ["kernels"]  # nothing written at all


def test_collision_refused(tree: Path, tmp_path: Path) -> None:
    (tree / "kernels" / "fused_stream.mu").write_text("// hand-written\n")
    with pytest.raises(PortPathError, match="fused_stream.cu.*fused_stream.mu"):
        port_tree(tree, tmp_path / "out")


# --------------------------------------------------------------------- in place
def test_in_place_is_opt_in(tree: Path) -> None:
    with pytest.raises(PortPathError, match="in_place=True"):
        port_tree(tree, tree)
    report = port_tree(tree, in_place=True)
    assert not (tree / "kernels" / "fused_stream.cu").exists()
    ported = (tree / "kernels" / "fused_stream.mu").read_text()
    assert "getCurrentMUSAStream" in ported and '"fused_common.muh"' in ported
    assert (tree / "kernels" / "handwritten.mu").read_bytes() == (
        GOLDEN_INPUT / "handwritten.mu"
    ).read_bytes()
    assert not (tree / MANIFEST).exists()  # no bookkeeping litter in the source tree
    assert "kernels/fused_stream.mu" in report.written
    again = port_tree(tree, in_place=True)
    assert again.written == []


def test_in_place_with_other_out_refused(tree: Path, tmp_path: Path) -> None:
    with pytest.raises(PortPathError, match="do not also pass out"):
        port_tree(tree, tmp_path / "out", in_place=True)


def test_file_modes_preserved(tree: Path, tmp_path: Path) -> None:
    script = tree / "run.sh"
    script.write_text("#!/bin/sh\n")
    os.chmod(script, 0o755)
    port_tree(tree, tmp_path / "out")
    assert os.stat(tmp_path / "out" / "run.sh").st_mode & 0o111


def test_tampered_manifest_never_deletes_outside_out(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    port_tree(tree, out)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    manifest = json.loads((out / MANIFEST).read_text())
    st = victim.stat()
    manifest["files"]["gone.cpp"] = {
        "sha256": "0", "out": "../victim.txt", "stat": [st.st_size, st.st_mtime_ns],
        "report": {},
    }  # fmt: skip
    (out / MANIFEST).write_text(json.dumps(manifest))
    port_tree(tree, out)
    assert victim.read_text() == "keep me"
