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
import weakref

import torch
import torch.utils._pytree

import torch_musa
from torchada._simulator import graph_capture as _capture

__all__ = [
    "MUSAGraph",
    "graph",
    "make_graphed_callables",
    "graph_pool_handle",
    "is_current_stream_capturing",
    "update_musa_graph_with_profile",
]


def is_current_stream_capturing():
    return getattr(_capture.capturing, "depth", 0) > 0


def graph_pool_handle():
    _capture.pool_counter[0] += 1
    return (0, _capture.pool_counter[0])


class MUSAGraph(torch_musa._MUSAC._MUSAGraph):
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
        self._recorder = _capture.Recorder(self._ops)
        self._recorder.__enter__()
        _capture.capturing.depth = getattr(_capture.capturing, "depth", 0) + 1

    def capture_end(self):
        if self._recorder is None:
            raise RuntimeError("capture_end() called without capture_begin()")
        self._recorder.__exit__(None, None, None)
        self._recorder.restore()  # the captured work has not run yet: it runs at replay
        self._recorder = None
        _capture.capturing.depth -= 1
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
