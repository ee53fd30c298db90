"""What a native build shows while it runs (torchada._native.progress): on a terminal one line
redrawn with ninja's ``[n/m]`` and the seconds so far; in a log one line at the start, one
every 15 s with the count and the seconds so far, and one at the end; with ``TORCHADA_QUIET=1``
exactly one line at the start and one at the end; a wait for another process's build names that
process. Plain C libraries of two one-line sources: each build takes a fraction of a second.
"""

from __future__ import annotations

import fcntl
import io
import os
import re
import sys
import threading
import time

import pytest

from torchada._native import build as _build
from torchada._native import command as _command
from torchada._native import progress as _progress

START = "torchada: building 'two' (first use, cached afterwards)..."
END = re.compile(r"torchada: built 'two' in \d+\.\d s")


@pytest.fixture
def two(tmp_path, monkeypatch):
    """Two sources of one C library build, in a cache of this test's own."""
    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHADA_QUIET", raising=False)
    monkeypatch.delenv("TORCHADA_VERBOSE_BUILD", raising=False)
    sources = []
    for name, value in (("one", 1), ("two", 2)):
        src = tmp_path / f"{name}.c"
        src.write_text(f"int {name}(void) {{ return {value}; }}\n")
        sources.append(src)
    return sources


def _on_a_terminal(monkeypatch, build):
    """Run ``build`` with stderr a terminal (a pty); returns all it wrote there."""
    master, slave = os.openpty()
    stream = os.fdopen(slave, "w")
    monkeypatch.setattr(sys, "stderr", stream)
    try:
        build()
    finally:
        stream.close()
        monkeypatch.undo()
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the terminal's other side is closed and all is read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return b"".join(chunks).decode()


def test_in_a_log_a_build_is_one_line_at_the_start_and_one_at_the_end(two, capsys):
    _build.build_shared_libraries("two", two)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines
    assert lines[0] == START and END.fullmatch(lines[1])
    _build.build_shared_libraries("two", two)  # cached: nothing to say
    assert capsys.readouterr().err == ""


def _slow_compiler(tmp_path, monkeypatch, seconds):
    """``CC``: the compiler, after ``seconds`` of sleep; one compile at a time."""
    cc = tmp_path / "slow-cc"
    cc.write_text(f'#!/bin/sh\nsleep {seconds}\nexec {_build.c_compiler()} "$@"\n')
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv("MAX_JOBS", "1")


ONGOING = re.compile(r"torchada: still building 'two':( \[[12]/2\])? \d+ s so far")


def test_in_a_log_a_long_build_says_every_few_seconds_how_far_it_is(
    two, tmp_path, monkeypatch, capsys
):
    _slow_compiler(tmp_path, monkeypatch, 0.6)
    monkeypatch.setattr(_progress, "LOG_EVERY_SECONDS", 0.1)  # 15 s in use
    _build.build_shared_libraries("two", two)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == START and END.fullmatch(lines[-1]), lines
    between = lines[1:-1]
    assert len(between) >= 5 and all(ONGOING.fullmatch(line) for line in between), lines
    # ninja's count as it went: none done, then the first of the two.
    assert "[1/2]" not in between[0] and any("[1/2]" in line for line in between), lines


