"""The simulated "mccl" torch.distributed backend: registration, one rank in this process, and two
ranks in spawned processes (gloo over 127.0.0.1 underneath) checked value by value, DDP included."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

# The two-rank run imports this module in its processes, under the name pytest gave it.
_ROOT = Path(__file__).resolve().parents[__name__.count(".")]
WORLD = 2

# torch 2.13 renamed all_gather_into_tensor / reduce_scatter_tensor; the old names are what
# programs written for torch_musa 2.7 call.
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated:FutureWarning")


@pytest.fixture(scope="module", autouse=True)
def _sim(musa_sim):
    return musa_sim


@pytest.fixture
def single_rank():
    dist.init_process_group("mccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield dist.group.WORLD
    finally:
        dist.destroy_process_group()


# ---------------------------------------------------------------- registration
def test_backend_is_registered_for_musa():
    assert dist.Backend.MCCL == "mccl"
    assert "mccl" in dist.Backend.backend_list
    assert dist.Backend.default_device_backend_map["musa"] == "mccl"
    assert dist.Backend.backend_capability["mccl"] == ["musa"]
    assert dist.Backend.backend_type_map["mccl"] == dist.ProcessGroup.BackendType.CUSTOM
    assert dist.is_mccl_available() is True
    assert dist.distributed_c10d.is_mccl_available() is True
    assert dist.get_default_backend_for_device("musa") == "mccl"


def test_process_group_mccl_is_a_c10d_backend():
    # torch_musa binds ProcessGroupMCCL in C++ with c10d's Backend as its base.
    backend = torch._C._distributed_c10d.Backend
    assert dist.ProcessGroupMCCL.__mro__[1] is backend
    assert not issubclass(dist.ProcessGroupMCCL, dist.ProcessGroup)
    assert dist.ProcessGroupMCCL.__module__ == "torch.distributed"
    assert issubclass(dist.ProcessGroupMCCL.Options, backend.Options)
    # What torch_musa's Register.cpp binds on the class, beyond what Backend has.
    own = {name for name in vars(dist.ProcessGroupMCCL) if not name.startswith("__")}
    own.discard("_pybind11_conduit_v1_")  # pybind11 adds it to every class it binds
    assert own == {
        "_group_start", "_group_end", "comm_split_count", "_set_default_timeout",
        "_add_ephemeral_timeout", "_verify_work_timeout", "options", "uid", "bound_device_id",
        "perform_nocolor_split", "_is_initialized", "get_error", "Options",
    }  # fmt: skip
    # ProcessGroup's own names are not a backend's.
    for name in ("split_group", "group_name", "get_group_store", "_get_backend"):
        assert not hasattr(dist.ProcessGroupMCCL, name), name


def test_options_fields():
    opts = dist.ProcessGroupMCCL.Options(is_high_priority_stream=False)
    assert opts.is_high_priority_stream is False
    # split_color -2: "uninitialized" in ProcessGroupMCCL.h.
    assert opts.split_from is None and opts.split_color == -2
    assert opts.global_ranks_in_group == [] and opts.group_name == ""
    assert opts._timeout == timedelta(minutes=10) and opts.backend == "mccl"
    assert dist.ProcessGroupMCCL.Options(True).is_high_priority_stream is True
    opts.split_color, opts.group_name, opts.global_ranks_in_group = 3, "g", [0, 2]
    assert (opts.split_color, opts.group_name, opts.global_ranks_in_group) == (3, "g", [0, 2])


@pytest.mark.parametrize("form", ["options", "timeout_kw", "timeout_positional", "bare"])
def test_constructor_forms(form):
    store = dist.HashStore()
    minute = timedelta(minutes=1)
    if form == "options":
        opts = dist.ProcessGroupMCCL.Options(is_high_priority_stream=True)
        pg = dist.ProcessGroupMCCL(store, 0, 1, opts)
        assert pg.options is opts
    elif form == "timeout_kw":
        pg = dist.ProcessGroupMCCL(store, 0, 1, timeout=minute)
        assert pg.options._timeout == minute
    elif form == "timeout_positional":
        pg = dist.ProcessGroupMCCL(store, 0, 1, minute)
        assert pg.options._timeout == minute
    else:
        pg = dist.ProcessGroupMCCL(store, 0, 1)
        assert pg.options._timeout == timedelta(minutes=10)
    assert isinstance(pg, torch._C._distributed_c10d.Backend)
    assert pg.name() == "mccl" and (pg.rank(), pg.size()) == (0, 1)
    assert pg.supports_coalescing and not pg.supports_splitting
    t = torch.arange(3.0, device="musa:1")
    assert pg.allreduce([t]).wait()
    assert t.device == torch.device("musa", 1) and t.tolist() == [0.0, 1.0, 2.0]


def test_constructor_rejects_what_torch_musa_rejects():
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        dist.ProcessGroupMCCL(dist.HashStore(), 0, 1, "ten minutes")
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        dist.ProcessGroupMCCL(0, 1)


def test_methods_of_torch_musa():
    store = dist.HashStore()
    pg = dist.ProcessGroupMCCL(store, 0, 1)
    second = dist.ProcessGroupMCCL(store, 0, 1)
    assert second.uid == pg.uid + 1
    assert pg.comm_split_count() == 0
    assert pg.get_error() == torch._C._distributed_c10d.ErrorType.SUCCESS
    # Communicators come up with the first collective, or eagerly for a bound device.
    assert pg._is_initialized() is False
    pg.allreduce([torch.ones(1, device="musa")]).wait()
    assert pg._is_initialized() is True
    pg.eager_connect_single_device(torch.device("musa", 0))
    second.eager_connect_single_device(torch.device("musa", 0))
    assert second._is_initialized() is True
    pg.perform_nocolor_split(torch.device("musa", 0))  # MCCL has no comm split: nothing happens
    pg._set_default_timeout(timedelta(seconds=30))
    assert pg.options._timeout == timedelta(seconds=30)
    pg._add_ephemeral_timeout(timedelta(seconds=5))
    work = pg.allreduce([torch.ones(1, device="musa")])
    assert pg._verify_work_timeout(work, timedelta(seconds=35))
    assert not pg._verify_work_timeout(work, timedelta(seconds=30))
    assert pg.bound_device_id is None
    pg.bound_device_id = torch.device("musa", 1)
    assert pg.bound_device_id == torch.device("musa", 1)
    pg._group_start()
    pg._group_start()
    pg._group_end()
    pg._group_end()
    with pytest.raises(RuntimeError, match="mcclGroupEnd without mcclGroupStart"):
        pg._group_end()


def test_coalescing_returns_one_work_for_the_batch():
    pg = dist.ProcessGroupMCCL(dist.HashStore(), 0, 1)
    dev = torch.device("musa", 0)
    with pytest.raises(RuntimeError, match="without startCoalescing"):
        pg._end_coalescing()
    pg._start_coalescing()
    with pytest.raises(RuntimeError, match="already coalescing"):
        pg._start_coalescing()
    a, b = torch.ones(2, device=dev), torch.full((3,), 2.0, device=dev)
    pg.allreduce([a])
    pg.allreduce([b])
    work = pg._end_coalescing()
    assert work.wait() and a.tolist() == [1.0, 1.0] and b.tolist() == [2.0] * 3


# ---------------------------------------------------------------- one rank, in this process
def test_init_process_group_single_rank(single_rank):
    pg = single_rank
    assert dist.get_backend() == "mccl" and dist.get_world_size() == 1
    # torch's ProcessGroup, with ProcessGroupMCCL as its musa backend (as on hardware).
    assert type(pg) is dist.ProcessGroup
    assert isinstance(pg._get_backend(torch.device("musa")), dist.ProcessGroupMCCL)
    dev = torch.device("musa", 0)
    t = torch.tensor([1.0, -2.0, 3.5], device=dev)
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX, dist.ReduceOp.PRODUCT):
        dist.all_reduce(t, op=op)
    assert t.device == dev and t.tolist() == [1.0, -2.0, 3.5]
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() and work.is_completed()
    assert work.get_future().value()[0] is t
    out = torch.empty(1, 3, device=dev)
    dist.all_gather_into_tensor(out, t)
    assert out.tolist() == [[1.0, -2.0, 3.5]]
    rs = torch.empty(3, device=dev)
    dist.reduce_scatter_tensor(rs, t * 2)
    assert rs.tolist() == [2.0, -4.0, 7.0]
    dist.barrier()
    objects = [None]
    dist.all_gather_object(objects, {"rank": 0})
    assert objects == [{"rank": 0}]


@pytest.mark.parametrize(
    "dtype",
    [
        torch.float32, torch.int32, torch.int8, torch.uint8, torch.int64, torch.float16,
        torch.float64, torch.bool, torch.bfloat16, torch.float8_e4m3fn,
    ],
)  # fmt: skip
def test_single_rank_dtypes(single_rank, dtype):
    src = torch.tensor([0, 1, 3, 1], dtype=torch.float32).to(dtype)
    t = src.to("musa")
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT]
    for op in ops + ([] if dtype == torch.bool else [dist.ReduceOp.AVG]):
        dist.all_reduce(t, op=op)
    dist.broadcast(t, src=0)
    gathered = [torch.empty_like(t)]
    dist.all_gather(gathered, t)
    assert t.dtype == dtype and t.device.type == "musa"
    assert torch.equal(t.cpu().float(), src.float()) and torch.equal(gathered[0].cpu(), src)


def test_reduce_op_errors(single_rank):
    flags = torch.tensor([True, False], device="musa")
    with pytest.raises(RuntimeError, match="AVG with boolean"):
        dist.all_reduce(flags, op=dist.ReduceOp.AVG)
    t = torch.ones(2, dtype=torch.int32, device="musa")
    for op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):
        with pytest.raises(RuntimeError, match="Unexpected ReduceOp"):
            dist.all_reduce(t, op=op)
    with pytest.raises(RuntimeError, match="Unexpected ReduceOp"):
        dist.all_reduce(t.float(), op=dist._make_nccl_premul_sum(2.0))
    assert t.tolist() == [1, 1]


def test_default_backend_and_pg_options():
    # No backend named: torch picks the accelerator's (musa -> mccl). torch_musa registers a
    # creator of the plain (store, rank, size, timeout) form, so torch hands it the timeout and
    # keeps pg_options to itself: the backend gets fresh options, as on hardware.
    opts = dist.ProcessGroupMCCL.Options(is_high_priority_stream=True)
    dist.init_process_group(
        store=dist.HashStore(), rank=0, world_size=1, pg_options=opts, timeout=timedelta(minutes=3)
    )
    try:
        pg = dist.group.WORLD
        backend = pg._get_backend(torch.device("musa"))
        assert isinstance(backend, dist.ProcessGroupMCCL)
        assert backend.options is not opts and not backend.options.is_high_priority_stream
        assert backend.options._timeout == timedelta(minutes=3)
        sub = dist.new_group([0], backend="mccl")
        assert isinstance(sub._get_backend(torch.device("musa")), dist.ProcessGroupMCCL)
        assert sub.group_name != pg.group_name
        t = torch.ones(2, device="musa")
        dist.all_reduce(t, group=sub)
        assert t.tolist() == [1.0, 1.0]
        dist.destroy_process_group(sub)  # unregisters it by name
    finally:
        dist.destroy_process_group()


def test_single_rank_ddp_and_device_id():
    dist.init_process_group(
        "mccl", store=dist.HashStore(), rank=0, world_size=1, device_id=torch.device("musa", 1)
    )
    try:
        assert dist.group.WORLD.bound_device_id == torch.device("musa", 1)
        model = torch.nn.Linear(3, 1).to("musa:1")
        ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[1])
        before = model.weight.detach().clone()
        ddp(torch.ones(2, 3, device="musa:1")).sum().backward()
        torch.optim.SGD(ddp.parameters(), lr=0.5).step()
        # d(sum of outputs)/dW = column sums of the input: 2 per weight
        assert torch.allclose(model.weight.detach(), before - 1.0)
        dist.barrier()
    finally:
        dist.destroy_process_group()


# ---------------------------------------------------------------- two ranks, two processes
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank: int, world: int, port: int, out_dir: str) -> None:
    """One rank of the two-process run; records what every collective produced."""
    dist.init_process_group(
        "mccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    torch.musa.set_device(rank)
    dev = torch.device("musa", rank)
    res: dict = {"backend": dist.get_backend(), "device": str(dev)}

    def full(value, n=3, dtype=torch.float32):
        return torch.full((n,), value, dtype=dtype, device=dev)

    t = full(rank + 1.0)
    dist.all_reduce(t)
    res["sum"] = t.tolist()
    for name, op, value, dtype in [
        ("avg_float", dist.ReduceOp.AVG, rank + 1.0, torch.float32),
        ("avg_int", dist.ReduceOp.AVG, 2 * rank + 1, torch.int64),
        ("prod", dist.ReduceOp.PRODUCT, rank + 2, torch.int32),
        ("max_half", dist.ReduceOp.MAX, 0.5 * (rank + 1), torch.float16),
        ("min_int8", dist.ReduceOp.MIN, -rank, torch.int8),
        ("sum_bf16", dist.ReduceOp.SUM, 1.5, torch.bfloat16),
        ("sum_uint8", dist.ReduceOp.SUM, 200 + rank, torch.uint8),
    ]:
        t = full(value, 2, dtype)
        dist.all_reduce(t, op=op)
        res[name] = [t.dtype == dtype, t.device == dev, t.tolist()]
    flags = torch.tensor([rank == 0, False, True], device=dev)
    dist.all_reduce(flags)
    res["bool_sum"] = flags.tolist()
    flags = torch.tensor([rank == 0, True], device=dev)
    dist.all_reduce(flags, op=dist.ReduceOp.PRODUCT)
    res["bool_prod"] = flags.tolist()

    t = torch.arange(4, device=dev) * (rank + 1)
    dist.broadcast(t, src=1)
    res["broadcast"] = t.tolist()
    gathered = [torch.empty(2, dtype=torch.bfloat16, device=dev) for _ in range(world)]
    dist.all_gather(gathered, torch.full((2,), rank + 0.5, dtype=torch.bfloat16, device=dev))
    res["all_gather"] = [g.tolist() for g in gathered]
    out = torch.empty(world, 2, device=dev)
    dist.all_gather_into_tensor(out, torch.full((2,), float(rank), device=dev))
    res["all_gather_into_tensor"] = out.tolist()
    rs = torch.empty(2, device=dev)
    dist.reduce_scatter(rs, [torch.full((2,), 10.0 * i + rank, device=dev) for i in range(world)])
    res["reduce_scatter"] = rs.tolist()
    rs = torch.empty(2, dtype=torch.int64, device=dev)
    dist.reduce_scatter_tensor(rs, torch.arange(4, device=dev) + rank, op=dist.ReduceOp.MAX)
    res["reduce_scatter_tensor"] = rs.tolist()
    t = torch.tensor([rank + 1.0], device=dev)
    dist.reduce(t, dst=0)
    res["reduce"] = t.tolist()
    gather_list = [torch.empty(1, device=dev) for _ in range(world)] if rank == 0 else None
    dist.gather(torch.tensor([10.0 * rank], device=dev), gather_list, dst=0)
    res["gather"] = [g.tolist() for g in gather_list] if gather_list else None
    s = torch.empty(2, dtype=torch.int64, device=dev)
    chunks = [torch.full((2,), i, dtype=torch.int64, device=dev) for i in range(world)]
    dist.scatter(s, chunks if rank == 1 else None, src=1)
    res["scatter"] = s.tolist()
    o = torch.empty(2, dtype=torch.int64, device=dev)
    dist.all_to_all_single(o, torch.tensor([10 * rank, 10 * rank + 1], device=dev))
    res["all_to_all_single"] = o.tolist()
    splits = [1, 2] if rank == 0 else [2, 1]  # rank 0 keeps 1 row, rank 1 sends 2 rows to 0
    o = torch.empty(3, 2, device=dev)
    x = (torch.arange(6.0, device=dev) + 100 * rank).view(3, 2)
    dist.all_to_all_single(o, x, output_split_sizes=splits, input_split_sizes=splits)
    res["all_to_all_uneven"] = o.tolist()
    outs = [torch.empty(1, device=dev) for _ in range(world)]
    dist.all_to_all(outs, [torch.tensor([10.0 * rank + i], device=dev) for i in range(world)])
    res["all_to_all"] = [t.tolist() for t in outs]

    peer = 1 - rank
    send, recv = torch.tensor([100.0 + rank], device=dev), torch.empty(1, device=dev)
    for work in (dist.isend(send, peer), dist.irecv(recv, peer)):  # both ranks send first
        work.wait()
    res["isend_irecv"] = recv.tolist()
    recv.zero_()
    ops = [dist.P2POp(dist.isend, send * 2, peer), dist.P2POp(dist.irecv, recv, peer)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    res["batch_isend_irecv"] = recv.tolist()
    if rank == 0:
        dist.send(torch.tensor([7, 8], device=dev), dst=1)
    else:
        got = torch.empty(2, dtype=torch.int64, device=dev)
        res["recv_any_source"] = [dist.recv(got), got.tolist()]

    if rank == 1:
        time.sleep(0.5)
    start = time.perf_counter()
    dist.barrier()
    res["barrier_wait"] = time.perf_counter() - start
    objects: list = [None] * world
    dist.all_gather_object(objects, {"rank": rank})
    res["all_gather_object"] = objects
    sub = dist.new_group([0, 1])
    t = torch.ones(1, device=dev)
    dist.all_reduce(t, group=sub)
    res["subgroup"] = [dist.get_backend(sub), t.tolist()]

    res["ddp"] = _ddp_steps(rank, dev)
    dist.destroy_process_group()
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(res))


def _ddp_steps(rank: int, dev: torch.device) -> dict:
    torch.manual_seed(rank)  # different initial weights: DDP must broadcast rank 0's
    model = torch.nn.Linear(4, 1).to(dev)
    own_init = [p.detach().cpu().reshape(-1).tolist() for p in model.parameters()]
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    init = [p.detach().cpu().reshape(-1).tolist() for p in model.parameters()]
    gen = torch.Generator().manual_seed(100 + rank)  # each rank its own shard of the data
    x = torch.randn(8, 4, generator=gen)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.25
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x.to(dev)), y.to(dev))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    final = [p.detach().cpu().reshape(-1).tolist() for p in model.parameters()]
    return {"own_init": own_init, "init": init, "final": final, "losses": losses,
            "x": x.tolist(), "y": y.tolist()}  # fmt: skip


def _spawn_ranks(port: int, out_dir: str) -> None:
    import torch.multiprocessing as mp

    mp.spawn(_rank_main, args=(WORLD, port, out_dir), nprocs=WORLD)


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("mccl")
    env = dict(os.environ)
    env.pop("MUSA_VISIBLE_DEVICES", None)
    # torch_musa's MCCL alone, as on the real stack: torchada stays off in the ranks even where an
    # earlier test of this process turned it on (it would answer "nccl" for an MCCL group).
    env.pop("TORCHADA_ACTIVE", None)
    env.update(
        TORCHADA_SIMULATE="1",
        TORCHADA_SIM_DEVICES=str(WORLD),
        PYTHONPATH=os.pathsep.join(filter(None, [str(_ROOT), env.get("PYTHONPATH")])),
    )
    code = f"import {__name__} as m; m._spawn_ranks({_free_port()}, {str(out)!r})"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    # A non-zero status also catches a rank that aborts while exiting.
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {"ranks": [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD)]}


def test_two_ranks_reductions(two_ranks):
    for rank, res in enumerate(two_ranks["ranks"]):
        assert res["backend"] == "mccl" and res["device"] == f"musa:{rank}"
        assert res["sum"] == [3.0] * 3
        assert res["avg_float"] == [True, True, [1.5, 1.5]]
        assert res["avg_int"] == [True, True, [2, 2]]  # (1 + 3) / 2
        assert res["prod"] == [True, True, [6, 6]]
        assert res["max_half"] == [True, True, [1.0, 1.0]]
        assert res["min_int8"] == [True, True, [-1, -1]]
        assert res["sum_bf16"] == [True, True, [3.0, 3.0]]
        assert res["sum_uint8"] == [True, True, [145, 145]]  # 401 wraps modulo 256
        assert res["bool_sum"] == [True, False, True]
        assert res["bool_prod"] == [False, True]
        assert res["reduce"] == ([3.0] if rank == 0 else [2.0])  # only the root receives


def test_two_ranks_data_movement(two_ranks):
    r0, r1 = two_ranks["ranks"]
    for rank, res in enumerate((r0, r1)):
        assert res["broadcast"] == [0, 2, 4, 6]
        assert res["all_gather"] == [[0.5, 0.5], [1.5, 1.5]]
        assert res["all_gather_into_tensor"] == [[0.0, 0.0], [1.0, 1.0]]
        assert res["reduce_scatter"] == [20.0 * rank + 1] * 2  # 10 r + 0 plus 10 r + 1
        assert res["reduce_scatter_tensor"] == [2 * rank + 1, 2 * rank + 2]
        assert res["scatter"] == [rank, rank]
        assert res["all_to_all_single"] == [rank, 10 + rank]
        assert res["all_to_all"] == [[float(rank)], [10.0 + rank]]
        assert res["all_gather_object"] == [{"rank": 0}, {"rank": 1}]
        assert res["subgroup"] == ["mccl", [2.0]]
    assert r0["gather"] == [[0.0], [10.0]] and r1["gather"] is None
    assert r0["all_to_all_uneven"] == [[0.0, 1.0], [100.0, 101.0], [102.0, 103.0]]
    assert r1["all_to_all_uneven"] == [[2.0, 3.0], [4.0, 5.0], [104.0, 105.0]]


def test_two_ranks_point_to_point_and_barrier(two_ranks):
    r0, r1 = two_ranks["ranks"]
    assert r0["isend_irecv"] == [101.0] and r1["isend_irecv"] == [100.0]
    assert r0["batch_isend_irecv"] == [202.0] and r1["batch_isend_irecv"] == [200.0]
    assert r1["recv_any_source"] == [0, [7, 8]]
    assert r0["barrier_wait"] > 0.3  # rank 0 really waited for the late rank 1


def test_two_ranks_ddp_trains_like_the_full_batch(two_ranks):
    d0, d1 = (res["ddp"] for res in two_ranks["ranks"])
    assert d0["own_init"] != d1["own_init"]
    assert d0["init"] == d1["init"] == d0["own_init"]  # rank 0's weights were broadcast
    assert d0["final"] == d1["final"]
    assert d0["losses"][-1] < d0["losses"][0] and d1["losses"][-1] < d1["losses"][0]
    # DDP averages the ranks' gradients: the same steps on the union of both shards.
    ref = torch.nn.Linear(4, 1)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(d0["init"][0]).view(1, 4))
        ref.bias.copy_(torch.tensor(d0["init"][1]))
    x = torch.tensor(d0["x"] + d1["x"])
    y = torch.tensor(d0["y"] + d1["y"])
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(5):
        opt.zero_grad()
        torch.nn.functional.mse_loss(ref(x), y).backward()
        opt.step()
    expected = [p.detach().reshape(-1) for p in ref.parameters()]
    for got, want in zip(d0["final"], expected):
        torch.testing.assert_close(torch.tensor(got), want, rtol=1e-5, atol=1e-6)


def test_an_mccl_group_leaves_torchada_off(tmp_path):
    # The simulated ProcessGroupMCCL loads its collectives from torchada._simulator; that must
    # not import the torchada package itself, which would turn torchada on (and then answer
    # "nccl" for the group) in a program that only loaded torch_musa.
    from conftest import run_python

    code = f"""
        import json, sys
        import torch, torch.distributed as dist
        dist.init_process_group("mccl", init_method="file://{tmp_path / 'store'}", rank=0,
                                world_size=1)
        print(json.dumps([dist.get_backend(), "torchada" in sys.modules]))
        dist.destroy_process_group()
    """
    env = {"TORCHADA_SIMULATE": "1", "TORCHADA_ACTIVE": "0"}
    r = run_python(code, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.splitlines()[-1]) == ["mccl", False]
