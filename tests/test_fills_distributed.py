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
    assert out["nccl_subs"] == ["mccl", "mccl"]
    # Groups of a backend that serves the device stay bound, and the default group keeps its device.
    assert out["dev"] == ["mccl", "musa:1", "musa:1"]
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
    assert out == {"on": "mccl", "backend": "mccl", "sum": [1.0, 1.0], "off": "nccl"}

    switched = py(
        "import torchada, torch.distributed as dist\n"
        "print(dist.Backend.default_device_backend_map.get('cuda'))",
        env={"TORCHADA_SIMULATE": "1", "TORCHADA_DISABLE_BACKEND_MAP": "1"},
    )
    assert switched.returncode == 0, switched.stderr[-3000:]
    assert switched.stdout.strip().splitlines()[-1] == "nccl"
