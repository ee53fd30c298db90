"""Code with its own MUSA branch, written for the published torchada, gets the answers it was
written for; CUDA code keeps CUDA's (docs/musa_branch.md). Stand-ins for four projects
(tests/e2e/musa_branch_projects): an accelerator registry that probes CUDA first and imports
torchada inside its MUSA probe (Xinference), get_device() and its memory capacity (SGLang), an RL
weight bucket (LightLLM) and an fp16 choice with a cache release (ComfyUI). Each runs the ways a
program meets torchada: ``import torchada`` first, after ``import torch``, under ``python -m
torchada.run``, as a child of a process that imported torchada, and (for the two that import
torchada themselves) as written. CI also runs this file with TORCHADA_FORCE_CUDA_AVAILABLE=0."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import REPO, simulator_env

from torchada._cuda.available import answers_for_musa, musa_branch_rule

PROJECTS = os.path.join(os.path.dirname(__file__), "musa_branch_projects")
FOR_MUSA = answers_for_musa()
BRANCH = musa_branch_rule()
MODES = ("import", "after", "runner", "child")
_PARENT = (
    "import subprocess, sys\n"
    "import torchada\n"
    "assert torchada.is_enabled()\n"
    "sys.exit(subprocess.run([sys.executable, *sys.argv[1:]]).returncode)\n"
)
_INHERITED = ("TORCHADA_SIMULATE", "TORCHADA_ACTIVE", "TORCHADA_REPORT", "TORCHADA_REPORT_OWNER")


def run_project(mode: str, main: str, tmp_path, extra_env=None) -> subprocess.CompletedProcess:
    """Run ``main`` (a file of musa_branch_projects, copied with its packages to ``tmp_path``)
    the way ``mode`` says:

    - "import": ``import torchada`` added as its first line (the simulator's switch set);
    - "after": ``import torch`` then ``import torchada`` added, on the simulator installed as a
      package (torch imports torch_musa itself, as on a MUSA machine);
    - "runner": ``python -m torchada.run --simulate main.py``;
    - "child": unchanged, started by a parent process that did ``import torchada``;
    - "own": unchanged, on the simulator installed as a package: torchada comes in where the
      project imports it (its MUSA probe).
    """
    work = tmp_path / "project"
    if not work.exists():
        shutil.copytree(PROJECTS, work)
    env = {k: v for k, v in os.environ.items() if k not in _INHERITED}
    env.update(extra_env or {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    source = (work / main).read_text()
    program = work / f"{mode}_{main}"
    head = {"import": "import torchada\n", "after": "import torch\nimport torchada\n"}
    program.write_text(head.get(mode, "") + source)
    if mode == "import":
        env["TORCHADA_SIMULATE"] = "1"
        cmd = [sys.executable, str(program)]
    elif mode == "runner":
        cmd = [sys.executable, "-m", "torchada.run", "--simulate", str(program)]
    elif mode == "child":
        env = simulator_env("musa-first", env)
        cmd = [sys.executable, "-c", _PARENT, str(program)]
    elif mode in ("after", "own"):
        env = simulator_env("musa-first", env)
        cmd = [sys.executable, str(program)]
    else:
        raise ValueError(mode)
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=400, cwd=work)


def result(r: subprocess.CompletedProcess) -> dict:
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    return json.loads([x for x in r.stdout.splitlines() if x.startswith("{")][-1])


needs_branch = pytest.mark.skipif(
    not BRANCH, reason="TORCHADA_MUSA_BRANCH=0: this run checks CUDA's answers for such code"
)


# ------------------------------------------------------------------ code with a MUSA branch
@pytest.mark.parametrize("mode", MODES + ("own",))
def test_registry_answers_musa_on_every_call(mode, tmp_path):
    out = result(run_project(mode, "xinference_main.py", tmp_path, {"MUSA_VISIBLE_DEVICES": "1"}))
    if BRANCH or not FOR_MUSA:
        # Every call, not only the first (asked before the MUSA probe imported torchada).
        assert out["calls"] == [["musa", "MUSA_VISIBLE_DEVICES", 1]] * 3
        assert out["gpu_info"] == {}
    else:
        # Told True, its CUDA entry wins once torchada is in: the defect the rule is there for.
        first = "musa" if mode == "own" else "cuda"
        assert [c[0] for c in out["calls"]] == [first, "cuda", "cuda"]
        assert out["gpu_info"]["gpu-0"] == {"name": "CUDA GPU 0", "total": 1}


def test_registry_takes_its_cuda_entry_with_the_rule_off(tmp_path):
    # TORCHADA_MUSA_BRANCH=0: the registry is CUDA code again. Its first probe (before its MUSA
    # probe imported torchada) finds MUSA; every later one CUDA, with CUDA's device variable.
    env = {"MUSA_VISIBLE_DEVICES": "1", "TORCHADA_MUSA_BRANCH": "0"}
    out = result(run_project("own", "xinference_main.py", tmp_path, env))
    calls = [c[:2] for c in out["calls"]]
    if FOR_MUSA:
        assert calls == [["musa", "CUDA_VISIBLE_DEVICES"]] + [["cuda", "CUDA_VISIBLE_DEVICES"]] * 2
    else:
        assert calls == [["musa", "MUSA_VISIBLE_DEVICES"]] * 3


@pytest.mark.parametrize("mode", MODES + ("own",))
def test_get_device_is_musa_with_a_memory_capacity(mode, tmp_path):
    out = result(run_project(mode, "sglang_main.py", tmp_path))
    if BRANCH or not FOR_MUSA:
        assert out["device"] == "musa" and out["tensor"] == "musa:0"
        assert out["memory_is_number"] is True and out["memory_mib"] > 0
        assert out["sm"] == 22  # MUSA's own numbers, which its MUSA-aware callers compare
    else:
        assert out["device"] == "cuda" and out["memory_mib"] is None and out["sm"] == 80
    # The program's own CUDA question, at module level, is CUDA code's.
    assert out["cuda_program_sees"] is FOR_MUSA


# ------------------------------------------------------------------ CUDA code
@pytest.mark.parametrize("mode", MODES)
def test_rl_weight_bucket_lands_on_the_gpu(mode, tmp_path):
    r = run_project(mode, "lightllm_main.py", tmp_path)
    if not FOR_MUSA:
        # The published answer: its device string is "cpu:cpu", which torch refuses.
        assert r.returncode != 0 and "cpu:cpu" in r.stderr
        return
    assert result(r) == {"bucket": "musa:0", "is_cuda": True, "round_trip": True}


@pytest.mark.parametrize("mode", MODES)
def test_fp16_choice_and_cache_release(mode, tmp_path):
    out = result(run_project(mode, "comfy_main.py", tmp_path))
    if not FOR_MUSA:  # the published answers: fp32 on the CPU, and no cache to release
        assert (out["device"], out["dtype"], out["released"]) == ("cpu", "torch.float32", [])
        return
    assert out["device"] == "musa:0" and out["dtype"] == "torch.float16"
    assert out["released"] == [True]
    assert out["reserved_while_held"] == 4 * 64 * 64 * 2 and out["reserved_after"] == 0


# ------------------------------------------------------------------ the debug log
def test_each_caller_says_once_which_answer_it_got_and_why(tmp_path):
    (tmp_path / "project").mkdir()
    main = tmp_path / "project" / "log_main.py"
    main.write_text(
        "import logging, sys\n"
        "logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format='LOG %(message)s')\n"
        "import torch\n"
        "def is_musa():\n"
        "    return torch.version.musa is not None\n"
        "def get_device():\n"
        "    return 'cuda' if torch.cuda.is_available() else 'musa' if is_musa() else 'cpu'\n"
        "def pick():\n"
        "    return 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "print([get_device() for _ in range(3)], [pick() for _ in range(3)])\n"
    )
    r = run_project("import", "log_main.py", tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [x for x in r.stdout.splitlines() if "torch.cuda.is_available() asked by" in x]
    if not FOR_MUSA:  # torch's own function is served: nothing to decide, nothing said
        assert lines == []
        return
    branch = [x for x in lines if "__main__.get_device " in x]
    cuda = [x for x in lines if "__main__.pick " in x]
    assert len(branch) == 1 and len(cuda) == 1, lines
    if BRANCH:
        assert (
            "torch's own answer (False on MUSA), because the function asks about MUSA itself"
            " (is_musa)" in branch[0]
        )
    assert "the MUSA device's answer, because it is CUDA code" in cuda[0]
    want = "['musa', 'musa', 'musa']" if BRANCH else "['cuda', 'cuda', 'cuda']"
    assert r.stdout.splitlines()[-1] == f"{want} ['cuda', 'cuda', 'cuda']"
