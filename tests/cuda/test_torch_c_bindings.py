"""torch._C's private CUDA bindings on MUSA: every row of tables/torch_c.json, by its kind, and
the behaviour that torch's own Python relies on (stream switching, device queries, comm)."""

from __future__ import annotations

import importlib

import pytest
import torch

from torchada._core import tables as _tables
from torchada._cuda.redirect import UnsupportedCUDAAPIError

ROWS = sorted(_tables.load("torch_c").modules["torch._C"].names.items())

pytestmark = pytest.mark.usefixtures("torchada_on")


@pytest.mark.parametrize("name,row", ROWS, ids=[name for name, _ in ROWS])
def test_every_row_resolves_by_its_kind(name, row):
    if row.absent:
        # torch tests for the name with hasattr(): absent, as in a torch built without CUDA.
        assert not hasattr(torch._C, name)
        return
    value = getattr(torch._C, name)
    if row.kind == "renamed":
        module, _, attr = row.to.rpartition(":")
        target = importlib.import_module(module or "torch_musa._MUSAC")
        assert value is getattr(target, attr)
    elif row.kind == "unsupported":
        with pytest.raises(UnsupportedCUDAAPIError) as err:
            value()
        text = str(err.value)
        assert text.startswith(f"torch._C.{name} is unsupported on MUSA: {row.why}")
        assert f"Instead, {row.instead}." in text
    else:
        assert row.kind == "filled"
        module, _, attr = row.impl.partition(":")
        impl = getattr(importlib.import_module(module), attr)
        assert value is impl or (row.lazy and value.__wrapped__ is impl())


def test_the_harness_stream_switch_with_keywords():
    # PyTorch's CUDA test harness switches every device to a side stream by keyword, and back.
    before = torch.cuda.current_stream(1)
    side = torch.cuda.Stream(device=1)
    torch._C._cuda_setStream(
        stream_id=side.stream_id, device_index=side.device_index, device_type=side.device_type
    )
    try:
        assert torch.cuda.current_stream(1) == side
        assert torch._C._cuda_getCurrentRawStream(1) == side.musa_stream
        assert torch._C._cuda_getDevice() == 1  # setting a stream makes its device current
    finally:
        torch._C._cuda_setStream(
            stream_id=before.stream_id, device_index=1, device_type=before.device_type
        )
        torch._C._cuda_setDevice(0)
    assert torch.cuda.current_stream(1) == before and torch._C._cuda_getDevice() == 0


def test_names_torch_tests_for_stay_absent():
    # torch's own torch.cuda.is_available() counts CUDA devices through _cuda_getDeviceCount,
    # which stays absent: its answer (what TORCHADA_FORCE_CUDA_AVAILABLE=0 gives) is False.
    from torchada._cuda.redirect import original_module

    assert original_module("torch.cuda").is_available() is False
    assert torch.cuda.device_count() == 2
    # torch.cuda.nccl.is_available() tests for _nccl_all_reduce; torch.cuda.comm then reduces
    # without NCCL, on the destination device.
    a = torch.ones(3, device="cuda:0")
    b = torch.full((3,), 2.0, device="cuda:1")
    assert torch.cuda.nccl.is_available([a, b]) is False
    total = torch.cuda.comm.reduce_add([a, b], destination=1)
    assert total.device == torch.device("musa", 1) and total.tolist() == [3.0, 3.0, 3.0]


def test_device_and_stream_queries():
    default = torch.cuda.default_stream(1)
    assert torch._C._cuda_getDefaultStream(1) == (
        default.stream_id,
        1,
        default.device_type,
    )
    assert torch._C._cuda_maybeExchangeDevice(-1) == -1
    assert torch._C._cuda_exchangeDevice(1) == 0 and torch._C._cuda_exchangeDevice(0) == 1
    assert torch._C._cuda_canDeviceAccessPeer(0, 1) == torch.cuda.can_device_access_peer(0, 1)
    assert torch._C._cuda_getArchFlags() == " ".join(f"mp_{a}" for a in torch.musa.get_arch_list())
    torch.cuda.init()
    assert torch._C._cuda_hasPrimaryContext(0) is True
    with pytest.raises(RuntimeError, match="invalid device index 7"):
        torch._C._cuda_hasPrimaryContext(7)


def test_workspaces_and_caches_are_quiet_calls():
    # torch's test harness and Inductor's CUDA graph trees call these around every test.
    assert torch._C._cuda_clearCublasWorkspaces() is None
    assert torch._C._cuda_resetCublasWorkspaceSize() is None
    assert torch._C._host_emptyCache() is None
    assert torch._C._cuda_get_conv_benchmark_empty_cache() is True
    torch._C._cuda_set_cudnn_benchmark_limit(3)
    try:
        assert torch._C._cuda_get_cudnn_benchmark_limit() == 3
    finally:
        torch._C._cuda_set_cudnn_benchmark_limit(10)
    with pytest.raises(TypeError, match="non-negative int"):
        torch._C._cuda_set_cudnn_benchmark_limit(-1)


