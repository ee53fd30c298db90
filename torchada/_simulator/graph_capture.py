"""Graph capture of the simulated torch_musa (what its C module does for MUSAGraph): a dispatch
mode that records every ATen call made while capturing, kept outside the ``torch_musa`` namespace.

The graph's executable (instantiated, destroyed, launched through libmusart, where the driver's
limit on live executables is modelled) is the backend's ``_MUSAGraph`` (csrc/simulator/
sim_graph.cpp); what a capture recorded and a replay runs is kept here, per graph.
"""

import threading
import weakref

import torch
import torch.utils._python_dispatch
import torch.utils._pytree

capturing = threading.local()
pool_counter = [0]


def release_era() -> bool:
    """Whether the simulated release has 2.9.1.post1's graphs (keep_graph, instantiate, ...)."""
    from . import state

    return state.config.facts["graph_keep_graph"]


def next_pool():
    pool_counter[0] += 1
    return (0, pool_counter[0])


def tensors(value):
    return [t for t in torch.utils._pytree.tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


def storage_key(t):
    return t.untyped_storage().data_ptr()


class Recorder(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self, ops):
        super().__init__()
        self.ops = ops
        self.created = set()  # storages allocated by captured calls
        self.saved = {}  # storage -> (byte view of it, its contents before the capture)
        self.lock = threading.Lock()  # autograd's device threads record too

    def _written(self, func, args, kwargs):
        for i, arg in enumerate(func._schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            value = args[i] if i < len(args) else kwargs.get(arg.name)
            yield from tensors(value)

    def _save(self, t):
        key = storage_key(t)
        if key == 0 or key in self.created or key in self.saved:
            return
        whole = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
        self.saved[key] = (whole, whole.clone())

    def restore(self):
        with torch.no_grad():
            for whole, before in self.saved.values():
                whole.copy_(before)
        self.saved.clear()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten._local_scalar_dense.default:
            raise RuntimeError(
                "MUSA error: operation not permitted when stream is capturing "
                "(a host synchronisation such as .item() was called during graph capture)"
            )
        with self.lock:
            for t in self._written(func, args, kwargs):
                self._save(t)
            inputs = {storage_key(t) for t in tensors((args, kwargs))}
        out = func(*args, **kwargs)
        with self.lock:
            for t in tensors(out):
                key = storage_key(t)
                if key not in inputs:
                    self.created.add(key)
            self.ops.append((func, args, kwargs, out))
        return out


class Record:
    """What one graph captured: the calls, and the recorder while capturing."""

    __slots__ = ("ops", "recorder", "debug")

    def __init__(self):
        self.ops = []
        self.recorder = None
        self.debug = False


records = weakref.WeakKeyDictionary()  # MUSAGraph -> Record


def record_of(graph):
    record = records.get(graph)
    if record is None:
        record = records[graph] = Record()
    return record


def begin(graph):
    record = record_of(graph)
    record.ops = []
    record.recorder = Recorder(record.ops)
    record.recorder.__enter__()
    capturing.depth = getattr(capturing, "depth", 0) + 1


def end(graph):
    record = records.get(graph)
    if record is None or record.recorder is None:
        raise RuntimeError("Capture must end on the same stream it began on.")
    record.recorder.__exit__(None, None, None)
    record.recorder.restore()  # the captured work has not run yet: it runs at replay
    record.recorder = None
    capturing.depth -= 1


def replay(graph):
    with torch.no_grad():
        for func, args, kwargs, out in record_of(graph).ops:
            new = func(*args, **kwargs)
            flat_old = torch.utils._pytree.tree_flatten(out)[0]
            flat_new = torch.utils._pytree.tree_flatten(new)[0]
            for old_t, new_t in zip(flat_old, flat_new):
                if isinstance(old_t, torch.Tensor) and old_t is not new_t:
                    old_t.copy_(new_t)


def forget(graph):
    records.pop(graph, None)


def run_graphed_callables(callables, sample_args, num_warmup_iters, allow_unused_input):
    # The simulator runs graphed callables eagerly after the warm-up a real capture would do.
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables = (callables,)
        sample_args = (sample_args,)
    for c, args in zip(callables, sample_args):
        if isinstance(c, torch.nn.Module):
            if len(c._backward_hooks) or len(c._forward_hooks) or len(c._forward_pre_hooks):
                raise AssertionError(
                    "Modules must not have hooks registered at the time they are passed. "
                    "However, registering hooks on modules after passing them through "
                    "make_graphed_callables is allowed."
                )
        for _ in range(num_warmup_iters):
            c(*args)
    return callables[0] if just_one else callables
