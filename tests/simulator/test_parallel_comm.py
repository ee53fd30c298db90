"""torch_musa's comm entry points (``_MUSAC._broadcast``, ``_broadcast_coalesced``, ``_scatter``,
``_gather``) and torch_musa's build of ``torch.nn.parallel.comm`` that calls them: what
``nn.DataParallel`` runs on musa devices. No torchada here: the simulated torch_musa alone."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn


@pytest.fixture(scope="module", autouse=True)
def _sim(musa_sim):
    return musa_sim


def _musac():
    import torch_musa

    return torch_musa._MUSAC


def test_entry_points_are_torch_musa_s():
    musac = _musac()
    for name in ("_broadcast", "_broadcast_coalesced", "_scatter", "_gather"):
        assert callable(getattr(musac, name)), name
    # torch_musa's patch of comm.py names these too, but its C module does not define them.
    for name in ("_broadcast_out", "_scatter_out", "_gather_out"):
        assert not hasattr(musac, name), name


def test_broadcast_and_coalesced():
    t = torch.arange(3.0, device="musa:0")
    copies = torch.nn.parallel.comm.broadcast(t, devices=[0, 1])
    assert copies[0] is t  # its own device gets the tensor itself
    assert copies[1].device == torch.device("musa", 1) and copies[1].tolist() == [0.0, 1.0, 2.0]
    a, b = torch.ones(2, device="musa:1"), torch.zeros(1, 2, device="musa:1")
    out = torch.nn.parallel.comm.broadcast_coalesced([a, b], [1, 0])
    assert out[0][0] is a and out[0][1] is b
    assert [str(x.device) for x in out[1]] == ["musa:0", "musa:0"]
    assert out[1][1].shape == (1, 2)
    with pytest.raises(RuntimeError, match=r"must be on devices\[0\] \(musa:0\)"):
        torch.nn.parallel.comm.broadcast_coalesced([a], [0, 1])
    # torch_musa's comm is CUDA's ported: a CPU source goes to every device, and a device
    # source must be the first device.
    from_cpu = torch.nn.parallel.comm.broadcast(torch.ones(2), devices=[1, 0])
    assert [str(c.device) for c in from_cpu] == ["musa:1", "musa:0"]
    with pytest.raises(RuntimeError, match="must appear as the first on devices list"):
        torch.nn.parallel.comm.broadcast(t, devices=[1, 0])


def test_scatter_and_gather():
    t = torch.arange(10.0).view(5, 2)
    even = torch.nn.parallel.comm.scatter(t, devices=[0, 1])
    assert [(str(c.device), c.shape[0]) for c in even] == [("musa:0", 3), ("musa:1", 2)]
    sized = torch.nn.parallel.comm.scatter(t.to("musa"), devices=[1, 0], chunk_sizes=[1, 4])
    assert [str(c.device) for c in sized] == ["musa:1", "musa:0"]
    assert sized[0].tolist() == [[0.0, 1.0]] and sized[1].shape == (4, 2)
    with pytest.raises(RuntimeError, match="devices and chunk_sizes to be of same length"):
        torch.nn.parallel.comm.scatter(t, devices=[0, 1], chunk_sizes=[5])
    with pytest.raises(RuntimeError, match="Expected at least one device to scatter to"):
        torch.nn.parallel.comm.scatter(t, devices=())
    with pytest.raises(RuntimeError, match="Expected at least one tensor to gather from"):
        torch.nn.parallel.comm.gather(())
    back = torch.nn.parallel.comm.gather(even, dim=0, destination=1)
    assert back.device == torch.device("musa", 1) and torch.equal(back.cpu(), t)
    on_cpu = torch.nn.parallel.comm.gather(even, destination="cpu")
    assert on_cpu.device.type == "cpu" and torch.equal(on_cpu, t)
    with torch.musa.device(1):
        assert torch.nn.parallel.comm.gather(even).device == torch.device("musa", 1)


def test_out_forms_fail_as_on_torch_musa():
    t = torch.ones(2, device="musa:0")
    missing = "'torch_musa._MUSAC' has no attribute '_broadcast_out'"
    with pytest.raises(AttributeError, match=missing):
        torch.nn.parallel.comm.broadcast(t, out=[torch.empty(2, device="musa:1")])
    with pytest.raises(AttributeError, match="'_gather_out'"):
        torch.nn.parallel.comm.gather([t], out=torch.empty(2, device="musa:1"))


# torch 2.7 and 2.9's parallel_apply takes torch.cuda.current_stream for every device, so plain
# DataParallel (no torchada) cannot run on another backend there; through torchada it does
# (tests/e2e/e2e_programs/data_parallel_cuda.py).
_GENERIC_PARALLEL_APPLY = "torch.cuda.current_stream" not in inspect.getsource(
    torch.nn.parallel.parallel_apply
)


@pytest.mark.skipif(
    not _GENERIC_PARALLEL_APPLY, reason="this torch's parallel_apply uses torch.cuda streams"
)
@pytest.mark.filterwarnings("ignore:PyTorch is not compiled with NCCL support")
def test_data_parallel_trains_like_one_device():
    # torch_musa's own unit test: nn.DataParallel over the musa devices.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    ref = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    ref.load_state_dict(model.state_dict())
    dp = nn.DataParallel(model.to("musa"), device_ids=[0, 1])
    opt, ref_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, ref))
    x = torch.randn(6, 4)
    for _ in range(3):
        for o in (opt, ref_opt):
            o.zero_grad()
        y = dp(x.to("musa"))
        assert y.device == torch.device("musa", 0)
        y.square().sum().backward()
        ref(x).square().sum().backward()
        opt.step()
        ref_opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert p.device == torch.device("musa", 0)
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-5, atol=1e-6)
