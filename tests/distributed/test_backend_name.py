"""The name a process group gives on MUSA: CUDA's for a group MCCL serves (docs/distributed.md has
the table, measured on CUDA), torch's own inside the backend_name callers of
tables/nvidia_callers.json (each row checked here), and torch's own everywhere with
TORCHADA_BACKEND_NAME=mccl. One rank, in a fresh process: process groups are global state."""

from __future__ import annotations

import json

from torchada._core import tables as _tables

ROWS = [r for r in _tables.load("nvidia_callers").callers if "backend_name" in r.questions]

# Each way of making the default group, then a subgroup with no backend and a DeviceMesh. Every
# answer to the program, as CUDA gave it (torch 2.11, one H200, world size 1).
PROGRAM = """
import json, sys, tempfile
import torch
import torchada
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d
from torch.distributed.device_mesh import init_device_mesh

def answers(pg):
    return [dist.get_backend(pg), dist.get_backend_config(pg), pg.name(), pg._get_backend_name(),
            c10d.get_backend(pg), dist.get_backend(pg) is dist.Backend.NCCL]

ASK = "[dist.get_backend(), dist.get_backend_config(), dist.group.WORLD.name()]"

def asker(module, function, depth):
    # A function named as the row's (module, Class.method), depth frames above the questions.
    src = "".join(f"def h{i}():\\n    return {f'h{i + 1}()' if i + 1 < depth else ASK}\\n"
                  for i in range(1, depth))
    call = "h1()" if depth > 1 else ASK
    *owners, name = function.split(".")
    lines, indent = [], ""
    for owner in owners:
        lines.append(f"{indent}class {owner}:")
        indent += "    "
    lines += [f"{indent}@staticmethod"] * bool(owners)
    lines += [f"{indent}def {name}():", f"{indent}    return {call}"]
    ns = {"__name__": module, "dist": dist}
    exec(compile(src + "\\n".join(lines) + "\\n", module, "exec"), ns)
    target = ns[(owners or [name])[0]]
    for part in (owners[1:] + [name]) if owners else []:
        target = getattr(target, part)
    return target

out = {}
for form in json.loads(sys.argv[1]):
    backend, device_id = form
    kw = {"device_id": torch.device(device_id)} if device_id else {}
    dist.init_process_group(backend, init_method="file://" + tempfile.mktemp(), rank=0,
                            world_size=1, **kw)
    sub = dist.new_group([0])
    mesh = init_device_mesh("cuda", (1,))
    t = torch.ones(1, device="cuda")
    dist.all_reduce(t, group=sub)
    out[str(form)] = {"world": answers(dist.group.WORLD), "sub": answers(sub),
                      "mesh": answers(mesh.get_group()), "sum": [t.item(), str(t.device)]}
    if form == ["nccl", None]:
        rows = {}
        for module, function, depth in json.loads(sys.argv[2]):
            rows[f"{module}:{function}"] = [
                asker(module, function, depth)(),
                asker(module, function, depth + 1)() if depth < 4 else None,
                asker(module + "_elsewhere", function, 1)(),
            ]
        out["rows"] = rows
        # torch's own callers, as they run: an object's bytes are hashed for NCCL under DETAIL
        # debugging, which fails on a CUDA build of torch (2.7.1 here) unless told "mccl".
        dist.set_debug_level(dist.DebugLevel.DETAIL)
        tensor, size = c10d._object_to_tensor({"x": 1}, torch.device("cuda"), None)
        out["object"] = c10d._tensor_to_object(tensor, size, None)
        dist.set_debug_level(dist.DebugLevel.OFF)
        # torch's logs of a failing collective and the profiler's trace read the NCCL version
        # for an NCCL group: torch.cuda.nccl is MCCL's.
        from torch.distributed import c10d_logger
        out["versions"] = [c10d_logger._get_msg_dict("all_reduce").get("nccl_version"),
                           torch.profiler.profile()._get_distributed_info().get("nccl_version"),
                           ".".join(map(str, torch.musa.mccl.version()))]
    dist.destroy_process_group()
if "--disable" in sys.argv:
    torchada.disable()
    out["disabled"] = [torch.distributed.get_backend is c10d.get_backend,
                       c10d.get_backend.__module__, hasattr(c10d.ProcessGroup.name, "__wrapped__")]
print(json.dumps(out))
"""

FORMS = [
    ["nccl", None],
    ["NCCL", None],
    [None, None],
    [None, "cuda:0"],
    ["cuda:nccl,cpu:gloo", None],
    ["cpu:gloo,cuda:nccl", None],
    ["mccl", None],
    ["musa:mccl,cpu:gloo", None],
]
NCCL = ["nccl", "cuda:nccl", "nccl", "nccl", "nccl", True]


