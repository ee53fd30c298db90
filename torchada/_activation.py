"""Turning torchada on and off: the import hooks, the attribute patches, and the environment that
child processes inherit. Everything done here is recorded and undone by :func:`disable`."""

from __future__ import annotations

import functools
import importlib
import logging
import sys
import threading
import warnings
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ._core.env import flag

if TYPE_CHECKING:
    from torchada_hooks import ImportHooks

    from ._core.patcher import Patcher, Subsystem

logger = logging.getLogger("torchada")

ACTIVE_ENV = "TORCHADA_ACTIVE"
DISABLE_ENV = "TORCHADA_DISABLE"

_lock = threading.RLock()
_hooks: Optional["ImportHooks"] = None
_enabled = False
_enabling = False
_applied = False
_deferred: List[bool] = []  # an enable() waiting for torch_musa's import to finish


def kill_switch() -> bool:
    """``TORCHADA_DISABLE=1``: torchada installs nothing at all, whatever else asks."""
    return flag(DISABLE_ENV)


def is_enabled() -> bool:
    """Whether torchada's redirects are installed in this process (only ever on MUSA).

    Example::

        >>> import torchada
        >>> torchada.is_enabled()  # on MUSA; False on CUDA and CPU machines  # doctest: +SKIP
        True
    """
    return _enabled


def is_patched() -> bool:
    """Whether torchada has been applied to this process: True once :func:`enable` has run (on
    any platform, also where it found nothing to do), False after :func:`disable`. The published
    torchada's name; :func:`is_enabled` says whether anything was installed.

    Example::

        >>> import torchada
        >>> torchada.is_patched()  # unless TORCHADA_DISABLE=1  # doctest: +SKIP
        True
    """
    return _applied


_patcher: Optional["Patcher"] = None  # made at the first enable() on MUSA

# Subsystems installed after the torch.cuda redirects, in this order: TORCHADA_DISABLE_<NAME>=1
# leaves the one under NAME out. Each module is a Subsystem (its ``install(patcher)``), imported
# only when torchada is enabled.
SUBSYSTEMS: Dict[str, str] = {
    "backend_map": "torchada._distributed.backend_map",
    "devices": "torchada._devices.install",
    "device_args": "torchada._cuda.device_args",
    "c10d": "torchada._distributed.c10d",
    "backend_name": "torchada._distributed.backend_name",
    "fsdp2": "torchada._distributed.fsdp2",
    "amp": "torchada._torch.amp",
    "profiler": "torchada._torch.profiler",
    "custom_ops": "torchada._ops.custom_ops",
    "backends": "torchada._torch.backends",
    "accelerator": "torchada._torch.accelerator",
    "graph_rotation": "torchada._cuda.graph_rotation",
    "compile": "torchada._torch.compile",
    "cpp_ops": "torchada._ops.overrides",
    "op_fills": "torchada._ops.aten_kernels",
    "private_hooks": "torchada._torch.private_names",
    "cuda_home": "torchada._extensions.cuda_home",
    "ctypes": "torchada._libraries.ctypes_bindings",
    "cuda_shims": "torchada._libraries.shims",
    "nvml": "torchada._libraries.nvml",
    "checkpoints": "torchada._torch.checkpoints",
}


def _stream_repr(stream: Any) -> str:
    return f"<torch.cuda.Stream device={stream.device} cuda_stream={stream.musa_stream:#x}>"


def _event_repr(event: Any) -> str:
    handle = event.musa_event
    return f"<torch.cuda.Event {handle:#x}>" if handle else "<torch.cuda.Event uninitialized>"


def _cuda_stream_protocol(stream: Any) -> Tuple[int, int]:
    # (protocol version, native stream handle), as torch.cuda.Stream answers it.
    return (0, stream.musa_stream)


def _patch_musa_classes(torch_musa: Any, cuda_streams: Any = None) -> None:
    # CUDA code reads .cuda_stream / .cuda_event; torch_musa names them musa_*.
    _patcher.set_attr(torch_musa.Stream, "cuda_stream", property(lambda s: s.musa_stream))
    _patcher.set_attr(torch_musa.Event, "cuda_event", property(lambda e: e.musa_event))
    # They print as torch.cuda's do (torch_musa writes "torch_musa.Stream ... musa_stream="):
    # what the program created is a torch.cuda.Stream to it. The device shown is the real one.
    _patcher.set_attr(torch_musa.Stream, "__repr__", _stream_repr)
    _patcher.set_attr(torch_musa.Event, "__repr__", _event_repr)
    # The CUDA stream protocol (``__cuda_stream__``), where this torch's torch.cuda.Stream has
    # it (not 2.7 or 2.9): libraries that take any stream object ask it for the native handle.
    cuda_stream_cls = getattr(cuda_streams, "Stream", None)
    if cuda_stream_cls is not None and hasattr(cuda_stream_cls, "__cuda_stream__"):
        _patcher.set_attr(torch_musa.Stream, "__cuda_stream__", _cuda_stream_protocol)


