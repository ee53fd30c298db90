"""End-to-end: DDP over two torchrun agents on localhost (``--nnodes 2``, c10d rendezvous), as on
two hosts, with ``import torchada`` as the program's first line (the single-agent tests in
test_e2e_distributed.py cover the other ways in)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow


def _two_agents(tmp_path, program: str, args) -> list:
    """Run ``program`` (with ``import torchada`` as its first line) under two torchrun agents, as
    on two hosts (--nnodes 2, c10d rendezvous on localhost), one worker each; the ranks' JSON."""
    import socket
    import subprocess
    import sys

    from conftest import _INHERITED

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    source = open(program).read()
    prog = tmp_path / ("imported_" + os.path.basename(program))
    prog.write_text("import torchada\n" + source)
    env = {k: v for k, v in os.environ.items() if k not in _INHERITED}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    env["TORCHADA_SIMULATE"] = "1"
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
        "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "e2e",
        str(prog), *[str(a).replace("{out}", str(out_dir)) for a in args],
    ]  # fmt: skip
    agents = [
        subprocess.Popen(cmd, env=env, cwd=str(tmp_path), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]  # fmt: skip
    outputs = [agent.communicate(timeout=400) for agent in agents]
    for agent, (stdout, stderr) in zip(agents, outputs):
        assert agent.returncode == 0, (stdout[-2000:], stderr[-4000:])
    return [json.loads((out_dir / f"rank{i}.json").read_text()) for i in (0, 1)]


def test_ddp_over_two_torchrun_agents_with_c10d_rendezvous(tmp_path):
    # the script asks torch.cuda.is_available(), so it takes NCCL (MCCL here) and the GPU.
    program = os.path.join(REPO, "examples", "ddp_cuda.py")
    a, b = _two_agents(tmp_path, program, ["--out", "{out}", "--steps", "8"])
    for i, res in enumerate((a, b)):
        assert res["rank"] == i and res["local_rank"] == 0 and res["world"] == 2
        assert res["backend"] == "nccl" and res["device"] == "musa:0"
        assert res["all_reduce_sum"] == [3.0, 6.0] and res["all_gather"] == [0.0, 10.0]
        assert res["max_diff_from_cpu_reference"] < 1e-5
    assert a["weights"] == b["weights"] and a["losses"] != b["losses"]


def test_code_that_branches_on_the_backend_name_over_two_agents(tmp_path):
    from test_e2e_distributed import check_backend_name_ranks

    program = os.path.join(REPO, "tests", "e2e", "e2e_programs", "backend_name_cuda.py")
    check_backend_name_ranks(_two_agents(tmp_path, program, ["{out}"]), ["musa:0", "musa:0"])
