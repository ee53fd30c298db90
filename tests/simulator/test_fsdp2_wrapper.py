"""torch_musa's FSDP2 wrapper, per simulated release, and torchada's routing around it.

torch_musa wraps ``torch.distributed.fsdp.fully_shard`` when it imports; the first call replaces
FSDP2's stream set-up and (with no overlap, the default) ``FSDPParamGroup.wait_for_unshard`` and
``post_backward`` process-wide, whatever the mesh. A MUSA mesh trains through those replacements;
a CPU mesh breaks without torchada (2.7.1 and 2.9.1.post1: "FSDP requires MUSA for streams"
without MUSA; with MUSA, and on 2.11.0.post2 always, MUSA streams that torch's CPU code cannot
wait on). torchada sends a non-MUSA mesh to torch's own ``fully_shard``, before and after the
replacements are in place.

Each case runs in a fresh process (a process simulates one release for good), in a one-rank world.
"""

from __future__ import annotations

import json

import pytest
from conftest import run_python, sim_release_params

from torchada._simulator import releases

RELEASES = sim_release_params()

# plan: the meshes to train on, in order ("musa", "cuda" or "cpu"); each trains a fresh two-layer
# model three SGD steps on that mesh and a copy of it without FSDP on the CPU.
PROGRAM = """
import copy, inspect, json, os, warnings
import torch
if {torchada!r}:
    import torchada
else:
    from torchada import _simulator
    _simulator.activate()
import torch.distributed as dist
import torch.distributed.fsdp as fsdp
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp._fully_shard._fsdp_param_group import FSDPCommContext, FSDPParamGroup
from torch.distributed.fsdp._fully_shard._fsdp_state import FSDPState

METHODS = [(FSDPCommContext, "lazy_init"), (FSDPParamGroup, "wait_for_unshard"),
           (FSDPParamGroup, "post_backward"), (FSDPState, "_init_shared_state"),
           (FSDPState, "_pre_forward")]

def owners():
    return [getattr(c.__dict__[n], "__module__", "?") for c, n in METHODS]

os.environ["MASTER_ADDR"] = "127.0.0.1"
os.environ["MASTER_PORT"] = str(29500 + os.getpid() % 1000)
dist.init_process_group({backend!r}, rank=0, world_size=1)
wrapper = fsdp.fully_shard
out = {{"file": wrapper.__code__.co_filename.replace(os.sep, "/"), "name": wrapper.__name__,
        "wrapped_is_torchs": getattr(wrapper, "__wrapped__", None) is fsdp._fully_shard.fully_shard,
        "owners_before": owners(), "runs": []}}
if {torchada!r}:
    from torchada._distributed import fsdp2
    found = fsdp2.musa_wrapper()
    out["routes_around"] = found[0].__code__.co_filename.replace(os.sep, "/")

def streams(ctx):
    names = ("all_gather_copy_in_stream", "all_gather_stream", "reduce_scatter_stream",
             "all_reduce_stream")
    got = [getattr(ctx, n, None) for n in names]
    kinds = [type(s).__module__ + "." + type(s).__name__ for s in got]
    ids = [(getattr(s, "stream_id", id(s)), getattr(s, "device_index", -1)) for s in got]
    return kinds, [ids.index(i) for i in ids]  # which of the four each one is

def train(kind):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    reference = copy.deepcopy(model)
    mesh = init_device_mesh(kind, (1,))
    model.to(mesh.device_type)
    fsdp.fully_shard(model[0], mesh=mesh)
    fsdp.fully_shard(model, mesh=mesh)
    run = {{"mesh": mesh.device_type, "owners": owners()}}
    state = fsdp.fully_shard.state(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    x = torch.randn(4, 8)
    initial = torch.cat([p.detach().clone().reshape(-1) for p in reference.parameters()])
    try:
        for _ in range(3):
            opt.zero_grad()
            model(x.to(mesh.device_type)).square().sum().backward()
            opt.step()
            ref_opt.zero_grad()
            reference(x).square().sum().backward()
            ref_opt.step()
        weights = torch.cat([p.full_tensor().detach().cpu().reshape(-1)
                             for p in model.parameters()])
        ref_weights = torch.cat([p.detach().reshape(-1) for p in reference.parameters()])
        run["max_diff"] = float((weights - ref_weights).abs().max())
        run["moved"] = float((ref_weights - initial).abs().max()) > 1e-3
        run["local"] = str(model[0].weight.to_local().device)
    except Exception as e:
        run["error"] = type(e).__name__ + ": " + str(e)
    run["streams"], run["same"] = streams(state._comm_ctx)
    if hasattr(torch, "musa") and run["streams"][0].startswith("torch_musa"):
        current = torch.musa.current_stream()
        run["current_first"] = state._comm_ctx.all_gather_copy_in_stream == current
    inner = fsdp.fully_shard.state(model[0])
    group = (getattr(inner, "_fsdp_param_groups", None) or [inner._fsdp_param_group])[0]
    run["typo"] = str(getattr(group, "_traing_state", None))
    run["lazy_init_params"] = list(inspect.signature(FSDPCommContext.lazy_init).parameters)
    out["runs"].append(run)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for kind in {plan!r}:
        train(kind)
out["warnings"] = [str(w.message) for w in caught if "FSDP" in str(w.message)]
dist.destroy_process_group()
print(json.dumps(out))
"""