def _patch_musa_initialized(torch_musa: Any) -> None:
    # torch_musa's `_initialized` is a copy taken at import, so it stays False. torch reads
    # `device_module._initialized` to decide whether the device was in use: activation
    # checkpointing (torch.utils.checkpoint, Hugging Face's gradient checkpointing) saves and
    # restores the device RNG state only then, so dropout inside a checkpointed block drew other
    # masks on recomputation and gradients came out silently wrong. It answers as
    # torch.cuda._initialized does on CUDA: whether the device has been initialized.
    # torch_musa's own `_lazy_call` runs the update when the device initializes (at once if it
    # already has). The module keeps its plain class (a property on a subclass would tax every
    # torch.musa attribute read).
    handle = _patcher.set_attr(torch_musa, "_initialized", bool(torch_musa.is_initialized()))
    live = [True]

    def mark_initialized() -> None:
        if live[0]:
            # Still torchada's value, so that disable() puts torch_musa's own copy back.
            torch_musa._initialized = handle.new = True

    _patcher.on_undo(lambda: live.__setitem__(0, False))
    from ._core.after_import import on_device_init

    on_device_init(torch_musa, mark_initialized)


def preload(spec: Any) -> List[str]:
    """Modules to import before the proxies stand in: the table's "preload", by default every
    module that fills one of its names. ``spec`` is a module table's entry (a
    :class:`torchada._core.tables.ModuleSpec`, or the JSON object it is read from)."""
    if "preload" in spec:
        return list(spec["preload"])
    modules = {e["impl"].partition(":")[0] for e in spec["names"].values() if "impl" in e}
    return sorted(modules)


def enable(simulate: Optional[bool] = None) -> bool:
    """Install torchada's redirects when running on MUSA. Returns whether they are installed.

    On CUDA and CPU platforms this is a no-op (and costs nothing). ``simulate=True`` (or
    ``TORCHADA_SIMULATE=1``) first activates the bundled torch_musa simulator.

    Idempotent and order-independent: however often and from wherever it is reached in one process
    (``import torchada``, the runner, the ``torch.backends`` entry point of an inherited
    ``TORCHADA_ACTIVE=1``, in any order with ``import torch`` and ``import torch_musa``), the
    process ends up with one installation. A call that arrives while torch_musa is itself still
    being imported (a program whose first line is ``import torch_musa``) finishes when that import
    does, and returns False until then. ``TORCHADA_DISABLE=1`` makes it return False at once.

    Raises ValueError for a ``TORCHADA_PLATFORM`` that is not ``musa``, ``cuda`` or ``cpu``, and
    re-raises whatever a subsystem raises while installing (a bad setting, say) after undoing
    everything installed so far, as :func:`disable` does. Simulation asked for while
    ``TORCHADA_PLATFORM`` names another platform gives a RuntimeWarning and returns False.

    Example::

        >>> import torchada
        >>> torchada.enable()  # on MUSA; False on CUDA and CPU machines  # doctest: +SKIP
        True
        >>> torchada.enable(simulate=True)  # the simulator, on a CPU machine  # doctest: +SKIP
        True
    """
    global _enabling, _applied
    with _lock:
        if _enabled:
            return True
        if _enabling:
            # Reached again from inside the installation under way (importing torch or torch_musa
            # runs torch's entry points, ours among them): that installation finishes the job.
            return False
        if kill_switch():
            logger.debug("torchada disabled by %s", DISABLE_ENV)
            return False
        _enabling = True
        try:
            done = _enable(simulate)
        finally:
            _enabling = False
        _applied = _applied or done or not _deferred
        return done


def _enable(simulate: Optional[bool]) -> bool:
    from . import _simulator
    from ._core import platform as _platform

    simulate = bool(simulate or (simulate is None and _simulator.requested()))
    if not (simulate or _platform.is_musa_platform()):
        # Off MUSA nothing more is loaded: the hooks, wrapt and the tables cost only where used.
        return False
    import torchada_hooks

    from ._core.code_bundle import serving

    # Activation's ~45 modules of ours come from one cached file (a third of its time was
    # finding and reading them one by one).
    with serving("activation", [sys.modules[__package__], torchada_hooks]):
        return _install(simulate)


