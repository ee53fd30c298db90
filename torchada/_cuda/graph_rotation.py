"""Graph executable rotation: more captured CUDA graphs than the MUSA driver lets live at once.

The driver allows about 2048 live graph executables (``musaGraphExec_t``) per process; a serving
engine that captures one graph per layer piece per batch size goes past that, and torch_musa's
``MUSAGraph.capture_end`` then fails in ``musaGraphInstantiate``. Every graph keeps its template
(``graph_``: torch_musa 2.7.1 never destroys it after instantiating), so only the executables need
to be few. torchada keeps at most ``TORCHADA_GRAPH_EXEC_CAP`` of them (1900, under the driver's
limit): before a capture would pass the cap, the executable of the graph replayed least recently
is destroyed (``musaGraphExecDestroy``), and that graph is instantiated again from its template
(``musaGraphInstantiate``) just before it next replays. Graphs the program frees or resets leave
the count. Until the first eviction ``MUSAGraph.replay`` is torch_musa's own method, untouched.

What it acts on, all from torch_musa 2.7.1 and the MUSA runtime: the ``at::musa::MUSAGraph``
behind a ``torch.musa.MUSAGraph`` (pybind11 keeps the C++ object's address right after the Python
object header), whose first members are ``graph_``, ``graph_exec_``, ``has_graph_`` and
``has_graph_exec_`` (``csrc/aten/musa/MUSAGraph.h:47-58``); libmusart's ``musaGraphExecDestroy``
and ``musaGraphInstantiate``, called as ``MUSAGraph::reinstantiate_graph`` calls them
(``MUSAGraph.cpp:217-226``). An evicted graph has no executable and ``has_graph_exec_`` false, so
its destructor and ``reset()`` (``MUSAGraph.cpp:265-301``) free only its template.
``TORCHADA_GRAPH_ROTATION=0`` turns it off.
"""

from __future__ import annotations

import collections
import ctypes
import logging
import os
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from .._core.env import flag, whole_number
from .._core.warn import warn_once

if TYPE_CHECKING:
    from .._core.patcher import Patcher

logger = logging.getLogger("torchada")

# pybind11 keeps a simply-held C++ object's address in the first word after the Python header.
_VALUE_OFFSET = object.__basicsize__
# MUSAGraph.h: musaGraph_t graph_; musaGraphExec_t graph_exec_; bool has_graph_, has_graph_exec_.
_GRAPH, _EXEC, _HAS_GRAPH, _HAS_EXEC = 0, 8, 16, 17


class _Entry:
    """One captured graph: where its C++ object is, and whether its executable is live."""

    __slots__ = ("ref", "address", "evicted", "__weakref__")

    def __init__(self, ref: "weakref.ref[Any]", address: int) -> None:
        self.ref = ref
        self.address = address
        self.evicted = False


class _State:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.lock = threading.RLock()
        self.entries: Dict[int, _Entry] = {}  # id(graph) -> entry, every registered graph
        self.live: "collections.OrderedDict[int, _Entry]" = collections.OrderedDict()  # LRU first
        self.dead: "collections.deque[int]" = collections.deque()  # ids freed, not yet dropped
        self.rotating = False
        self.failed: Optional[str] = None
        self.runtime: Any = None
        self.counts = {"captured": 0, "evicted": 0, "reinstantiated": 0}


_state: Optional[_State] = None


def cap_setting() -> int:
    """The most live graph executables torchada keeps (``TORCHADA_GRAPH_EXEC_CAP``, 1900).

    Example::

        >>> import os
        >>> os.environ.get("TORCHADA_GRAPH_EXEC_CAP") or cap_setting()  # doctest: +SKIP
        1900
    """
    return whole_number("TORCHADA_GRAPH_EXEC_CAP")


def stats() -> Dict[str, Any]:
    """Rotation's state: on or not, the cap, live executables, captures, evictions and
    re-instantiations so far.

    Example::

        >>> stats()["cap"]  # doctest: +SKIP
        1900
    """
    state = _state
    if state is None:
        return {
            "on": False,
            "cap": None,
            "live": 0,
            "captured": 0,
            "evicted": 0,
            "reinstantiated": 0,
        }
    with state.lock:
        _drop_dead(state)
        return {
            "on": state.failed is None,
            "cap": state.cap,
            "live": len(state.live),
            **state.counts,
        }


# ---------------------------------------------------------------- the C++ object and libmusart
def _field(entry: _Entry, offset: int, ctype: Any) -> Any:
    return ctype.from_address(entry.address + offset)


