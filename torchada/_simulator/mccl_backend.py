"""The simulated "mccl" backend of torch.distributed.

torch_musa registers "mccl" for the "musa" device, as torch does "nccl" for "cuda". Here the
collectives run on gloo: each call copies its musa tensors to host tensors, runs the gloo
collective over ``PrefixStore("mccl", store)``, and copies the results back into the musa tensors.
Simulated device memory is host memory, so the copies are cheap and the results exact.

``torch.distributed.ProcessGroupMCCL`` is a C++ ``c10d.Backend``, as on hardware (the simulator's
extension, ``sim_mccl.cpp``); ``init_process_group("mccl")`` wraps it in a ``ProcessGroup`` for the
musa device. Its collectives call ``MCCLCollectives`` below.

Semantics follow NCCL's where gloo's differ: ``ReduceOp.AVG`` is supported (sum, then divide;
integers truncate), a bool ``SUM`` is a logical or (``MAX``) and a bool ``PRODUCT`` a logical and
(``MIN``), a bool ``AVG`` is an error, and ``BAND``/``BOR``/``BXOR``/``PREMUL_SUM`` raise
``RuntimeError("Unexpected ReduceOp ...")``. Reductions take float32/64, float16, bfloat16, int8,
uint8, int32, int64, bool, and float8 (reduced in float32); data movement takes any dtype.
Collectives complete before they return (their ``Work`` is already done); a ``recv`` completes
when its data arrives, so paired ``isend``/``irecv`` never deadlock.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Callable

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as _c10d

logger = logging.getLogger("torchada")

_C = torch._C._distributed_c10d
_RedOpType = dist.ReduceOp.RedOpType

_REDUCIBLE = {
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int8,
    torch.uint8,
    torch.int32,
    torch.int64,
    torch.bool,
}
_FLOAT8 = {
    getattr(torch, name)
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
    if hasattr(torch, name)
}
_SUPPORTED_OPS = (
    _RedOpType.SUM,
    _RedOpType.PRODUCT,
    _RedOpType.MIN,
    _RedOpType.MAX,
    _RedOpType.AVG,
)
# What gloo runs for a bool reduction: bools are 0/1 bytes on the wire.
_BOOL_OPS = {
    _RedOpType.SUM: _RedOpType.MAX,
    _RedOpType.MAX: _RedOpType.MAX,
    _RedOpType.PRODUCT: _RedOpType.MIN,
    _RedOpType.MIN: _RedOpType.MIN,
}


def is_mccl_available() -> bool:
    """The simulated MCCL is always there."""
    return True


class _Reduction:
    """How one reduction runs on gloo: the wire dtype, gloo's op, and what happens afterwards."""

    def __init__(self, op: dist.ReduceOp | _RedOpType, dtype: torch.dtype, group_size: int):
        kind = op.op if isinstance(op, dist.ReduceOp) else op
        if kind not in _SUPPORTED_OPS:
            raise RuntimeError(f"Unexpected ReduceOp {kind} for the MCCL process group")
        if dtype not in _REDUCIBLE and dtype not in _FLOAT8:
            raise TypeError(f"Unsupported data type for MCCL reductions: {dtype}")
        if dtype == torch.bool:
            if kind == _RedOpType.AVG:
                raise RuntimeError("Cannot use ReduceOp.AVG with boolean inputs")
            kind = _BOOL_OPS[kind]
        self.dtype = dtype
        self.average = kind == _RedOpType.AVG
        self.gloo_op = dist.ReduceOp(_RedOpType.SUM if self.average else kind)
        self.group_size = group_size

    def to_wire(self, host: torch.Tensor) -> torch.Tensor:
        if self.dtype == torch.bool:
            return host.view(torch.uint8)
        if self.dtype in _FLOAT8:
            return host.float()
        return host

    def from_wire(self, wire: torch.Tensor) -> torch.Tensor:
        if self.average:
            if wire.is_floating_point():
                wire = wire.div_(self.group_size)
            else:
                wire = wire.div_(self.group_size, rounding_mode="trunc")
        if self.dtype == torch.bool:
            return wire.view(torch.bool)
        return wire.to(self.dtype)


