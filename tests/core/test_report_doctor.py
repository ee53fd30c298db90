"""The migration report and the doctor command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

ENV = {k: v for k, v in os.environ.items() if k != "TORCHADA_SIMULATE"}

PROGRAM = textwrap.dedent(
    """
    import torch
    n = torch.cuda.device_count()
    torch.cuda.device_count()
    torch.cuda.get_device_name(0)
    try:
        torch.cuda.caching_allocator_enable(False)
    except NotImplementedError:
        pass  # caught by the program: the report must still list it
    torch.cuda.nvtx.range_push("step")
    """
)


def test_report_lists_apis_kinds_calls_and_sites(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    out = tmp_path / "report.json"
    r = subprocess.run(
        [sys.executable, "-m", "torchada.run", "--simulate", f"--report={out}", str(script)],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=tmp_path,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    data = {e["api"]: e for e in json.loads(out.read_text())["apis"]}
    assert data["torch.cuda.device_count"]["calls"] == 2
    assert data["torch.cuda.device_count"]["kind"] == "same"
    assert data["torch.cuda.device_count"]["first_site"] == f"{script}:3"
    assert data["torch.cuda.caching_allocator_enable"]["kind"] == "unsupported"
    assert data["torch.cuda.caching_allocator_enable"]["calls"] == 1
    assert data["torch.cuda.nvtx.range_push"]["kind"] == "filled"
    assert "torchada report: " in r.stderr and "torch.cuda.caching_allocator_enable" in r.stderr


def test_report_is_rank_aware_under_env(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import torch\ntorch.cuda.device_count()\n")
    env = dict(ENV, TORCHADA_SIMULATE="1", TORCHADA_REPORT=str(tmp_path / "r.json"), RANK="3")
    r = subprocess.run(
        [sys.executable, "-c", "import torchada; exec(open('prog.py').read())"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    written = json.loads((tmp_path / "r.rank3.json").read_text())
    assert written["rank"] == "3" and written["apis"][0]["api"] == "torch.cuda.device_count"


def test_no_report_means_sealed_proxies(py):
    r = py(
        "import torch, torchada; torch.cuda.Stream; print(type(torch.cuda).__name__)",
        env={"TORCHADA_SIMULATE": "1"},
    )
    assert r.stdout.strip() == "module", r.stderr


def test_doctor_reports_simulator_and_devices(py):
    r = py(
        "import sys; sys.argv=['torchada','doctor','--json']; import runpy;"
        "runpy.run_module('torchada', run_name='__main__')",
        env={
            "TORCHADA_SIMULATE": "1",
            "TORCHADA_SIM_BOARD": "S5000",
            "CUDA_VISIBLE_DEVICES": "0",
            "TORCH_DEVICE_BACKEND_AUTOLOAD": "1",
        },
    )
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["platform"] == "musa" and info["simulated"] and info["enabled"]
    # The release the simulator runs here: the one paired with this torch (2.7.1 on 2.13).
    from torchada._simulator import releases

    assert info["torch_musa"].startswith(releases.resolve() + "+")
    # CUDA_VISIBLE_DEVICES=0 selects one of the two simulated devices (MUSA_VISIBLE_DEVICES=0).
    assert [d["name"] for d in info["devices"]] == ["MTT S5000"]
    # Both capabilities: torch_musa's, and the CUDA one CUDA code is told (in force by default).
    assert [(d["capability"], d["cuda_capability"]) for d in info["devices"]] == [([3, 1], [9, 0])]
    assert info["cuda_capability"]["in_force"] == "cuda"
    assert not any("VISIBLE_DEVICES" in w for w in info["warnings"])


def test_doctor_says_when_cuda_visible_devices_cannot_be_read(py):
    doctor = "import sys; from torchada.__main__ import main; sys.exit(main(['doctor', '--json']))"
    env = {"TORCHADA_SIMULATE": "1", "CUDA_VISIBLE_DEVICES": "1", "MUSA_VISIBLE_DEVICES": "0"}
    message = (
        "CUDA_VISIBLE_DEVICES='1' cannot choose this process's GPUs within "
        "MUSA_VISIBLE_DEVICES='0': it names GPU 1, and MUSA_VISIBLE_DEVICES gives this process "
        "1 GPU (GPU 0). CUDA_VISIBLE_DEVICES counts within MUSA_VISIBLE_DEVICES: set it to "
        "indices below 1, or unset MUSA_VISIBLE_DEVICES (or set it to 'all') so that it counts "
        "every GPU."
    )
    # torchada refuses to turn on with it (so does the doctor, which turns it on)...
    r = py(doctor, env=env)
    assert r.returncode != 0 and message in r.stderr
    # ... and with torchada kept off, the doctor names it.
    r = py(doctor, env={**env, "TORCHADA_DISABLE": "1"})
    assert r.returncode == 0, r.stderr
    assert message in json.loads(r.stdout)["warnings"]


def test_doctor_on_cpu_and_bad_argument(py):
    import torch

    # Without torch_musa, a CUDA build of torch is the CUDA platform; a CPU build, the CPU one.
    platform = "cuda" if torch.version.cuda else "cpu"
    r = py("import sys; from torchada.__main__ import main; sys.exit(main(['doctor']))")
    assert r.returncode == 0 and f"platform      {platform}" in r.stdout
    assert "installs nothing here" in r.stdout
    r = py("import sys; from torchada.__main__ import main; sys.exit(main(['doctor', '--x']))")
    assert r.returncode == 2 and "unknown argument '--x'" in r.stderr


def _main(*argv: str) -> str:
    return f"import sys; from torchada.__main__ import main; sys.exit(main({list(argv)!r}))"


def test_doctor_says_whether_the_cache_in_use_holds_the_native_build(py, tmp_path):
    # `python -m torchada build` fills the cache (as a container image's build step does) ...
    sim = {"TORCHADA_SIMULATE": "1", "TORCHADA_QUIET": "1"}
    r = py(_main("build", "--json"), env=sim, timeout=1200)
    assert r.returncode == 0, r.stderr
    built = json.loads(r.stdout)
    # ... and doctor, in a later process, finds that very build there.
    r = py(_main("doctor", "--json"), env=sim)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["native_build"] == {
        "built": True,
        "path": os.path.dirname(built["path"]),
    }
    # An empty cache: not built, and where the build would go; asking builds nothing.
    empty = tmp_path / "cache"
    r = py(_main("doctor"), env={"TORCHADA_CACHE_DIR": str(empty)})
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("native build"))
    assert line.startswith(f"native build  not built (in {empty / 'torchada_native'}{os.sep}")
    assert line.endswith("first use builds it, `python -m torchada build` does it ahead of time")
    assert not list(empty.glob("torchada_native/*/.complete"))