def _run(py, env=None, extra=()):
    rows = [[r.module, r.function, r.depth] for r in ROWS]
    code = "import sys; sys.argv[1:] = " + repr([json.dumps(FORMS), json.dumps(rows), *extra])
    r = py(code + "\n" + PROGRAM, env={"TORCHADA_SIMULATE": "1", **(env or {})})
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_groups_answer_what_cuda_answers(py):
    out = _run(py, extra=["--disable"])
    for form in FORMS:
        seen = out[str(form)]
        assert seen["sum"] == [1.0, "musa:0"], form  # MCCL ran it, on the device
        kind = form[0] if form[0] is not None else ("device" if form[1] else "none")
        expected = {
            "nccl": NCCL,
            "NCCL": NCCL,
            # Chosen by device: the device's backend, as CUDA names it.
            "device": NCCL,
            # No backend and no device: torch records "undefined", as on CUDA.
            "none": ["undefined", "cuda:nccl", "nccl", "nccl", "undefined", False],
            "cuda:nccl,cpu:gloo": ["cuda:nccl,cpu:gloo"] * 2
            + ["nccl"] * 2
            + ["cuda:nccl,cpu:gloo", False],
            "cpu:gloo,cuda:nccl": ["cpu:gloo,cuda:nccl"] * 2
            + ["nccl"] * 2
            + ["cpu:gloo,cuda:nccl", False],
            # Made as "mccl" (Lightning passes default_device_backend_map["cuda"], which is
            # "mccl" while torchada is on): what the same call gives on CUDA.
            "mccl": NCCL,
            "musa:mccl,cpu:gloo": ["cuda:nccl,cpu:gloo"] * 2
            + ["nccl"] * 2
            + ["cuda:nccl,cpu:gloo", False],
        }[kind]
        assert seen["world"] == expected, (form, seen)
        assert seen["sub"] == expected, (form, seen)
        assert seen["mesh"] == expected, (form, seen)
    assert out["object"] == {"x": 1}
    assert out["versions"][0] == out["versions"][1] == out["versions"][2]
    # disable() puts torch's own functions back where it replaced them.
    assert out["disabled"] == [True, "torch.distributed.distributed_c10d", False]


def test_each_backend_name_caller_gets_torchs_own_answer(py):
    assert ROWS, "nvidia_callers.json has backend_name rows"
    out = _run(py)["rows"]
    truth = ["mccl", "musa:mccl", "custom"]
    for row in ROWS:
        inside, further, elsewhere = out[f"{row.module}:{row.function}"]
        assert inside == truth, row
        if row.depth < 4:  # one frame further away, the row no longer applies
            assert further == ["nccl", "cuda:nccl", "nccl"], row
        assert elsewhere == ["nccl", "cuda:nccl", "nccl"], row


def test_the_published_answer_on_request(py):
    out = _run(py, env={"TORCHADA_BACKEND_NAME": "mccl"})
    truth = ["mccl", "musa:mccl", "custom", "custom", "mccl", False]
    assert out[str(["nccl", None])]["world"] == truth
    assert out[str(["cuda:nccl,cpu:gloo", None])]["world"][:2] == ["musa:mccl,cpu:gloo"] * 2
    for inside, further, elsewhere in out["rows"].values():
        assert inside == elsewhere == truth[:3] and further in (None, truth[:3])


def test_a_bad_switch_value_is_refused_with_its_choices(py):
    r = py("import torchada", env={"TORCHADA_SIMULATE": "1", "TORCHADA_BACKEND_NAME": "hccl"})
    assert "TORCHADA_BACKEND_NAME='hccl' is not valid: use one of 'nccl', 'mccl'" in r.stderr


def test_the_issues_program_branches_to_the_device(py, tmp_path):
    # One rank of the issue's program, and what it did with the published answer.
    code = f"""
        import json, torch, torchada
        import torch.distributed as dist
        dist.init_process_group("nccl", init_method="file://{tmp_path / 'store'}", rank=0,
                                world_size=1)
        stats = torch.tensor([1.0], device="cuda" if dist.get_backend() == "nccl" else "cpu")
        try:
            dist.all_reduce(stats)
            print(json.dumps(str(stats.device)))
        except RuntimeError as e:
            print(json.dumps(str(e)))
    """
    runs = {}
    for name in ("nccl", "mccl"):
        r = py(code, env={"TORCHADA_SIMULATE": "1", "TORCHADA_BACKEND_NAME": name})
        assert r.returncode == 0, r.stderr[-3000:]
        runs[name] = json.loads(r.stdout.strip().splitlines()[-1])
    assert runs["nccl"] == "musa:0"
    assert "No backend type associated with device type cpu" in runs["mccl"]


def test_doctor_shows_the_answer_in_force(py):
    lines = {}
    for name in ("", "mccl"):
        env = {"TORCHADA_SIMULATE": "1", **({"TORCHADA_BACKEND_NAME": name} if name else {})}
        r = py(
            "import runpy, sys; sys.argv = ['torchada', 'doctor']; "
            "runpy.run_module('torchada', run_name='__main__')",
            env=env,
        )
        lines[name] = [x for x in r.stdout.splitlines() if x.startswith("nccl group")]
    assert lines[""] == [
        "nccl group    get_backend() is 'nccl'  (CUDA's name for MCCL: the default; torch's own "
        "inside the NVIDIA-only callers (tables/nvidia_callers.json))"
    ]
    assert lines["mccl"] == [
        "nccl group    get_backend() is 'mccl'  (torch's own answer, as the published torchada: "
        "TORCHADA_BACKEND_NAME=mccl)"
    ]