def _install(simulate: bool) -> bool:
    global _hooks, _enabled, _patcher
    from torchada_hooks import ImportHooks, seal_on_first_use

    from . import _simulator
    from ._core import platform as _platform
    from ._core.patcher import Patcher
    from ._devices import visible as _visible_devices

    if _patcher is None:
        _patcher = Patcher()
    # Before torch_musa is imported: the device choice must be made before any device is used.
    _visible_devices.sync(_patcher)
    if simulate:
        _simulator.activate()
        _platform.detect_platform.cache_clear()
        if not _platform.is_musa_platform():
            forced = _platform.detect_platform().value
            warnings.warn(
                f"TORCHADA_PLATFORM={forced!r} with TORCHADA_SIMULATE=1: the simulated MUSA device "
                "is loaded but torchada stays off, so 'cuda' devices are not served by it; unset "
                "TORCHADA_PLATFORM (or set it to 'musa') to use the simulator",
                RuntimeWarning,
                stacklevel=3,
            )
            return False
    import torch  # noqa: F401

    from torchada_hooks.completion import is_importing, when_imported

    if is_importing("torch_musa"):
        # torch_musa's own first line imported torch, whose entry points brought us here: finish
        # once torch_musa has finished.
        _deferred.append(True)
        when_imported("torch_musa", _finish_deferred)
        return False
    import torch_musa

    from ._cuda.redirect import Redirector, load_table

    table = load_table()
    originals: Dict[str, Any] = {}
    for name in table:
        try:
            originals[name] = importlib.import_module(name)
        except ImportError:
            # A module this torch lacks (torch.cuda.green_contexts on 2.7 and 2.9): torchada
            # mirrors the installed torch and adds no module to it.
            logger.debug("torchada: %s is not in this torch; not redirected", name)
    table = {name: spec for name, spec in table.items() if name in originals}
    # Fill modules import what they stand in for (ctypes, ...): load them while the
    # originals are still the ones in sys.modules. A table's "preload" names what to load
    # instead, when its fill modules reach the originals another way (and load at first use).
    for spec in table.values():
        for module_name in preload(spec):
            importlib.import_module(module_name)
    hooks = ImportHooks()
    redirector = Redirector(originals)
    for name in table:
        hooks.register(name, redirector.build(name))
    hooks.install()
    # Sealed proxies are plain modules: a cached torch.cuda.X costs what torch.musa.X costs.
    # Each is sealed at its first use, so a module the program never touches costs nothing.
    # With the report on they stay lazy, so that each first use is seen where it happens.
    from ._core import usage as _usage

    for name, proxy in [] if _usage.enabled() else hooks.proxies().items():
        seal_on_first_use(proxy, functools.partial(redirector.all_names, name))
    _hooks = hooks
    _patcher.on_undo(hooks.uninstall)
    _patch_musa_classes(torch_musa, originals.get("torch.cuda.streams"))
    _patch_musa_initialized(torch_musa)
    try:
        for name, module_name in SUBSYSTEMS.items():
            if flag(f"TORCHADA_DISABLE_{name.upper()}"):
                logger.debug("torchada subsystem %s disabled by the environment", name)
                continue
            subsystem: Subsystem = importlib.import_module(module_name)  # type: ignore[assignment]
            subsystem.install(_patcher)
    except BaseException:
        # A subsystem refused (a bad setting, say): leave nothing half-installed behind.
        disable()
        raise
    _patcher.set_env(ACTIVE_ENV, "1")
    _enabled = True
    logger.debug("torchada enabled: %d modules redirected", len(table))
    return True


def _finish_deferred() -> None:
    _deferred.clear()
    enable()


def disable() -> None:
    """Undo everything :func:`enable` did: modules, attributes and environment.

    The changes are undone newest first; an attribute that someone else replaced after torchada
    keeps their value. Afterwards :func:`is_enabled` and :func:`is_patched` are False, and a later
    :func:`enable` installs everything again. Safe to call when nothing is installed.

    Example::

        >>> import torchada
        >>> torchada.disable()  # doctest: +SKIP
        >>> torchada.is_enabled(), torchada.is_patched()  # doctest: +SKIP
        (False, False)
    """
    global _hooks, _enabled, _applied
    with _lock:
        _applied = False
        # Nothing was recorded unless the patcher was loaded (enable() loads it, on MUSA only).
        patching = sys.modules.get("torchada._core.patcher")
        if patching is not None:
            patching.undo_all()
        _hooks = None
        _enabled = False


#: Modules whose every attribute the undo tests compare, besides all of ``torch.backends.*``.
_SNAPSHOT_MODULES = ("torch", "torch.cuda", "torch.distributed", "ctypes")


def snapshot_state() -> Tuple[Dict[str, int], Dict[str, int]]:
    """Identities of ``sys.modules``, of every attribute of the modules torchada touches (torch,
    torch.cuda, torch.backends.*, torch.ops, ctypes, torch.distributed) and of ``sys.meta_path``'s
    entries (for undo tests)."""
    modules = {k: id(v) for k, v in sys.modules.items()}
    attrs: Dict[str, int] = {f"sys.meta_path[{i}]": id(f) for i, f in enumerate(sys.meta_path)}
    names = [n for n in _SNAPSHOT_MODULES if n in sys.modules]
    names += sorted(n for n in sys.modules if n.startswith("torch.backends"))
    objects = [(n, sys.modules[n]) for n in names]
    torch = sys.modules.get("torch")
    if torch is not None and "ops" in vars(torch):
        objects.append(("torch.ops", vars(torch)["ops"]))
    for name, obj in objects:
        for attr, value in list(vars(obj).items()):
            attrs[f"{name}:{attr}"] = id(value)
    return modules, attrs