def _runtime(state: _State) -> Any:
    if state.runtime is None:
        from .._libraries.ctypes_bindings import musa_library_dir

        folder = musa_library_dir()
        lib = ctypes.CDLL(os.path.join(folder, "libmusart.so") if folder else "libmusart.so")
        lib.musaGraphInstantiate.argtypes = [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
        ]
        lib.musaGraphExecDestroy.argtypes = [ctypes.c_void_p]
        lib.musaGetErrorString.restype = ctypes.c_char_p
        lib.musaGetErrorString.argtypes = [ctypes.c_int]
        state.runtime = lib
    return state.runtime


def _check(state: _State, err: int, call: str) -> None:
    if err:
        lib = state.runtime
        lib.musaGetLastError()
        raise RuntimeError(
            f"MUSA error: {lib.musaGetErrorString(err).decode()} ({call}, while torchada rotated "
            f"graph executables under TORCHADA_GRAPH_EXEC_CAP={state.cap}; a lower cap leaves "
            "the driver more room)"
        )


def _evict(state: _State, entry: _Entry) -> None:
    exec_handle = _field(entry, _EXEC, ctypes.c_void_p)
    _check(state, _runtime(state).musaGraphExecDestroy(exec_handle.value), "musaGraphExecDestroy")
    exec_handle.value = None
    _field(entry, _HAS_EXEC, ctypes.c_bool).value = False
    entry.evicted = True
    state.counts["evicted"] += 1


def _instantiate(state: _State, entry: _Entry) -> None:
    exec_handle = _field(entry, _EXEC, ctypes.c_void_p)
    graph_handle = _field(entry, _GRAPH, ctypes.c_void_p).value
    err = _runtime(state).musaGraphInstantiate(
        ctypes.addressof(exec_handle), graph_handle, None, None, 0
    )
    _check(state, err, "musaGraphInstantiate")
    _field(entry, _HAS_EXEC, ctypes.c_bool).value = True
    entry.evicted = False
    state.counts["reinstantiated"] += 1


# ---------------------------------------------------------------- bookkeeping (lock held)
def _drop_dead(state: _State) -> None:
    while state.dead:
        key = state.dead.popleft()
        entry = state.entries.get(key)
        if entry is not None and entry.ref() is None:
            del state.entries[key]
            state.live.pop(key, None)


def _make_room(state: _State, patcher: "Patcher", keep: Optional[int]) -> None:
    """Evict least recently replayed executables until one more fits under the cap."""
    _drop_dead(state)
    while len(state.live) >= state.cap:
        key = next((k for k in state.live if k != keep), None)
        if key is None:
            return
        entry = state.live.pop(key)
        if not state.rotating:
            _start_rotating(state, patcher)
        _evict(state, entry)


def _entry_of(state: _State, graph: Any) -> Optional[_Entry]:
    entry = state.entries.get(id(graph))
    return entry if entry is not None and entry.ref() is graph else None


def _register(state: _State, graph: Any) -> None:
    key = id(graph)
    address = ctypes.c_void_p.from_address(key + _VALUE_OFFSET).value
    dead = state.dead
    ref = weakref.ref(graph, lambda _r, key=key: dead.append(key))
    entry = _Entry(ref, address or 0)
    if not address or not (
        _field(entry, _HAS_GRAPH, ctypes.c_ubyte).value == 1
        and _field(entry, _HAS_EXEC, ctypes.c_ubyte).value == 1
        and _field(entry, _GRAPH, ctypes.c_void_p).value
        and _field(entry, _EXEC, ctypes.c_void_p).value
    ):
        # Not the layout of torch_musa 2.7.1's MUSAGraph: touching it could corrupt the graph.
        state.failed = "this torch_musa's MUSAGraph is not laid out as torch_musa 2.7.1's"
        warn_once(
            "graph_rotation_layout",
            "torchada cannot rotate CUDA graph executables here (" + state.failed + "): "
            "past the MUSA driver's limit of about 2048 live graphs, capture will fail",
        )
        return
    state.entries[key] = entry
    state.live[key] = entry
    state.counts["captured"] += 1


# ---------------------------------------------------------------- the patched methods
def _replace(patcher: "Patcher", cls: type, name: str, fn: Callable) -> None:
    """Put ``fn`` in place of ``cls.name`` (undone by ``patcher``), named and documented as it."""
    old = getattr(cls, name)
    fn.__doc__, fn.__name__, fn.__qualname__ = old.__doc__, old.__name__, old.__qualname__
    patcher.set_attr(cls, name, fn)