def _host(t: torch.Tensor) -> torch.Tensor:
    """A private contiguous host copy (also of host tensors, so wire views never alias them)."""
    return t.detach().to("cpu", copy=True).contiguous()


def _host_empty(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(t.shape, dtype=t.dtype, device="cpu")


def _as_bytes(host: torch.Tensor) -> torch.Tensor:
    """Data movement works on raw bytes: gloo then never has to know the dtype."""
    return host.reshape(-1).view(torch.uint8)


def _row_bytes(t: torch.Tensor) -> int:
    return (t.numel() // t.shape[0]) * t.element_size() if t.dim() > 0 and t.shape[0] else 0


def _one(tensors: Sequence[torch.Tensor], what: str) -> torch.Tensor:
    if len(tensors) != 1:
        raise ValueError(f"MCCL {what} expects exactly one tensor per call, got {len(tensors)}")
    return tensors[0]


def _done(result: object) -> dist.Work:
    """A Work that has already completed, whose future holds ``result``."""
    fut: torch.futures.Future = torch.futures.Future()
    fut.set_result(result)
    return _C._create_work_from_future(fut)


class MCCLCollectives:
    """What ``torch.distributed.ProcessGroupMCCL`` (a C++ ``c10d.Backend``) runs its collectives
    with: the same collectives on gloo over host copies. Method names and arguments are those of
    the Backend's C++ virtual functions. Collectives return a completed ``Work``; point-to-point
    calls return gloo's work and what to do once it has completed.

    Example::

        >>> # SKIP: ProcessGroupMCCL makes one; programs never call this directly
        >>> pg = torch.distributed.ProcessGroupMCCL(torch.distributed.HashStore(), 0, 1)
        >>> pg.allreduce([torch.ones(2, device="musa")]).wait()
        True
    """

    def __init__(self, store: dist.Store, rank: int, size: int, timeout: timedelta):
        self._rank, self._size = rank, size
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore("mccl", store), rank, size, timeout)
        logger.debug("ProcessGroupMCCL rank %d of %d over gloo", rank, size)

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    # -- reductions ------------------------------------------------------------------------------

    def _reduce_on_host(self, wire: torch.Tensor, red: _Reduction, timeout: timedelta) -> None:
        opts = _C.AllreduceOptions()
        opts.reduceOp = red.gloo_op
        opts.timeout = timeout
        self._gloo.allreduce([wire], opts).wait()

    def allreduce(
        self, tensors: list[torch.Tensor], opts: _C.AllreduceOptions | None = None
    ) -> dist.Work:
        if isinstance(opts, (dist.ReduceOp, _RedOpType)):  # the legacy (tensors, op) form
            op, opts = opts, _C.AllreduceOptions()
            opts.reduceOp = dist.ReduceOp(op) if isinstance(op, _RedOpType) else op
        opts = opts if opts is not None else _C.AllreduceOptions()
        tensor = _one(tensors, "allreduce")
        red = _Reduction(opts.reduceOp, tensor.dtype, self.size())
        wire = red.to_wire(_host(tensor))
        self._reduce_on_host(wire, red, opts.timeout)
        tensor.copy_(red.from_wire(wire))
        return _done(list(tensors))

    def allreduce_coalesced(
        self, tensors: list[torch.Tensor], opts: _C.AllreduceCoalescedOptions | None = None
    ) -> dist.Work:
        opts = opts if opts is not None else _C.AllreduceCoalescedOptions()
        if not tensors:
            return _done([])
        dtypes = {t.dtype for t in tensors}
        if len(dtypes) != 1:
            raise TypeError(
                f"MCCL allreduce_coalesced needs one dtype, got {sorted(map(str, dtypes))}"
            )
        red = _Reduction(opts.reduceOp, tensors[0].dtype, self.size())
        flat = red.to_wire(torch.cat([_host(t).reshape(-1) for t in tensors]))
        self._reduce_on_host(flat, red, opts.timeout)
        flat = red.from_wire(flat)
        offset = 0
        for t in tensors:
            t.copy_(flat[offset : offset + t.numel()].view(t.shape))
            offset += t.numel()
        return _done(list(tensors))

    def reduce(
        self, tensors: list[torch.Tensor], opts: _C.ReduceOptions | None = None
    ) -> dist.Work:
        opts = opts if opts is not None else _C.ReduceOptions()
        tensor = _one(tensors, "reduce")
        red = _Reduction(opts.reduceOp, tensor.dtype, self.size())
        wire = red.to_wire(_host(tensor))
        gloo_opts = _C.ReduceOptions()
        gloo_opts.reduceOp = red.gloo_op
        gloo_opts.rootRank = opts.rootRank
        gloo_opts.timeout = opts.timeout
        self._gloo.reduce([wire], gloo_opts).wait()
        if self.rank() == opts.rootRank:  # as NCCL: only the root's buffer receives the result
            tensor.copy_(red.from_wire(wire))
        return _done(list(tensors))

    def _reduce_scatter_flat(
        self, inputs_flat: torch.Tensor, output: torch.Tensor, opts: _C.ReduceScatterOptions
    ) -> None:
        # An allreduce of the whole input, keeping this rank's slice, reuses the AVG and bool
        # handling above; the extra traffic is host memcpy.
        red = _Reduction(opts.reduceOp, output.dtype, self.size())
        wire = red.to_wire(inputs_flat)
        self._reduce_on_host(wire, red, opts.timeout)
        full = red.from_wire(wire)
        n = output.numel()
        output.copy_(full[self.rank() * n : (self.rank() + 1) * n].view(output.shape))

    def reduce_scatter(
        self,
        output_tensors: list[torch.Tensor],
        input_tensors: list[list[torch.Tensor]],
        opts: _C.ReduceScatterOptions | None = None,
    ) -> dist.Work:
        opts = opts if opts is not None else _C.ReduceScatterOptions()
        output = _one(output_tensors, "reduce_scatter")
        inputs = _one(input_tensors, "reduce_scatter")
        if len(inputs) != self.size():
            raise ValueError(f"reduce_scatter needs {self.size()} inputs, got {len(inputs)}")
        flat = torch.cat([_host(t).reshape(-1) for t in inputs])
        self._reduce_scatter_flat(flat, output, opts)
        return _done(list(output_tensors))

    def _reduce_scatter_base(
        self, output: torch.Tensor, input: torch.Tensor, opts: _C.ReduceScatterOptions | None = None
    ) -> dist.Work:
        opts = opts if opts is not None else _C.ReduceScatterOptions()
        if input.numel() != output.numel() * self.size():
            raise ValueError(
                f"reduce_scatter_tensor: input has {input.numel()} elements, expected "
                f"{output.numel()} x {self.size()}"
            )
        self._reduce_scatter_flat(_host(input).reshape(-1), output, opts)
        return _done([output])

    def reduce_scatter_tensor_coalesced(
        self,
        outputs: list[torch.Tensor],
        inputs: list[torch.Tensor],
        opts: _C.ReduceScatterOptions | None = None,
    ) -> dist.Work:
        for output, input in zip(outputs, inputs):
            self._reduce_scatter_base(output, input, opts)
        return _done(list(outputs))

    # -- data movement ---------------------------------------------------------------------------

    def broadcast(
        self, tensors: list[torch.Tensor], opts: _C.BroadcastOptions | None = None
    ) -> dist.Work:
        opts = opts if opts is not None else _C.BroadcastOptions()
        tensor = _one(tensors, "broadcast")
        host = _host(tensor)
        gloo_opts = _C.BroadcastOptions()
        gloo_opts.rootRank = opts.rootRank
        gloo_opts.timeout = opts.timeout
        self._gloo.broadcast([_as_bytes(host)], gloo_opts).wait()
        if self.rank() != opts.rootRank:
            tensor.copy_(host)
        return _done(list(tensors))

    def allgather(
        self,
        output_tensors: list[list[torch.Tensor]],
        input_tensors: list[torch.Tensor],
        opts: _C.AllgatherOptions | None = None,
    ) -> dist.Work:
        opts = opts if opts is not None else _C.AllgatherOptions()
        outputs = _one(output_tensors, "allgather")
        tensor = _one(input_tensors, "allgather")
        if len(outputs) != self.size():
            raise ValueError(f"allgather needs {self.size()} outputs, got {len(outputs)}")
        for out in outputs:
            if out.numel() != tensor.numel() or out.dtype != tensor.dtype:
                raise ValueError("allgather outputs must match the input's size and dtype")
        hosts = [_host_empty(out) for out in outputs]
        gloo_opts = _C.AllgatherOptions()
        gloo_opts.timeout = opts.timeout
        self._gloo.allgather(
            [[_as_bytes(h) for h in hosts]], [_as_bytes(_host(tensor))], gloo_opts
        ).wait()
        for out, h in zip(outputs, hosts):
            out.copy_(h)
        return _done(list(output_tensors))

    def _allgather_base(
        self, output: torch.Tensor, input: torch.Tensor, opts: _C.AllgatherOptions | None = None
    ) -> dist.Work:
        opts = opts if opts is not None else _C.AllgatherOptions()
        if output.numel() != input.numel() * self.size() or output.dtype != input.dtype:
            raise ValueError(
                f"all_gather_into_tensor: output must hold {self.size()} x {input.numel()} "
                f"elements of {input.dtype}"
            )
        host_out = _host_empty(output)
        rows = list(_as_bytes(host_out).view(self.size(), -1).unbind(0))
        gloo_opts = _C.AllgatherOptions()
        gloo_opts.timeout = opts.timeout
        self._gloo.allgather([rows], [_as_bytes(_host(input))], gloo_opts).wait()
        output.copy_(host_out)
        return _done([output])

    def allgather_coalesced(
        self,
        output_lists: list[list[torch.Tensor]],
        input_list: list[torch.Tensor],
        opts: _C.AllgatherOptions | None = None,
    ) -> dist.Work:
        for outputs, tensor in zip(output_lists, input_list):
            self.allgather([outputs], [tensor], opts)
        return _done(list(output_lists))

    def allgather_into_tensor_coalesced(
        self,
        outputs: list[torch.Tensor],
        inputs: list[torch.Tensor],
        opts: _C.AllgatherOptions | None = None,
    ) -> dist.Work:
        for output, input in zip(outputs, inputs):
            self._allgather_base(output, input, opts)
        return _done(list(outputs))

    def gather(
        self,
        output_tensors: list[list[torch.Tensor]],
        input_tensors: list[torch.Tensor],
        opts: _C.GatherOptions | None = None,
    ) -> dist.Work:
        opts = opts if opts is not None else _C.GatherOptions()
        tensor = _one(input_tensors, "gather")
        is_root = self.rank() == opts.rootRank
        outputs = _one(output_tensors, "gather") if is_root else []
        hosts = [_host_empty(out) for out in outputs]
        gloo_opts = _C.GatherOptions()
        gloo_opts.rootRank = opts.rootRank
        gloo_opts.timeout = opts.timeout
        self._gloo.gather(
            [[_as_bytes(h) for h in hosts]] if is_root else [],
            [_as_bytes(_host(tensor))],
            gloo_opts,
        ).wait()
        for out, h in zip(outputs, hosts):
            out.copy_(h)
        return _done(list(output_tensors))

    def scatter(
        self,
        output_tensors: list[torch.Tensor],
        input_tensors: list[list[torch.Tensor]],
        opts: _C.ScatterOptions | None = None,
    ) -> dist.Work:
        opts = opts if opts is not None else _C.ScatterOptions()
        output = _one(output_tensors, "scatter")
        is_root = self.rank() == opts.rootRank
        inputs = _one(input_tensors, "scatter") if is_root else []
        host_out = _host_empty(output)
        gloo_opts = _C.ScatterOptions()
        gloo_opts.rootRank = opts.rootRank
        gloo_opts.timeout = opts.timeout
        self._gloo.scatter(
            [_as_bytes(host_out)],
            [[_as_bytes(_host(t)) for t in inputs]] if is_root else [],
            gloo_opts,
        ).wait()
        output.copy_(host_out)
        return _done(list(output_tensors))

    def alltoall_base(
        self,
        output: torch.Tensor,
        input: torch.Tensor,
        output_split_sizes: list[int],
        input_split_sizes: list[int],
        opts: _C.AllToAllOptions | None = None,
    ) -> dist.Work:
        opts = opts if opts is not None else _C.AllToAllOptions()
        if output.dtype != input.dtype:
            raise TypeError("all_to_all_single: input and output dtypes differ")
        host_out = _host_empty(output)
        # Splits count rows of dim 0; on the byte wire they count bytes.
        out_splits = [s * _row_bytes(output) for s in output_split_sizes]
        in_splits = [s * _row_bytes(input) for s in input_split_sizes]
        gloo_opts = _C.AllToAllOptions()
        gloo_opts.timeout = opts.timeout
        self._gloo.alltoall_base(
            _as_bytes(host_out), _as_bytes(_host(input)), out_splits, in_splits, gloo_opts
        ).wait()
        output.copy_(host_out)
        return _done([output])

    def alltoall(
        self,
        output_tensors: list[torch.Tensor],
        input_tensors: list[torch.Tensor],
        opts: _C.AllToAllOptions | None = None,
    ) -> dist.Work:
        opts = opts if opts is not None else _C.AllToAllOptions()
        if len(output_tensors) != self.size() or len(input_tensors) != self.size():
            raise ValueError(f"alltoall needs {self.size()} inputs and outputs")
        send = torch.cat([_as_bytes(_host(t)) for t in input_tensors])
        recv = torch.empty(
            sum(t.numel() * t.element_size() for t in output_tensors), dtype=torch.uint8
        )
        gloo_opts = _C.AllToAllOptions()
        gloo_opts.timeout = opts.timeout
        self._gloo.alltoall_base(
            recv,
            send,
            [t.numel() * t.element_size() for t in output_tensors],
            [t.numel() * t.element_size() for t in input_tensors],
            gloo_opts,
        ).wait()
        offset = 0
        for out in output_tensors:
            n = out.numel() * out.element_size()
            host = _host_empty(out)
            _as_bytes(host).copy_(recv[offset : offset + n])
            out.copy_(host)
            offset += n
        return _done(list(output_tensors))

    def barrier(self, opts: _C.BarrierOptions | None = None) -> dist.Work:
        gloo_opts = _C.BarrierOptions()
        if opts is not None:
            gloo_opts.timeout = opts.timeout
        self._gloo.barrier(gloo_opts).wait()
        return _done([])

    # -- point to point --------------------------------------------------------------------------

    # Point to point: gloo's work and what follows it on the simulated device. ProcessGroupMCCL
    # runs the second once the first is seen complete (gloo's send and receive works have no
    # future to chain it to), so paired isend/irecv never deadlock.

    def send(
        self, tensors: list[torch.Tensor], dstRank: int, tag: int
    ) -> tuple[dist.Work, Callable[[], None]]:
        # The host copy lives in gloo's work until it is on the wire.
        work = self._gloo.send([_as_bytes(_host(_one(tensors, "send")))], dstRank, tag)
        return work, lambda: None

    def _recv_into(
        self, tensor: torch.Tensor, start: Callable[[list[torch.Tensor]], dist.Work]
    ) -> tuple[dist.Work, Callable[[], None]]:
        host = _host_empty(tensor)
        return start([_as_bytes(host)]), lambda: tensor.copy_(host)

    def recv(
        self, tensors: list[torch.Tensor], srcRank: int, tag: int
    ) -> tuple[dist.Work, Callable[[], None]]:
        tensor = _one(tensors, "recv")
        return self._recv_into(tensor, lambda wire: self._gloo.recv(wire, srcRank, tag))

    def recv_anysource(
        self, tensors: list[torch.Tensor], tag: int
    ) -> tuple[dist.Work, Callable[[], None]]:
        tensor = _one(tensors, "recv")
        return self._recv_into(tensor, lambda wire: self._gloo.recv_anysource(wire, tag))

    # -- lifetime --------------------------------------------------------------------------------

    def shutdown(self) -> None:
        self._gloo.shutdown()

    def abort(self) -> None:
        self._gloo.abort()


def _register() -> None:
    if not dist.is_available():  # a torch built without distributed support
        return
    # ProcessGroupMCCL and the backend's registration come with the C module, as on hardware;
    # is_mccl_available comes from torch_musa's patch of torch.distributed.
    dist.is_mccl_available = is_mccl_available
    _c10d.is_mccl_available = is_mccl_available


_register()