def test_quiet_keeps_a_long_build_to_its_first_and_last_line_in_a_log(
    two, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("TORCHADA_QUIET", "1")
    _slow_compiler(tmp_path, monkeypatch, 0.3)
    monkeypatch.setattr(_progress, "LOG_EVERY_SECONDS", 0.05)
    _build.build_shared_libraries("two", two)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[0] == START and END.fullmatch(lines[1]), lines


def test_the_log_line_says_what_it_waits_for_and_the_seconds_so_far():
    out = io.StringIO()
    with _progress.Progress("torchada: waiting...", "done", stream=out, log_every=0.05) as shown:
        shown.status("[3/7]")
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert lines[0] == "torchada: waiting..." and lines[-1] == "done"
    assert lines[1:-1] and set(lines[1:-1]) == {"torchada: waiting: [3/7] 0 s so far"}


def test_on_a_terminal_the_line_shows_ninjas_count_then_the_time(two, monkeypatch):
    shown = _on_a_terminal(monkeypatch, lambda: _build.build_shared_libraries("two", two))
    assert "[1/2]" in shown and "[2/2]" in shown  # ninja's own count, as it went
    assert "\r\x1b[K" + START in shown  # one line, redrawn in place
    last = shown.replace("\r\n", "\n").split("\r\x1b[K")[-1]
    assert END.fullmatch(last.strip())  # and replaced at the end by the time it took
    assert shown.count("\n") == 1  # the terminal scrolled by one line in all


def test_quiet_is_one_line_at_the_start_and_one_at_the_end_also_on_a_terminal(two, monkeypatch):
    monkeypatch.setenv("TORCHADA_QUIET", "1")
    shown = _on_a_terminal(monkeypatch, lambda: _build.build_shared_libraries("two", two))
    lines = shown.replace("\r\n", "\n").splitlines()
    assert len(lines) == 2 and lines[0] == START and END.fullmatch(lines[1]), shown
    assert "[1/" not in shown and "\r" not in shown.replace("\r\n", "\n")


def test_a_failed_build_says_so_and_carries_the_compiler_output(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "broken.c"
    src.write_text("int broken(void) { return nope; }\n")
    with pytest.raises(_build.NativeBuildError) as err:
        _build.build_shared_libraries("broken", [src])
    assert "broken.c:1" in str(err.value) and "nope" in _build.describe_failure(err.value)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and re.fullmatch(
        r"torchada: building 'broken' failed after \d+\.\d s", lines[1]
    )
    assert not [p for p in (tmp_path / "cache" / "broken").iterdir() if p.is_dir()]  # no half


def test_a_waiting_build_names_the_process_it_waits_for(two, monkeypatch):
    (first,) = {p.parent for p in _build.build_shared_libraries("two", two).values()}
    (first / ".complete").unlink()  # so the next call has to build, once it has the lock
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with open(first.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # another builder holds it ...
        lock.seek(0)
        lock.truncate()
        lock.write("424242\n")  # ... and has recorded itself, as builders do
        lock.flush()
        waiter = threading.Thread(target=_build.build_shared_libraries, args=("two", two))
        waiter.start()
        deadline = time.time() + 30
        while "waiting for" not in err.getvalue():
            assert time.time() < deadline, err.getvalue()
            time.sleep(0.02)
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    waiter.join(timeout=60)
    lines = err.getvalue().splitlines()
    assert lines[0] == (
        f"torchada: waiting for process 424242 to finish building 'two' (lock "
        f"{first.with_suffix('.lock')})..."
    )
    assert re.fullmatch(r"torchada: process 424242 is done with 'two'; waited \d+\.\d s", lines[1])
    assert lines[2] == START and END.fullmatch(lines[3]) and len(lines) == 4


def test_ninja_keeps_its_whole_output_and_passes_each_count(tmp_path):
    (tmp_path / "build.ninja").write_text(
        "rule say\n  command = echo said $out\nbuild a: say\nbuild b: say\n"
    )
    counts = []
    status, output = _progress.run_ninja(
        _progress.ninja_command(_build.ensure_ninja_on_path()), str(tmp_path), counts.append
    )
    assert status == 0 and counts == ["[1/2]", "[2/2]"]
    said = sorted(line for line in output.splitlines() if line.startswith("said"))
    assert said == ["said a", "said b"]  # the commands' own output is kept too


def test_build_help_says_a_run_after_install_spares_the_first_program_the_wait(capsys):
    assert _command.main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Run it once after installing torchada" in text
    assert "the first program that uses torchada is then spared that wait" in text
    assert "ninja's [n/m] count" in text


def test_quiet_is_read_as_every_switch_is(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("TORCHADA_QUIET", "0")
    assert _progress.live(Terminal())
    for on in ("1", "true", "YES"):
        monkeypatch.setenv("TORCHADA_QUIET", on)
        assert not _progress.live(Terminal())
    assert not _progress.live(io.StringIO())


def test_the_lines_fit_one_terminal_row(monkeypatch):
    class Narrow(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(_progress, "_columns", lambda stream: 40)
    out = Narrow()
    with _progress.Progress("x" * 100 + "...", "done in {seconds:.1f} s", stream=out) as shown:
        shown.status("[3/7]")
    drawn = [d for d in out.getvalue().split("\r\x1b[K") if d and not d.startswith("done")]
    assert drawn and all(len(d) < 40 for d in drawn) and drawn[-1].endswith(" s")
    assert "[3/7]" in drawn[-1] and out.getvalue().endswith("\n")