def _wrap_capture_end(state: _State, patcher: "Patcher", original: Callable) -> Callable:
    def capture_end(self: Any) -> None:
        if state.failed is not None:
            return original(self)
        with state.lock:
            _make_room(state, patcher, keep=None)
            try:
                original(self)
            except RuntimeError as e:
                if "MUSA error" in str(e) and state.live:
                    raise RuntimeError(
                        f"{e}\ntorchada keeps at most TORCHADA_GRAPH_EXEC_CAP={state.cap} "
                        f"graph executables live ({len(state.live)} now); the driver refused "
                        "one more: set TORCHADA_GRAPH_EXEC_CAP lower"
                    ) from e
                raise
            _register(state, self)

    return capture_end


def _wrap_reset(state: _State, original: Callable) -> Callable:
    def reset(self: Any) -> None:
        with state.lock:
            original(self)
            entry = _entry_of(state, self)
            if entry is not None:
                del state.entries[id(self)]
                state.live.pop(id(self), None)

    return reset


def _start_rotating(state: _State, patcher: "Patcher") -> None:
    """At the first eviction: replay re-instantiates an evicted graph, and the methods that
    read ``has_graph_exec_`` see an evicted graph as the captured graph it still is."""
    import torch_musa

    cls = torch_musa.MUSAGraph
    replay, pool, reinstantiate = cls.replay, cls.pool, cls.reinstantiate_graph
    capture_begin = cls.capture_begin

    def _ready(entry: _Entry) -> None:
        # Lock held: the graph gets its executable back, evicting another if need be.
        _make_room(state, patcher, keep=None)
        _instantiate(state, entry)

    def replay_rotating(self: Any) -> None:
        entry = _entry_of(state, self)
        if entry is None:
            return replay(self)
        key = id(self)
        with state.lock:
            if entry.evicted:
                _ready(entry)
                state.live[key] = entry
            else:
                state.live.move_to_end(key)
            replay(self)  # under the lock: no other thread evicts it before it launches

    def pool_rotating(self: Any) -> Any:
        entry = _entry_of(state, self)
        if entry is None or not entry.evicted:
            return pool(self)
        with state.lock:
            if not entry.evicted:
                return pool(self)
            flag_ = _field(entry, _HAS_EXEC, ctypes.c_bool)
            flag_.value = True  # pool() only checks that a capture succeeded
            try:
                return pool(self)
            finally:
                flag_.value = False

    def reinstantiate_rotating(self: Any) -> None:
        entry = _entry_of(state, self)
        if entry is None:
            return reinstantiate(self)
        with state.lock:
            if entry.evicted:
                _ready(entry)
                state.live[id(self)] = entry
            else:
                reinstantiate(self)

    def capture_begin_rotating(self: Any, pool: Any = None, capture_error_mode: str = "global"):
        entry = _entry_of(state, self)
        if entry is not None and entry.evicted:
            raise RuntimeError(
                "This MUSAGraph instance already owns a captured graph. "
                "To capture a new graph, create a new instance."
            )
        return capture_begin(self, pool=pool, capture_error_mode=capture_error_mode)

    _replace(patcher, cls, "replay", replay_rotating)
    _replace(patcher, cls, "pool", pool_rotating)
    _replace(patcher, cls, "reinstantiate_graph", reinstantiate_rotating)
    _replace(patcher, cls, "capture_begin", capture_begin_rotating)
    state.rotating = True
    logger.info(
        "torchada: more than %d CUDA graphs captured; their executables now rotate", state.cap
    )


def install(patcher: "Patcher") -> None:
    """Install rotation on ``torch_musa.MUSAGraph`` unless ``TORCHADA_GRAPH_ROTATION=0``.

    Example::

        >>> from torchada._core.patcher import Patcher
        >>> install(Patcher())  # doctest: +SKIP
    """
    global _state
    if not flag("TORCHADA_GRAPH_ROTATION", default=True):
        return
    import torch_musa

    cls = getattr(torch_musa, "MUSAGraph", None)
    if cls is None:
        return
    state = _State(cap_setting())
    _replace(patcher, cls, "capture_end", _wrap_capture_end(state, patcher, cls.capture_end))
    _replace(patcher, cls, "reset", _wrap_reset(state, cls.reset))
    _state = state

    def forget() -> None:
        # torch_musa's methods are back: every graph still alive gets its executable again.
        global _state
        with state.lock:
            _drop_dead(state)
            try:
                for entry in state.entries.values():
                    if entry.evicted and entry.ref() is not None:
                        _instantiate(state, entry)
            except RuntimeError as e:
                warn_once(
                    "graph_rotation_undo",
                    f"torchada.disable(): {e}; graphs left evicted raise on replay",
                )
        _state = None

    patcher.on_undo(forget)


__all__: List[str] = ["cap_setting", "install", "stats"]