def test_raw_alloc_goes_through_the_allocator_fill():
    ptr = torch._C._cuda_cudaCachingAllocator_raw_alloc(1024, None)
    assert ptr != 0
    torch._C._cuda_cudaCachingAllocator_raw_delete(ptr)
    # torchada's fill (2.7.1) and torch_musa's allocator (later releases) both say so.
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        torch._C._cuda_cudaCachingAllocator_raw_delete(ptr)


def test_comm_out_forms_copy_into_the_given_tensors():
    src = torch.arange(12.0, device="cuda:0").reshape(6, 2)
    outs = [torch.empty(6, 2, device="cuda:0"), torch.empty(6, 2, device="cuda:1")]
    assert torch._C._broadcast_out(src, outs) == outs
    assert all(torch.equal(o.cpu(), src.cpu()) for o in outs)
    parts = [torch.empty(2, 2, device="cuda:0"), torch.empty(4, 2, device="cuda:1")]
    torch._C._scatter_out(src, parts, 0, None)
    assert torch.equal(parts[1].cpu(), src.cpu()[2:])
    gathered = torch.empty(6, 2, device="cuda:1")
    assert torch._C._gather_out(parts, gathered, 0) is gathered
    assert torch.equal(gathered.cpu(), src.cpu())
    # torch's words for CUDA (torch.cuda.comm is the CUDA API a program called).
    with pytest.raises(RuntimeError, match=r"along scatter dim 0 does not match .* \[6, 2\]"):
        torch._C._scatter_out(src, [torch.empty(5, 2, device="cuda:0")], 0, None)
    with pytest.raises(RuntimeError, match=r"same shape as the source tensor \[6, 2\], but "):
        torch._C._broadcast_out(src, [torch.empty(3, 2, device="cuda:1")])
    with pytest.raises(RuntimeError, match="be CUDA tensors, but output tensor at index 1"):
        torch._C._broadcast_out(src, [outs[0], torch.empty(6, 2)])
    with pytest.raises(RuntimeError, match="Expected at least one output tensor to scatter to"):
        torch._C._scatter_out(src, [], 0, None)
    with pytest.raises(RuntimeError, match="Input tensor at index 1 has invalid shape"):
        torch._C._gather_out([parts[0], parts[1][:, 1:]], gathered, 0)


def test_jiterator_functions_define_and_refuse_to_run():
    # Real libraries define jiterator functions at import time; only running one needs NVRTC.
    fn = torch.cuda.jiterator._create_jit_fn("template <typename T> T sq(T x) { return x * x; }")
    assert fn.kernel_name == "sq"
    two = torch.cuda.jiterator._create_multi_output_jit_fn(
        "template <typename T> void two(T x, T& a, T& b) { a = x; b = x; }", num_outputs=2
    )
    assert two.num_outputs == 2
    with pytest.raises(UnsupportedCUDAAPIError, match="NVRTC, which MUSA lacks"):
        fn(torch.ones(2, device="cuda"))


def test_rows_are_undone(py):
    # After disable(), torch._C has what a process without torchada has (a CUDA build of torch
    # binds these names itself, a CPU build does not).
    code = """
        import json, sys, torch
        names = ("_cuda_setStream", "_broadcast_out", "_cuda_tunableop_enable")
        if sys.argv[-1] == "on":
            import torchada
            torchada.disable()
        print(json.dumps([getattr(getattr(torch._C, n, None), "__module__", None) for n in names]))
    """
    plain = py(code.replace("sys.argv[-1]", "'off'"))
    undone = py(code.replace("sys.argv[-1]", "'on'"), env={"TORCHADA_SIMULATE": "1"})
    assert plain.returncode == 0 and undone.returncode == 0, plain.stderr + undone.stderr
    assert undone.stdout.splitlines()[-1] == plain.stdout.splitlines()[-1]


def test_comm_out_forms_through_torch_cuda_comm():
    # torch_musa's comm.py calls the out= forms on its own C module, which lacks them.
    src = torch.arange(6.0).reshape(3, 2)  # a CPU source, as CUDA's comm accepts
    outs = [torch.empty(3, 2, device="cuda:0"), torch.empty(3, 2, device="cuda:1")]
    torch.cuda.comm.broadcast(src, out=outs)
    assert [o.cpu().tolist() for o in outs] == [src.tolist()] * 2
    parts = torch.cuda.comm.scatter(
        src, out=[torch.empty(1, 2, device="cuda:0"), torch.empty(2, 2, device="cuda:1")]
    )
    assert parts[1].cpu().tolist() == src[1:].tolist()
    back = torch.empty(3, 2, device="cuda:1")
    assert torch.cuda.comm.gather(list(parts), out=back) is back
    assert back.cpu().tolist() == src.tolist()
