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

import torch_musa
from torchada._simulator import graph_capture as _capture

# From 2.9.1.post1 (_capture.release_era()): MUSAGraph(keep_graph=...), instantiate(), raw
# handles, _has_capture, the _POOL_HANDLE type of pool handles, gc only under
# force_cudagraph_gc, make_graphed_callables' pool=.

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


if _capture.release_era():

    def graph_pool_handle():
        return torch_musa._POOL_HANDLE(_capture.next_pool())

else:

    def graph_pool_handle():
        return _capture.next_pool()


class MUSAGraph(torch_musa._MUSAC._MUSAGraph):
    _graph_instances = weakref.WeakSet()

    if _capture.release_era():

        def __new__(cls, keep_graph=False):
            instance = super().__new__(cls, keep_graph)
            instance._has_capture = False
            cls._graph_instances.add(instance)
            return instance

    else:

        def __new__(cls):
            instance = super().__new__(cls)
            cls._graph_instances.add(instance)
            return instance

    def capture_begin(self, pool=None, capture_error_mode="global"):
        super().capture_begin(pool=pool, capture_error_mode=capture_error_mode)
        _capture.begin(self)

    def capture_end(self):
        # The stream capture ends (the recorded calls become the graph) before the graph is
        # instantiated, which may fail.
        _capture.end(self)
        super().capture_end()
        if _capture.release_era():
            self._has_capture = True

    if _capture.release_era():

        def instantiate(self):
            super().instantiate()

        def raw_musa_graph(self):
            return super().raw_musa_graph()

        def raw_musa_graph_exec(self):
            return super().raw_musa_graph_exec()

    def reinstantiate_graph(self):
        super().reinstantiate_graph()

    def replay(self):
        super().replay()
        _capture.replay(self)

    def reset(self):
        super().reset()
        _capture.forget(self)
        if _capture.release_era():
            self._has_capture = False

    def pool(self):
        return super().pool()

    def enable_debug_mode(self):
        _capture.record_of(self).debug = True

    def debug_dump(self, debug_path):
        record = _capture.record_of(self)
        if not record.debug:
            raise RuntimeError("MUSAGraph::debug_dump requires enable_debug_mode() before capture")
        with open(debug_path, "w") as f:
            f.write("digraph musa_graph {\n")
            for i, (func, _, _, _) in enumerate(record.ops):
                f.write(f'  n{i} [label="{func}"];\n')
                if i:
                    f.write(f"  n{i - 1} -> n{i};\n")
            f.write("}\n")

    @classmethod
    def get_latest_instance(cls):
        if cls._graph_instances is not None:
            return list(cls._graph_instances)
        return None


def update_musa_graph_with_profile():
    for g in MUSAGraph.get_latest_instance():
        if not _capture.release_era() or g._has_capture:
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
        if not _capture.release_era() or torch.compiler.config.force_cudagraph_gc:
            gc.collect()
        torch_musa.empty_cache()
        self.stream_ctx.__enter__()
        self.musa_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode)

    def __exit__(self, exc_type, exc_value, traceback):
        self.musa_graph.capture_end()
        self.stream_ctx.__exit__(exc_type, exc_value, traceback)


if _capture.release_era():

    def make_graphed_callables(
        callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None
    ):
        return _capture.run_graphed_callables(
            callables, sample_args, num_warmup_iters, allow_unused_input
        )

else:

    def make_graphed_callables(
        callables, sample_args, num_warmup_iters=3, allow_unused_input=False
    ):
        return _capture.run_graphed_callables(
            callables, sample_args, num_warmup_iters, allow_unused_input
        )
