"""Child processes: inherited activation composes with the program's own `import torchada`.

Every combination of {torchada inherited from a parent that imported it (TORCHADA_ACTIVE=1), or
not} x {the simulator installed as a package with its entry point found before torchada's, after
it, or brought in by TORCHADA_SIMULATE=1} x {the child imports torchada before torch, after torch,
or not at all} x {torch_musa imported by its own entry point, explicitly as the first line, or
explicitly after torch} must give the process a fresh `python -c "import torchada"` gives: the
same torch.cuda names bound to the same kinds of objects, one installation, and working
`import torch._dynamo`, `Module.to("cuda")` and optimizer steps. Then the same for torchrun
workers, torch.multiprocessing.spawn and DataLoader workers (spawn and forkserver).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, SIM_ORDERS, simulator_env

HERE = os.path.join(REPO, "tests", "e2e", "child_processes")
sys.path.insert(0, HERE)
import check  # noqa: E402

pytestmark = pytest.mark.slow

TORCHADA = ("first", "after", "none")
MUSA = ("entry-point", "explicit-first", "explicit-after")


def _prelude(torchada: str, musa: str) -> str:
    lines = []
    if musa == "explicit-first":
        lines.append("import torch_musa")
    if torchada == "first":
        lines.append("import torchada")
    lines.append("import torch")
    if musa == "explicit-after":
        lines.append("import torch_musa")
    if torchada == "after":
        lines.append("import torchada")
    lines.append(f"import sys; sys.path.insert(0, {HERE!r}); import check")
    return "\n".join(lines) + "\n"


def _cells():
    for order in SIM_ORDERS:
        for inherited in (True, False):
            for torchada in TORCHADA:
                for musa in MUSA:
                    # Without the package installed, torch_musa is importable only once torch's
                    # entry point has run with TORCHADA_SIMULATE=1 (a MUSA-written program's
                    # concern, not a CUDA-written one's).
                    if order == "switch" and musa == "explicit-first":
                        continue
                    if not inherited and torchada == "none":
                        continue  # nothing asks for torchada there
                    yield order, inherited, torchada, musa


CELLS = list(_cells())


def _cell_id(cell) -> str:
    order, inherited, torchada, musa = cell
    return f"{order}-{'inherited' if inherited else 'fresh'}-torchada_{torchada}-musa_{musa}"


_NAMES_FILE = os.path.join(
    str(__import__("tempfile").gettempdir()), f"cuda-names-{os.getpid()}.json"
)


def _env(order: str) -> dict:
    """The child environment for ``order``, with the list of plain torch.cuda's names (every name
    a CUDA program can reach, private ones included) for check.py."""
    if not os.path.exists(_NAMES_FILE):
        plain = {k: v for k, v in os.environ.items() if not k.startswith("TORCHADA_")}
        r = subprocess.run(
            [sys.executable, "-c", "import json, torch; print(json.dumps(dir(torch.cuda)))"],
            capture_output=True,
            text=True,
            env=plain,
            check=True,
        )
        with open(_NAMES_FILE, "w") as f:
            f.write(r.stdout)
    return {**simulator_env(order), "CHILD_CHECK_NAMES": _NAMES_FILE}


def _run_parent(order: str, import_torchada: bool, commands: list, tmp, runner=False) -> list:
    argv = [
        sys.executable,
        *(["-m", "torchada.run", "--simulate"] if runner else []),
        os.path.join(HERE, "parent.py"),
        "--import-torchada" if import_torchada else "--plain",
        json.dumps(commands),
    ]
    r = subprocess.run(
        argv, capture_output=True, text=True, env=_env(order), cwd=str(tmp), timeout=1200
    )
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULTS ")][-1]
    return json.loads(line[len("RESULTS ") :])


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A fresh `python -c "import torchada"` on the installed simulator."""
    tmp = tmp_path_factory.mktemp("reference")
    code = "import torchada\n" + _prelude("none", "entry-point") + "check.report()\n"
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=_env("musa-first"),
        cwd=str(tmp),
        timeout=400,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    (ref,) = check.parse(r.stdout)
    yield ref
    os.remove(_NAMES_FILE)


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    """Runs every cell: per simulator order, one parent that imported torchada runs the inherited
    cells as its children, one plain parent the others."""
    tmp = tmp_path_factory.mktemp("matrix")
    results = {}
    for order in SIM_ORDERS:
        for inherited in (True, False):
            cells = [c for c in CELLS if c[0] == order and c[1] == inherited]
            commands = []
            for cell in cells:
                path = tmp / f"{_cell_id(cell)}.py"
                path.write_text(_prelude(cell[2], cell[3]) + "check.report()\n")
                commands.append([str(path)])
            for cell, res in zip(cells, _run_parent(order, inherited, commands, tmp)):
                results[cell] = res
    return results


def test_reference_is_a_complete_installation(reference):
    names = reference["names"]
    for private in ("_CudaDeviceProperties", "_utils", "_lazy_init", "_is_compiled"):
        assert names[private] != "missing", private
    assert reference["enabled"] and reference["installs"][1] == 1
    assert reference["module_device"] == "musa:0" and reference["dynamo"]