NO_OVERLAP_MSG = "The overlapping of FSDP2 was disabled on musa arch older than mp_31"
PATCHES = "torch_musa.distributed._composable.fsdp"
TORCH = "torch.distributed.fsdp._fully_shard"


def _run(release: str, plan, torchada: bool = False, backend: str = "", **env: str) -> dict:
    backend = backend or ("cpu:gloo,cuda:nccl" if torchada else "cpu:gloo,musa:mccl")
    code = PROGRAM.format(torchada=torchada, backend=backend, plan=list(plan))
    switches = {"TORCHADA_SIMULATE": "1"} if torchada else {"TORCHADA_ACTIVE": "0"}
    r = run_python(code, env={releases.SWITCH: release, **switches, **env})
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _shape(release: str) -> str:
    return releases.facts(release)["fsdp2_patch"]


def _owners_after(release: str) -> list:
    up_to_2_9 = _shape(release) == "2.7.1"
    state = f"{PATCHES}.custom_overlap_patch" if up_to_2_9 else f"{TORCH}._fsdp_state"
    return [
        f"{PATCHES}.custom_overlap_patch",
        f"{PATCHES}.patch",
        f"{PATCHES}.patch",
        state,
        state,
    ]


TORCH_OWNERS = [f"{TORCH}._fsdp_param_group"] * 3 + [f"{TORCH}._fsdp_state"] * 2
MUSA_STREAM = "torch_musa.core.stream.Stream"


@pytest.mark.parametrize("release", RELEASES)
def test_a_musa_mesh_trains_through_torch_musas_replacements(release):
    out = _run(release, ["musa"])
    assert out["file"].endswith("torch_musa/distributed/_composable/fsdp/patch.py")
    assert out["name"] == "fully_shard" and out["wrapped_is_torchs"]
    assert out["owners_before"] == TORCH_OWNERS  # nothing replaced before the first call
    (run,) = out["runs"]
    assert run["owners"] == _owners_after(release)
    assert run["mesh"] == "musa" and run["local"] == "musa:0" and "error" not in run
    assert run["max_diff"] < 1e-6 and run["moved"] is True
    # No overlap (S4000 is mp_22): one stream, the current one, for every collective.
    assert run["streams"] == [MUSA_STREAM] * 4 and run["same"] == [0, 0, 0, 0]
    assert run["current_first"] is True
    assert run["typo"] == "TrainingState.POST_BACKWARD"  # torch_musa's `_traing_state`
    assert run["lazy_init_params"] == (
        ["self"] if _shape(release) == "2.7.1" else ["self", "device"]
    )
    assert out["warnings"] == [NO_OVERLAP_MSG]


