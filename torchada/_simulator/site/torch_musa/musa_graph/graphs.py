"""MUSA graphs (torch_musa/musa_graph/graphs.py) on the simulator.

Capture records every ATen call made while capturing (through a dispatch mode, which autograd's
device threads inherit); replay re-runs them on the same tensors and writes results back into the
captured outputs, so static inputs and outputs behave as with a real graph.

A real capture runs nothing: work captured on the device takes effect at replay only. The
recorder has to run each call to learn its outputs, so it keeps a copy of every tensor that
existed before the capture and that a captured call writes (parameters an optimizer step updates,
a static buffer filled in place), and puts those copies back when the capture ends. Tensors the
capture allocates keep what was computed (on a device their contents are undefined until replay).
"""

import gc
import threading
import weakref

import torch
import torch.utils._python_dispatch
import torch.utils._pytree

import torch_musa
from torch_musa._MUSAC import _MUSAGraph

__all__ = [
    "MUSAGraph",
    "graph",
    "make_graphed_callables",
    "graph_pool_handle",
    "is_current_stream_capturing",
    "update_musa_graph_with_profile",
]

_capturing = threading.local()
_pool_counter = [0]


def is_current_stream_capturing():
    return getattr(_capturing, "depth", 0) > 0


def graph_pool_handle():
    _pool_counter[0] += 1
    return (0, _pool_counter[0])


def _tensors(value):
    return [t for t in torch.utils._pytree.tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


def _storage_key(t):
    return t.untyped_storage().data_ptr()


class _Recorder(torch.utils._python_dispatch.TorchDispatchMode):
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
            yield from _tensors(value)

    def _save(self, t):
        key = _storage_key(t)
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
            inputs = {_storage_key(t) for t in _tensors((args, kwargs))}
        out = func(*args, **kwargs)
        with self.lock:
            for t in _tensors(out):
                key = _storage_key(t)
                if key not in inputs:
                    self.created.add(key)
            self.ops.append((func, args, kwargs, out))
        return out


class MUSAGraph(_MUSAGraph):
    _instances = weakref.WeakSet()

    def __new__(cls):
        return super().__new__(cls)

    def __init__(self):
        super().__init__()
        MUSAGraph._instances.add(self)

    def capture_begin(self, pool=None, capture_error_mode="global"):
        if capture_error_mode not in ("global", "thread_local", "relaxed"):
            raise RuntimeError(f"Unknown capture error mode {capture_error_mode!r}")
        if self._recorder is not None:
            raise RuntimeError("This MUSAGraph instance is already capturing")
        self._ops = []
        self._pool = pool if pool is not None else graph_pool_handle()
        self._recorder = _Recorder(self._ops)
        self._recorder.__enter__()
        _capturing.depth = getattr(_capturing, "depth", 0) + 1

    def capture_end(self):
        if self._recorder is None:
            raise RuntimeError("capture_end() called without capture_begin()")
        self._recorder.__exit__(None, None, None)
        self._recorder.restore()  # the captured work has not run yet: it runs at replay
        self._recorder = None
        _capturing.depth -= 1
        self._captured = True

    def replay(self):
        if not self._captured:
            raise RuntimeError("Called MUSAGraph::replay without a preceding successful capture.")
        with torch.no_grad():
            for func, args, kwargs, out in self._ops:
                new = func(*args, **kwargs)
                flat_old = torch.utils._pytree.tree_flatten(out)[0]
                flat_new = torch.utils._pytree.tree_flatten(new)[0]
                for old_t, new_t in zip(flat_old, flat_new):
                    if isinstance(old_t, torch.Tensor) and old_t is not new_t:
                        old_t.copy_(new_t)

    def reset(self):
        self._ops = []
        self._captured = False

    def pool(self):
        if self._pool is None:
            raise RuntimeError("Called MUSAGraph::pool without a preceding successful capture.")
        return self._pool

    def enable_debug_mode(self):
        self._debug = True

    def debug_dump(self, debug_path):
        if not self._debug:
            raise RuntimeError("MUSAGraph::debug_dump requires enable_debug_mode() before capture")
        with open(debug_path, "w") as f:
            f.write("digraph musa_graph {\n")
            for i, (func, _, _, _) in enumerate(self._ops):
                f.write(f'  n{i} [label="{func}"];\n')
                if i:
                    f.write(f"  n{i - 1} -> n{i};\n")
            f.write("}\n")

    def reinstantiate_graph(self):
        pass

    @classmethod
    def get_latest_instance(cls):
        return list(cls._instances)


def update_musa_graph_with_profile():
    for g in list(MUSAGraph._instances):
        g.reinstantiate_graph()


class graph:
    default_capture_stream = None

    def __init__(self, musa_graph, pool=None, stream=None, capture_error_mode="global"):
        if self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = torch_musa.Stream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = (
            stream if stream is not None else self.__class__.default_capture_stream
        )
        assert self.capture_stream is not None
        self.stream_ctx = torch_musa.stream(self.capture_stream)
        self.musa_graph = musa_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        torch_musa.synchronize()
        gc.collect()
        torch_musa.empty_cache()
        self.stream_ctx.__enter__()
        self.musa_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode)

    def __exit__(self, exc_type, exc_value, traceback):
        self.musa_graph.capture_end()
        self.stream_ctx.__exit__(exc_type, exc_value, traceback)


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False):
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
