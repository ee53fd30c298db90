"""Operator overrides: C++ kernels for the MUSA (PrivateUse1) key, installed while torchada is on.

The overrides live in libraries that follow the contract of ``csrc/torchada_native/op_override.h``:
torchada's own native library (the one device translation uses) and any extension a user loads
with :func:`torchada.op_overrides.load`. Loading such a library registers nothing; this module
installs each enabled override at run time into a ``torch::Library`` of its own and, on
``torchada.disable()``, drops it, which gives the operator its previous kernel back.

Controls (read when torchada is enabled):

- ``TORCHADA_ENABLE_CPP_OPS=1`` installs torchada's own overrides (they are off by default).
  Overrides of an extension the program loads itself are installed because it asked for them.
- ``TORCHADA_DISABLE_OP_OVERRIDE_<NAME>=1`` leaves one out; ``<NAME>`` is the override's name in
  any case (``ISFINITE`` for ``isfinite``). A name no library defines gets a warning.
- ``TORCHADA_DEBUG_CPP_OPS=1`` logs every overridden call (logger ``torchada.cpp_ops``).
- ``TORCHADA_CPP_OPS_VERBOSE=1`` shows the build; ``MTGPU_TARGET=mp_XX`` picks the MUSA target.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Set

from .._core.env import flag
from .._core.warn import log_once
from .._native import library as _native

if TYPE_CHECKING:
    from .._core.patcher import Patcher

logger = logging.getLogger("torchada")
trace_logger = logging.getLogger("torchada.cpp_ops")

ENABLE_ENV = "TORCHADA_ENABLE_CPP_OPS"
DEBUG_ENV = "TORCHADA_DEBUG_CPP_OPS"
VERBOSE_ENV = _native.VERBOSE_ENV
DISABLE_PREFIX = "TORCHADA_DISABLE_OP_OVERRIDE_"
# What a library must define to take part (op_override.h's bind() adds them).
_CONTRACT = ("op_overrides", "install_op_override", "remove_op_override", "set_op_override_trace")

_lock = threading.RLock()
_extensions: List[ModuleType] = []  # loaded by the program, installed whenever torchada is on
_installed: Dict[str, Dict[str, Any]] = {}  # name -> what install reported, and by which library
_left_out: Dict[str, str] = {}  # name -> why it is not installed
_active = False  # the subsystem is installed (torchada is on, on MUSA)


def requested() -> bool:
    """``TORCHADA_ENABLE_CPP_OPS=1``: install torchada's own overrides."""
    return flag(ENABLE_ENV)


def disabled_names(known: Sequence[str]) -> Set[str]:
    """The overrides ``TORCHADA_DISABLE_OP_OVERRIDE_<NAME>=1`` turn off; unknown names warn once."""
    out: Set[str] = set()
    for var in list(os.environ):
        if not var.startswith(DISABLE_PREFIX) or not flag(var):
            continue
        name = var[len(DISABLE_PREFIX) :].lower()
        if name in known:
            out.add(name)
        else:
            log_once(
                f"op_overrides:unknown:{var}",
                "torchada: %s names no operator override; known overrides: %s "
                "(the variable is the name in upper case, e.g. %sISFINITE=1)",
                var,
                ", ".join(sorted(known)) or "none",
                DISABLE_PREFIX,
            )
    return out


def _check_contract(module: ModuleType) -> None:
    missing = [f for f in _CONTRACT if not hasattr(module, f)]
    if missing:
        raise TypeError(
            f"{getattr(module, '__name__', module)!r} defines no operator overrides (missing "
            f"{', '.join(missing)}): call torchada_ops::bind(m, table) in its PYBIND11_MODULE"
        )


def _providers() -> List[ModuleType]:
    """The libraries whose overrides are installed now: torchada's own when asked, then the
    program's."""
    out: List[ModuleType] = []
    if requested():
        if not _native.requested():
            log_once(
                "op_overrides:native-off",
                "torchada: %s=1 is ignored: %s=0 turns the native library off",
                ENABLE_ENV,
                _native.NATIVE_ENV,
            )
        else:
            native = _native.load()  # already loaded by device translation, as a rule
            if native is None:
                log_once(
                    "op_overrides:native-failed",
                    "torchada: operator overrides unavailable: the native library did not load "
                    "(%s)",
                    _native.state().get("reason", "unknown"),
                )
            else:
                out.append(native)
    return out + list(_extensions)