@pytest.mark.parametrize("release", RELEASES)
def test_a_cpu_mesh_without_torchada_gets_musa_streams_and_fails(release):
    out = _run(release, ["cpu"])
    (run,) = out["runs"]
    assert run["owners"] == _owners_after(release) and run["mesh"] == "cpu"
    # torch's root pre-forward makes the (MUSA) copy-in stream wait on the CPU stream, whose
    # record_event() records nothing: torch_musa's Stream.wait_event(None).
    assert run["error"] == "AttributeError: 'NoneType' object has no attribute 'wait'"
    assert run["streams"] == [MUSA_STREAM] * 4
    assert out["warnings"] == [NO_OVERLAP_MSG]


@pytest.mark.parametrize("release", RELEASES)
def test_a_cpu_mesh_without_torchada_or_musa_fails_as_the_release_does(release):
    out = _run(release, ["cpu"], backend="gloo", TORCHADA_SIM_DEVICES="0")
    (run,) = out["runs"]
    if _shape(release) == "2.7.1":
        assert run["error"] == "RuntimeError: FSDP requires MUSA for streams"
    else:  # lazy_init makes torch.musa streams whatever the device
        assert run["error"] == "RuntimeError: No MUSA GPUs are available"
    # The arch query could not read a device: torch_musa assumes mp_22.
    assert out["warnings"] == [NO_OVERLAP_MSG]


@pytest.mark.parametrize("release", RELEASES)
def test_torchada_sends_a_cpu_mesh_to_torchs_own_path_before_and_after_a_musa_mesh(release):
    out = _run(release, ["cpu", "cuda", "cpu"], torchada=True)
    assert out["file"].endswith("torchada/_distributed/fsdp2.py") and out["wrapped_is_torchs"]
    assert out["routes_around"].endswith("torch_musa/distributed/_composable/fsdp/patch.py")
    first, musa, second = out["runs"]
    # Before any MUSA mesh: torch's fully_shard alone (no arch query, nothing replaced).
    assert first["owners"] == TORCH_OWNERS and first["mesh"] == "cpu"
    assert musa["mesh"] == "musa" and musa["local"] == "musa:0"
    assert musa["streams"] == [MUSA_STREAM] * 4 and musa["typo"] == "TrainingState.POST_BACKWARD"
    for run in (first, second):
        assert "error" not in run and run["local"] == "cpu"
        assert run["streams"] == ["torch.cpu.Stream"] * 4 and run["typo"] == "None"
    for run in out["runs"]:
        assert run["max_diff"] < 1e-6
    assert out["warnings"] == [NO_OVERLAP_MSG]  # at the MUSA mesh's call only


@pytest.mark.parametrize(
    ("board", "patched", "warnings"), [("S5000", False, []), ("S4000", True, [NO_OVERLAP_MSG])]
)
def test_overlap_level_sets_the_streams_even_where_the_arch_disables_overlap(
    board, patched, warnings
):
    # Level 3: copy-in on a stream of its own, all-gather and reduce-scatter sharing another,
    # all-reduce on the current one. Below mp_31 torch_musa still replaces the methods for no
    # overlap, but its stream set-up keeps the level asked for.
    out = _run("2.7.1", ["musa"], TORCHADA_SIM_BOARD=board, TORCH_MUSA_FSDP2_OVERLAP_LEVEL="3")
    (run,) = out["runs"]
    assert run["streams"] == [MUSA_STREAM] * 4 and run["same"] == [0, 1, 1, 3]
    assert run["current_first"] is False and "error" not in run and run["max_diff"] < 1e-6
    replaced = run["owners"][1:3] == [f"{PATCHES}.patch"] * 2
    assert replaced is patched and run["owners"][0] == f"{PATCHES}.custom_overlap_patch"
    assert out["warnings"] == warnings