def _assert_same_process(got: dict, reference: dict) -> None:
    missing = sorted(set(reference["names"]) - set(got["names"]))
    extra = sorted(set(got["names"]) - set(reference["names"]))
    assert not missing and not extra, {"missing": missing, "extra": extra}
    differ = {
        n: (got["names"][n], v) for n, v in reference["names"].items() if got["names"][n] != v
    }
    assert not differ
    assert got["enabled"] is True
    assert got["installs"] == reference["installs"]  # one installation, not two
    assert got["dynamo"] is True
    assert got["module_device"].startswith("musa:")
    assert got["weights_moved"] and got["step_max_diff"] < 1e-5  # AdamW on "cuda" == on the CPU


@pytest.mark.parametrize("cell", CELLS, ids=[_cell_id(c) for c in CELLS])
def test_child_process_matches_a_fresh_import(cell, matrix, reference):
    res = matrix[cell]
    assert res["rc"] == 0, res["stderr"]
    (got,) = check.parse(res["stdout"])
    _assert_same_process(got, reference)
    order = cell[0]
    if order != "switch":
        ours, theirs = got["entry_points"].index("torchada"), got["entry_points"].index(
            "torch_musa"
        )
        assert (theirs < ours) == (order == "musa-first"), got["entry_points"]


def test_children_of_the_runner(reference, tmp_path):
    # python -m torchada.run --simulate parent.py, whose children import torchada themselves
    # (first or after torch) or not at all.
    commands = []
    for torchada in TORCHADA:
        path = tmp_path / f"runner_child_{torchada}.py"
        path.write_text(_prelude(torchada, "entry-point") + "check.report()\n")
        commands.append([str(path)])
    results = _run_parent("switch", False, commands, tmp_path, runner=True)
    for res in results:
        assert res["rc"] == 0, res["stderr"]
        (got,) = check.parse(res["stdout"])
        _assert_same_process(got, reference)


# ------------------------------------------------------------------ other kinds of child process
_KIND_BODY = {
    "torchrun": "check.report('rank' + __import__('os').environ['RANK'])\n",
    "mp_spawn": (
        "import torch.multiprocessing as mp\n"
        "def work(i):\n"
        "    check.report(f'spawn{i}')\n"
        "if __name__ == '__main__':\n"
        "    mp.spawn(work, nprocs=2)\n"
    ),
    "dataloader_spawn": "",
    "dataloader_forkserver": "",
}
_DATALOADER = (
    "class Items(torch.utils.data.Dataset):\n"
    "    def __len__(self):\n"
    "        return 4\n"
    "    def __getitem__(self, i):\n"
    "        return torch.tensor(i)\n"
    "def init(worker_id):\n"
    "    check.report(f'worker{{worker_id}}')\n"
    "if __name__ == '__main__':\n"
    "    loader = torch.utils.data.DataLoader(\n"
    "        Items(), batch_size=2, num_workers=2,\n"
    "        multiprocessing_context={ctx!r}, worker_init_fn=init)\n"
    "    assert sorted(int(v) for b in loader for v in b) == [0, 1, 2, 3]\n"
)
KINDS = [
    (kind, order, torchada)
    for kind in _KIND_BODY
    for order, torchada in (("musa-first", "first"), ("switch", "first"), ("musa-first", "none"))
]


@pytest.mark.parametrize("kind,order,torchada", KINDS, ids=["-".join(k) for k in KINDS])
def test_workers_of_a_parent_that_imported_torchada(kind, order, torchada, reference, tmp_path):
    body = _KIND_BODY[kind] or _DATALOADER.format(ctx=kind.split("_")[1])
    prog = tmp_path / f"{kind}.py"
    prog.write_text(_prelude(torchada, "entry-point") + body)
    if kind == "torchrun":
        command = [
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            str(prog),
        ]
    else:
        command = [str(prog)]
    (res,) = _run_parent(order, True, [command], tmp_path)
    assert res["rc"] == 0, res["stderr"]
    reports = check.parse(res["stdout"])
    assert sorted(r["tag"] for r in reports) == {
        "torchrun": ["rank0", "rank1"],
        "mp_spawn": ["spawn0", "spawn1"],
    }.get(kind, ["worker0", "worker1"])
    for got in reports:
        _assert_same_process(got, reference)


# ------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("name", ["TORCHADA_SIMULATE", "TORCHADA_ACTIVE"])
def test_misspelled_switch_warns_once_naming_the_variable(name, tmp_path):
    env = simulator_env("musa-first")
    env[name] = "ture"
    code = "import torch\nimport torchada\nimport torch\nprint(torchada.is_enabled())\n"
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(tmp_path)
    )
    assert r.returncode == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warnings) == 1, r.stderr
    assert f"{name}='ture' is not an on/off value" in warnings[0]
    assert f"{name}=1" in warnings[0]
    assert r.stdout.split() == ["True"]  # the program's own import torchada still works