def _install_trace(patcher: Any, modules: Sequence[ModuleType]) -> None:
    def sink(line: str) -> None:
        trace_logger.info("%s", line)

    for module in modules:
        module.set_op_override_trace(sink)
        patcher.on_undo(lambda m=module: m.set_op_override_trace(None))
    # Asked for explicitly: make sure the lines are seen even where logging is not configured.
    if trace_logger.getEffectiveLevel() > logging.INFO:
        old_level = trace_logger.level
        trace_logger.setLevel(logging.INFO)
        patcher.on_undo(lambda: trace_logger.setLevel(old_level))
    if not trace_logger.hasHandlers():
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        trace_logger.addHandler(handler)
        patcher.on_undo(lambda: trace_logger.removeHandler(handler))


def _install_from(module: ModuleType, patcher: Any, known: Sequence[str]) -> List[str]:
    off = disabled_names(known)
    done = []
    for entry in module.op_overrides():
        name = entry["name"]
        if name in off:
            _left_out[name] = f"{DISABLE_PREFIX}{name.upper()}=1"
            logger.debug("torchada: operator override %s left out by the environment", name)
            continue
        if name in _installed:
            continue
        info = dict(module.install_op_override(name))
        info.update(op=entry["op"], summary=entry["summary"], library=module.__name__)
        _installed[name] = info
        _left_out.pop(name, None)
        done.append(name)

        def remove(module: ModuleType = module, name: str = name) -> None:
            module.remove_op_override(name)
            _installed.pop(name, None)

        patcher.on_undo(remove)
        if info["shadows"]:
            # The dispatcher's own "Overriding a previously registered kernel" warning is held
            # back (once per process, and alarming); this says the same for each override.
            logger.info(
                "torchada: operator override %s replaces the MUSA backend's kernel for %s "
                "(%s) until torchada.disable()",
                name,
                entry["op"],
                info["previous"],
            )
        else:
            logger.debug("torchada: operator override %s installed for %s", name, entry["op"])
    return done


def _known(modules: Sequence[ModuleType]) -> List[str]:
    return [entry["name"] for m in modules for entry in m.op_overrides()]


def install(patcher: Patcher) -> None:
    """Install the enabled overrides (the activation subsystem entry point)."""
    global _active
    with _lock:
        if requested() or _extensions:
            try:
                _native.target_arch_from_env()
            except ValueError as err:
                # It only matters where .mu kernels are compiled (which then fails with this
                # error); `import torchada` must not, nor `python -m torchada doctor`.
                log_once("op_overrides:arch", "torchada: %s", err)
        modules = _providers()
        known = _known(modules)
        for module in modules:
            _install_from(module, patcher, known)
        if modules and flag(DEBUG_ENV):
            _install_trace(patcher, modules)
        _active = True

        def deactivate() -> None:
            global _active
            _active = False
            _left_out.clear()

        patcher.on_undo(deactivate)


def include_dir() -> Path:
    """The directory of ``op_override.h``, for extensions outside torchada.

    :func:`load` adds it to the include path itself; an extension built another way needs it
    there (then :func:`register` it).

    Example::

        >>> from torchada import op_overrides
        >>> (op_overrides.include_dir() / "op_override.h").is_file()
        True
    """
    return _native.source_dir()


def register(module: ModuleType) -> List[str]:
    """Add an extension's overrides to those torchada installs; installs them now when torchada
    is on. Returns the names installed now.

    ``module`` is an imported extension that binds its overrides with ``torchada_ops::bind`` (see
    ``op_override.h``). Registering it again returns ``[]``; while torchada is off its overrides
    wait for :func:`torchada.enable`.

    Raises TypeError when ``module`` lacks the functions ``bind`` adds, and ValueError when one of
    its overrides has the name of one another loaded library defines.

    Example::

        >>> import types
        >>> from torchada import op_overrides
        >>> op_overrides.register(my_extension)  # an imported extension  # doctest: +SKIP
        ['my_op']
        >>> op_overrides.register(types.ModuleType("plain"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        TypeError: 'plain' defines no operator overrides (missing op_overrides, ...
    """
    _check_contract(module)
    with _lock:
        if module in _extensions:
            return []
        others = [m for m in _providers() if m is not module]
        taken = set(_known(others))
        clash = sorted(taken.intersection(_known([module])))
        if clash:
            raise ValueError(
                f"{module.__name__} defines operator overrides named {', '.join(clash)}, which "
                "another loaded library defines already: give them other names"
            )
        _extensions.append(module)
        if not _active:
            return []
        from .._core.patcher import Patcher

        patcher = Patcher()
        done = _install_from(module, patcher, _known([*others, module]))
        if done and flag(DEBUG_ENV):
            _install_trace(patcher, [module])
        return done


