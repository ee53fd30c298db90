"""``python -m torchada``: the command list, each command's --help and its examples, exit codes."""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from conftest import REPO

from torchada.__main__ import COMMANDS, main

PROG = "python -m torchada"
# Examples left unrun here: they change this environment (simulator install/uninstall), rewrite
# the checkout's docs (tables) or may compile for minutes (build). Their --help is still checked.
UNRUN_EXAMPLES = ("simulator install", "simulator uninstall", "torchada tables", "torchada build")


def _env() -> Dict[str, str]:
    # The commands' output depends on TORCHADA_* switches; the tests must not inherit any.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHADA_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    return env


def _run(*args: str, cwd: "Path | str" = REPO, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torchada", *args],
        capture_output=True,
        text=True,
        env=env or _env(),
        cwd=str(cwd),
        timeout=300,
    )


@pytest.fixture(scope="module")
def top_help() -> subprocess.CompletedProcess:
    return _run("--help")


def _assert_lists_every_command(text: str) -> None:
    for name, command in COMMANDS.items():
        assert re.search(rf"^  {name} +{re.escape(command.summary)}$", text, re.M), (name, text)
    assert f"`{PROG} COMMAND --help`" in text


def test_help_lists_every_command_with_its_summary(top_help) -> None:
    assert top_help.returncode == 0 and top_help.stderr == ""
    assert top_help.stdout.startswith(f"usage: {PROG} [-h] COMMAND [ARGS ...]\n")
    _assert_lists_every_command(top_help.stdout)


def test_dash_h_is_help(top_help) -> None:
    r = _run("-h")
    assert r.returncode == 0 and r.stdout == top_help.stdout


def test_no_command_prints_the_full_help_and_exits_2(top_help) -> None:
    r = _run()
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == top_help.stdout
    _assert_lists_every_command(r.stderr)


def test_unknown_command_names_the_choices() -> None:
    r = _run("nope", "--help")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"usage: {PROG} ")
    assert f"{PROG}: error: argument COMMAND: invalid choice: " in r.stderr and "nope" in r.stderr
    # The choices' quoting differs between Python versions; their names do not.
    assert all(name in r.stderr.partition("choose from")[2] for name in COMMANDS)


def test_help_imports_no_command() -> None:
    # Listing the commands must not import their modules, nor torch (off MUSA, the `import
    # torchada` that `-m torchada` runs first decides without it).
    code = (
        "import contextlib, io, json, runpy, sys\n"
        "sys.argv = ['torchada', '--help']\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n"
        "        runpy.run_module('torchada', run_name='__main__', alter_sys=True)\n"
        "    except SystemExit as exc:\n"
        "        code = exc.code\n"
        f"modules = {[c.module for c in COMMANDS.values()]!r}\n"
        "print(json.dumps({'code': code, 'listed': 'port' in out.getvalue(),\n"
        "                  'imported': [m for m in modules if m in sys.modules],\n"
        "                  'torch': 'torch' in sys.modules}))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), cwd=REPO
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"code": 0, "listed": True, "imported": [], "torch": False}


@functools.lru_cache(maxsize=None)
def _command_help(name: str) -> subprocess.CompletedProcess:
    # Cached: two tests read each command's --help.
    return _run(name, "--help")


def _examples(help_text: str) -> List[str]:
    """The command lines under ``Examples:`` (comment lines left out)."""
    _, _, tail = help_text.partition("\nExamples:\n")
    lines = [line.strip() for line in tail.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_with_examples(name: str) -> None:
    r = _command_help(name)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: {PROG} {name}"), r.stdout
    assert "\nExamples:\n" in r.stdout
    examples = _examples(r.stdout)
    assert examples, r.stdout
    for example in examples:
        words = [w for w in shlex.split(example) if not re.fullmatch(r"[A-Z_]+=\S*", w)]
        assert words[:4] == ["python", "-m", "torchada", name], example


def test_examples_run(tmp_path: Path) -> None:
    # The examples are real command lines: each that is safe to run here runs and succeeds, in a
    # folder holding the csrc/ tree that the port examples name.
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "kernel.cu").write_text(
        "#include <cuda_runtime.h>\n"
        "__global__ void k(float* x) { x[threadIdx.x] = 0; }\n"
        "void launch(float* x, cudaStream_t s) { k<<<1, 32, 0, s>>>(x); }\n"
    )
    ran = []
    for name in ("port", "doctor", "simulator"):
        for example in _examples(_command_help(name).stdout):
            if any(skip in example for skip in UNRUN_EXAMPLES):
                continue
            words = shlex.split(example)
            env = _env()
            while "=" in words[0]:
                key, _, value = words.pop(0).partition("=")
                env[key] = value
            r = _run(*words[3:], cwd=tmp_path, env=env)
            assert r.returncode == 0, (example, r.stderr)
            ran.append(words[3])
    assert set(ran) == {"port", "doctor", "simulator"}
    assert (tmp_path / "csrc_musa" / "kernel.mu").is_file()
    assert json.loads((tmp_path / "port_report.json").read_text())["totals"]["files"] == 1


def test_main_returns_the_exit_status(capsys) -> None:
    # In-process callers (tests, scripts) get the status back instead of a SystemExit.
    assert main([]) == 2
    assert main(["--help"]) == 0
    assert main(["nope"]) == 2
    # A command's own arguments reach it untouched: `tables` refuses one instead of writing.
    assert main(["tables", "--bogus"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: " in err and "unknown argument '--bogus'" in err
