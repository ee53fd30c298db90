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

What it acts on: the ``at::musa::MUSAGraph`` behind a ``torch.musa.MUSAGraph`` (pybind11 keeps
the C++ object's address right after the Python object header), whose first members are
``graph_`` and ``graph_exec_`` (``csrc/aten/musa/MUSAGraph.h``), then flags whose layout changed
between releases: torch_musa 2.7.1 has ``has_graph_, has_graph_exec_`` at bytes 16 and 17, and
2.9.1.post1 puts ``capture_ended_`` between them (``has_graph_exec_`` at byte 18). torchada does
not assume either: it learns where ``has_graph_exec_`` is from what the installed release does,
once, at the first capture (see ``_learn_layout``), and rotation stays off with a warning when
what it sees fits no known shape. Eviction destroys the executable (``musaGraphExecDestroy``) and
clears ``graph_exec_`` and ``has_graph_exec_``, nothing else; the destructor and ``reset()`` then
free only the template (and, from 2.9.1.post1, the pool). Re-instantiation uses the release's own
``MUSAGraph.instantiate()`` where it has one (2.9.1.post1 and later), else ``musaGraphInstantiate``
into ``graph_exec_``, as 2.7.1's ``MUSAGraph::reinstantiate_graph`` does.
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
# MUSAGraph.h, every release: musaGraph_t graph_; musaGraphExec_t graph_exec_; then the flags.
_GRAPH, _EXEC, _FLAGS = 0, 8, range(16, 24)
# 2.7.1's flags in declaration order (has_graph_, has_graph_exec_): what its capture_end sets.
_FLAGS_2_7_1 = (16, 17)


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
        self.has_exec: Optional[int] = None  # offset of has_graph_exec_, once learnt
        self.native_instantiate: Optional[Callable] = None  # MUSAGraph.instantiate (2.9.1.post1+)
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
            "has_graph_exec_offset": None,
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
            "has_graph_exec_offset": state.has_exec,
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
    assert state.has_exec is not None
    exec_handle = _field(entry, _EXEC, ctypes.c_void_p)
    _check(state, _runtime(state).musaGraphExecDestroy(exec_handle.value), "musaGraphExecDestroy")
    exec_handle.value = None
    _field(entry, state.has_exec, ctypes.c_bool).value = False
    entry.evicted = True
    state.counts["evicted"] += 1


def _instantiate(state: _State, entry: _Entry) -> None:
    graph = entry.ref()
    if state.native_instantiate is not None and graph is not None:
        # The release's own instantiate(): it sets graph_exec_ and has_graph_exec_ itself.
        state.native_instantiate(graph)
    else:
        assert state.has_exec is not None
        exec_handle = _field(entry, _EXEC, ctypes.c_void_p)
        graph_handle = _field(entry, _GRAPH, ctypes.c_void_p).value
        err = _runtime(state).musaGraphInstantiate(
            ctypes.addressof(exec_handle), graph_handle, None, None, 0
        )
        _check(state, err, "musaGraphInstantiate")
        _field(entry, state.has_exec, ctypes.c_bool).value = True
    entry.evicted = False
    state.counts["reinstantiated"] += 1


# ---------------------------------------------------------------- learning the layout
def _address(graph: Any) -> int:
    return ctypes.c_void_p.from_address(id(graph) + _VALUE_OFFSET).value or 0


def _snapshot(address: int) -> bytes:
    """graph_, graph_exec_ and the flag bytes after them, as they are now."""
    return ctypes.string_at(address, _FLAGS.stop) if address else b""


def _word(snap: bytes, offset: int) -> int:
    return int.from_bytes(snap[offset : offset + 8], "little")


def _raised(snap: bytes, before: bytes) -> List[int]:
    """The flag bytes that went from 0 to 1 between two snapshots (None: another change)."""
    changed = [i for i in _FLAGS if snap[i] != before[i]]
    if any(before[i] != 0 or snap[i] != 1 for i in changed):
        raise _LayoutError(f"flag bytes {changed} changed to values other than 0 -> 1")
    return changed


class _LayoutError(Exception):
    pass


def _learn_plain(cls: type, before: bytes, after: bytes) -> int:
    """A release without ``instantiate()`` (2.7.1's API): its capture_end must set exactly
    2.7.1's two flags and give the graph a template and an executable; has_graph_exec_ is the
    second, as 2.7.1 declares them. A third flag (2.9.1.post1's capture_ended_) fails here."""
    if not (_word(after, _GRAPH) and _word(after, _EXEC)) or _word(before, _EXEC):
        raise _LayoutError("capture_end did not leave graph_ and graph_exec_ at bytes 0 and 8")
    raised = _raised(after, before)
    if tuple(raised) != _FLAGS_2_7_1:
        raise _LayoutError(
            f"capture_end set flag bytes {raised}, not torch_musa 2.7.1's has_graph_ and "
            "has_graph_exec_ (16, 17)"
        )
    return _FLAGS_2_7_1[1]


def _learn_with_instantiate(cls: type, originals: Dict[str, Callable], device: Any) -> int:
    """A release with ``MUSAGraph(keep_graph=True)``, ``instantiate()`` and
    ``raw_musa_graph_exec()`` (2.9.1.post1 and later): capture a probe graph that keeps its
    template, then instantiate it. The one flag byte that instantiate() raises, while graph_exec_
    becomes what raw_musa_graph_exec() reports, is has_graph_exec_."""
    import torch

    if not hasattr(cls, "raw_musa_graph_exec"):
        raise _LayoutError("MUSAGraph has instantiate() but no raw_musa_graph_exec()")
    probe = cls(keep_graph=True)
    address = _address(probe)
    if not address:
        raise _LayoutError("no C++ object behind the MUSAGraph")
    stream = torch.musa.Stream(device=device)
    stream.wait_stream(torch.musa.current_stream(device))
    try:
        with torch.musa.stream(stream):
            originals["capture_begin"](probe)
            torch.ones(1, device=device).add_(1)
            originals["capture_end"](probe)
        captured = _snapshot(address)
        if _word(captured, _EXEC):
            raise _LayoutError("keep_graph=True: capture_end left an executable at byte 8")
        originals["instantiate"](probe)
        ready = _snapshot(address)
        raised = _raised(ready, captured)
        exec_handle = int(probe.raw_musa_graph_exec())
        if len(raised) != 1 or not exec_handle or _word(ready, _EXEC) != exec_handle:
            raise _LayoutError(
                f"instantiate() set flag bytes {raised} and graph_exec_ "
                f"{_word(ready, _EXEC):#x} (raw_musa_graph_exec() = {exec_handle:#x})"
            )
        return raised[0]
    finally:
        originals["reset"](probe)


def _learn_layout(
    state: _State, cls: type, originals: Dict[str, Callable], graph: Any, before: bytes
) -> None:
    """Once, after the first capture: where has_graph_exec_ is, or rotation off."""
    after = _snapshot(_address(graph))
    try:
        if not after:
            raise _LayoutError("no C++ object behind the MUSAGraph")
        if "instantiate" in originals:
            has_exec = _learn_with_instantiate(cls, originals, _capture_device())
            if _word(after, _EXEC):  # the user's graph agrees (keep_graph=False)
                if after[has_exec] != 1 or _word(after, _EXEC) != int(graph.raw_musa_graph_exec()):
                    raise _LayoutError("a captured graph disagrees with the probe")
            state.native_instantiate = originals["instantiate"]
        else:
            has_exec = _learn_plain(cls, before, after)
    except (_LayoutError, RuntimeError, TypeError) as e:
        state.failed = f"its MUSAGraph is not laid out as torchada can prove: {e}"
        warn_once(
            "graph_rotation_layout",
            "torchada cannot rotate CUDA graph executables with this torch_musa ("
            + state.failed
            + "): past the MUSA driver's limit of about 2048 live graphs, capture will fail; "
            "TORCHADA_GRAPH_ROTATION=0 silences this",
        )
        return
    state.has_exec = has_exec
    logger.debug("torchada: MUSAGraph has_graph_exec_ is at byte %d", has_exec)


def _capture_device() -> Any:
    import torch

    return torch.device(torch._C._get_privateuse1_backend_name(), torch.musa.current_device())


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
    dead = state.dead
    ref = weakref.ref(graph, lambda _r, key=key: dead.append(key))
    entry = _Entry(ref, _address(graph))
    state.entries[key] = entry
    state.counts["captured"] += 1
    if _field(entry, _EXEC, ctypes.c_void_p).value:
        state.live[key] = entry
    else:
        entry.evicted = True  # keep_graph=True: no executable until instantiate() or replay()


# ---------------------------------------------------------------- the patched methods
def _replace(patcher: "Patcher", cls: type, name: str, fn: Callable) -> None:
    """Put ``fn`` in place of ``cls.name`` (undone by ``patcher``), named and documented as it."""
    old = getattr(cls, name)
    fn.__doc__, fn.__name__, fn.__qualname__ = old.__doc__, old.__name__, old.__qualname__
    patcher.set_attr(cls, name, fn)


def _wrap_capture_end(
    state: _State, patcher: "Patcher", cls: type, originals: Dict[str, Callable]
) -> Callable:
    original = originals["capture_end"]

    def capture_end(self: Any) -> None:
        if state.failed is not None:
            return original(self)
        with state.lock:
            _make_room(state, patcher, keep=None)
            before = _snapshot(_address(self)) if state.has_exec is None else b""
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
            if state.has_exec is None:
                _learn_layout(state, cls, originals, self, before)
                if state.failed is not None:
                    return
            _register(state, self)
            if _entry_of(state, self).evicted and not state.rotating:
                _start_rotating(state, patcher)  # its first replay must be counted

    return capture_end


def _wrap_instantiate(state: _State, patcher: "Patcher", original: Callable) -> Callable:
    def instantiate(self: Any) -> None:
        entry = _entry_of(state, self)
        if entry is None or state.failed is not None:
            return original(self)
        with state.lock:
            if entry.evicted:
                _make_room(state, patcher, keep=None)
            original(self)
            if entry.evicted:
                entry.evicted = False
                state.live[id(self)] = entry
            else:
                state.live.move_to_end(id(self))

    return instantiate


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
            flag_ = _field(entry, state.has_exec, ctypes.c_bool)
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
    _replace(patcher, cls, "reinstantiate_graph", reinstantiate_rotating)
    # capture_begin refuses a graph with an executable (has_graph_exec_) in every release: an
    # evicted one is refused the same.
    _replace(patcher, cls, "capture_begin", capture_begin_rotating)
    if state.native_instantiate is None:
        # 2.7.1's pool() reads has_graph_exec_; from 2.9.1.post1 it reads capture_ended_, which
        # eviction leaves alone.
        _replace(patcher, cls, "pool", pool_rotating)
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
    names = ("capture_begin", "capture_end", "reset", "instantiate")
    originals = {name: getattr(cls, name) for name in names if hasattr(cls, name)}
    _replace(patcher, cls, "capture_end", _wrap_capture_end(state, patcher, cls, originals))
    _replace(patcher, cls, "reset", _wrap_reset(state, cls.reset))
    if "instantiate" in originals:
        _replace(patcher, cls, "instantiate", _wrap_instantiate(state, patcher, cls.instantiate))
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