def load(
    name: str, sources: Sequence["str | Path"], extra_cflags: Sequence[str] = ()
) -> ModuleType:
    """Build (once, cached, under the build lock) an extension of operator overrides written
    against ``op_override.h``, import it and :func:`register` it.

    ``.mu`` sources are compiled only where mcc exists (``TORCHADA_WITH_MUSA_KERNELS`` is then
    defined for the C++ sources); elsewhere they are skipped with an INFO log. ``extra_cflags``
    go to the C++ compiler. Returns the extension module.

    Raises FileNotFoundError for a missing source, ValueError when ``.mu`` sources are to be
    compiled and ``MTGPU_TARGET`` is not ``mp_<digits>`` (or no target is known), RuntimeError
    when the build fails (the message carries the compiler output), and what :func:`register`
    raises.

    Example::

        >>> from torchada import op_overrides
        >>> ext = op_overrides.load("my_overrides", ["my_overrides.cpp"])  # doctest: +SKIP
        >>> sorted(op_overrides.installed())  # on MUSA, torchada on  # doctest: +SKIP
        ['my_op']
    """
    from .._native.build import headers_digest, load_torch_extension, verbose_builds

    paths = [Path(s).resolve() for s in sources]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"op_overrides.load({name!r}): no such source: {missing[0]}")
    build = _native.plan(
        [p for p in paths if p.suffix != ".mu"], [p for p in paths if p.suffix == ".mu"]
    )
    _native.log_musa_skip(name, build)
    cflags = ["-DNDEBUG", *extra_cflags]
    if build.compiles_musa:
        cflags.append(f"-D{_native.WITH_MUSA_KERNELS}")
    module = load_torch_extension(
        name,
        build.sources,
        extra_cflags=cflags,
        key_extra=[
            f"headers {headers_digest(include_dir())}",
            _native.torch_musa_version(),
        ],
        extra_include_paths=[include_dir()],
        verbose=verbose_builds(VERBOSE_ENV),
        musa_arch=build.arch,
    )
    register(module)
    return module


def installed() -> Dict[str, Dict[str, Any]]:
    """The overrides installed now: ``{name: {op, summary, library, previous, shadows, calls}}``.

    ``previous`` says where the kernel it replaced was registered, ``shadows`` whether that was the
    backend's own kernel, ``calls`` how often the override ran. Empty while torchada is off.

    Example::

        >>> from torchada import op_overrides
        >>> # on MUSA with TORCHADA_ENABLE_CPP_OPS=1:
        >>> op_overrides.installed()["isfinite"]["op"]  # doctest: +SKIP
        'aten::isfinite'
    """
    with _lock:
        out = {name: dict(info) for name, info in _installed.items()}
        libraries = {info["library"] for info in out.values()}
        for module in [m for m in [_native_module(), *_extensions] if m is not None]:
            if module.__name__ not in libraries:
                continue
            for entry in module.op_overrides():
                if entry["name"] in out:
                    out[entry["name"]]["calls"] = entry["calls"]
        return out


def _native_module() -> Optional[ModuleType]:
    return sys.modules.get(_native.LIBRARY_NAME)


def state() -> Dict[str, Any]:
    """What ``doctor`` prints about the overrides: whether torchada's own were asked for
    (``requested``), whether the subsystem is installed (``active``), :func:`installed`, those
    left out and why (``left_out``), and the names of the registered extensions.

    Example::

        >>> from torchada import op_overrides
        >>> sorted(op_overrides.state())
        ['active', 'extensions', 'installed', 'left_out', 'requested']
    """
    with _lock:
        return {
            "requested": requested(),
            "active": _active,
            "installed": installed(),
            "left_out": dict(_left_out),
            "extensions": [m.__name__ for m in _extensions],
        }


def available(module: Optional[ModuleType] = None) -> List[Dict[str, Any]]:
    """The overrides a library defines (torchada's own by default; builds it if needed).

    One dict per override: ``name``, ``op``, ``summary``, ``installed`` and ``calls``. Empty when
    torchada's native library is unavailable (``TORCHADA_NATIVE=0``, or its build failed).

    Example::

        >>> from torchada import op_overrides
        >>> [o["name"] for o in op_overrides.available()]  # doctest: +SKIP
        ['isfinite']
    """
    target = module if module is not None else _native.load()
    return [] if target is None else list(target.op_overrides())
