"""torch.distributed fills: "nccl" in every group factory and however it is passed, and groups of
backends without a MUSA side next to a device-bound default group (one rank, in a fresh process:
process groups are global state)."""

from __future__ import annotations

import json


def test_cpu_group_next_to_a_device_bound_nccl_group(py, tmp_path):
    code = f"""
        import json, torch
        import torchada
        import torch.distributed as dist

        torch.cuda.set_device(1)
        dist.init_process_group("nccl", init_method="file://{tmp_path / 'store'}", rank=0,
                                world_size=1, device_id=torch.device("cuda:1"))
        default = dist.distributed_c10d._get_default_group()
        cpu_group = dist.new_group(backend="gloo")
        t = torch.tensor([2.0, 3.0])
        dist.all_reduce(t, group=cpu_group)
        dist.barrier(group=cpu_group)
        sub, _ = dist.new_subgroups(1, None, None, "gloo")  # backend is the 4th positional
        nccl_sub, _ = dist.new_subgroups(1, None, None, "nccl")
        enum_sub, _ = dist.new_subgroups_by_enumeration([[0]], backend="nccl")
        dev_group = dist.new_group(backend="nccl")
        u = torch.ones(2, device="cuda")
        dist.all_reduce(u, group=dev_group)
        err = None
        try:
            dist.all_reduce(torch.ones(1, device="cuda"), group=cpu_group)
        except RuntimeError as e:
            err = str(e)
        print(json.dumps({{
            "cpu": [t.tolist(), dist.get_backend(cpu_group), cpu_group.bound_device_id is None],
            "sub": [dist.get_backend(sub), sub.bound_device_id is None],
            "nccl_subs": [dist.get_backend(nccl_sub), dist.get_backend(enum_sub)],
            "dev": [dist.get_backend(dev_group), str(dev_group.bound_device_id), str(u.device)],
            "default_bound": str(default.bound_device_id),
            "musa_tensor_on_gloo": err,
        }}))
        dist.destroy_process_group()
    """
    r = py(code, env={"TORCHADA_SIMULATE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["cpu"] == [[2.0, 3.0], "gloo", True]
    assert out["sub"] == ["gloo", True]
    assert out["nccl_subs"] == ["nccl", "nccl"]  # CUDA's name (test_backend_name.py)
    # Groups of a backend that serves the device stay bound, and the default group keeps its device.
    assert out["dev"] == ["nccl", "musa:1", "musa:1"]
    assert out["default_bound"] == "musa:1"
    # gloo has no MUSA support: a musa tensor on the CPU group fails as torch says.
    assert "No backend type associated with device type musa" in out["musa_tensor_on_gloo"]


def test_cuda_device_backend_is_mccl_unless_switched_off(py, tmp_path):
    # With no backend named, torch picks one per device type: "cuda" must mean MCCL on MUSA.
    code = f"""
        import json, torch
        import torchada
        import torch.distributed as dist

        mapping = dist.Backend.default_device_backend_map
        on = mapping.get("cuda")
        dist.init_process_group(init_method="file://{tmp_path / 'store'}", rank=0, world_size=1,
                                device_id=torch.device("cuda:0"))
        backend = dist.get_backend()
        t = torch.ones(2, device="cuda")
        dist.all_reduce(t)
        dist.destroy_process_group()
        torchada.disable()
        print(json.dumps({{"on": on, "backend": backend, "sum": t.tolist(),
                           "off": mapping.get("cuda")}}))
    """
    r = py(code, env={"TORCHADA_SIMULATE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {"on": "mccl", "backend": "nccl", "sum": [1.0, 1.0], "off": "nccl"}

    switched = py(
        "import torchada, torch.distributed as dist\n"
        "print(dist.Backend.default_device_backend_map.get('cuda'))",
        env={"TORCHADA_SIMULATE": "1", "TORCHADA_DISABLE_BACKEND_MAP": "1"},
    )
    assert switched.returncode == 0, switched.stderr[-3000:]
    assert switched.stdout.strip().splitlines()[-1] == "nccl"


def test_c10d_methods_take_cuda_devices(py, tmp_path):
    # torch's own helpers ask a group for its backend with torch.device("cuda") once "cuda" is
    # among its device types (which torchada's device identity makes it), and CUDA programs pass
    # their devices to the same methods.
    code = f"""
        import json
        from datetime import timedelta
        import torch
        import torchada
        import torch.distributed as dist
        from torch.distributed import distributed_c10d as c10d

        dist.init_process_group("nccl", init_method="file://{tmp_path / 'store'}", rank=0,
                                world_size=1)
        pg = dist.group.WORLD
        cuda = torch.device("cuda")
        out = {{"in_types": cuda in pg._device_types}}
        devices = (cuda, torch.device("cuda", 1), "cuda", torch.device("musa"))
        out["get_backend"] = [type(pg._get_backend(d)).__name__ for d in devices]
        out["by_keyword"] = type(pg._get_backend(device=cuda)).__name__
        c10d._set_pg_timeout(timedelta(seconds=90), pg)
        c10d._add_ephemeral_timeout_for_all_pgs(timedelta(seconds=5))
        pg.bound_device_id = torch.device("cuda", 1)
        out["bound"] = str(pg.bound_device_id)
        pg._start_coalescing(cuda)
        t = torch.ones(2, device="cuda")
        dist.all_reduce(t)
        pg._end_coalescing(cuda).wait()
        out["coalesced"] = t.tolist()
        backend = pg._get_backend(cuda)
        backend.eager_connect_single_device(torch.device("cuda", 0))
        out["connected"] = backend._is_initialized()
        sub = dist.new_group([0], backend="nccl", device_id=torch.device("cuda", 1))
        out["sub"] = [dist.get_backend(sub), str(sub.bound_device_id)]
        print(json.dumps(out))
        dist.destroy_process_group()
    """
    r = py(code, env={"TORCHADA_SIMULATE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["in_types"] is True
    assert out["get_backend"] == ["ProcessGroupMCCL"] * 4
    assert out["by_keyword"] == "ProcessGroupMCCL"
    assert out["bound"] == "musa:1"
    assert out["coalesced"] == [1.0, 1.0]
    assert out["connected"] is True
    assert out["sub"] == ["nccl", "musa:1"]


def test_c10d_device_methods_have_their_own_switch(py):
    # TORCHADA_DISABLE_C10D leaves c10d's methods alone; TORCHADA_DISABLE_DEVICE_ARGS, which is
    # about torch.cuda's device arguments, does not reach them.
    code = (
        "import json, torch, torchada\n"
        "method = torch._C._distributed_c10d.ProcessGroup._get_backend\n"
        "stream_new = torch.musa.Stream.__new__\n"
        "print(json.dumps([hasattr(method, '__wrapped__'), hasattr(stream_new, '__wrapped__')]))"
    )
    seen = {}
    for switch in ("", "TORCHADA_DISABLE_C10D", "TORCHADA_DISABLE_DEVICE_ARGS"):
        env = {"TORCHADA_SIMULATE": "1", **({switch: "1"} if switch else {})}
        r = py(code, env=env)
        assert r.returncode == 0, r.stderr[-3000:]
        seen[switch] = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen == {
        "": [True, True],
        "TORCHADA_DISABLE_C10D": [False, True],
        "TORCHADA_DISABLE_DEVICE_ARGS": [True, False],
    }
