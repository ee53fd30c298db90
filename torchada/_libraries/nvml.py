"""NVML programs on MUSA: ``import pynvml`` and ctypes bindings of ``libnvidia-ml.so.1``, both
answered from MTML, Moore Threads' management library.

- ``import pynvml`` (nvidia-ml-py's API) is served by a proxy module registered with torchada's
  import hooks (tables/nvml_modules.json): its names resolve to
  :mod:`torchada._libraries.pynvml_mtml`, which is pymtml's (mthreads-ml-py) NVML layer. A pynvml
  imported before torchada turned on (``import torch`` imports it) is swapped, and put back by
  :func:`torchada.disable`. Nothing is imported until the program reads a name.
- ``ctypes.CDLL("libnvidia-ml.so.1")`` (vLLM's vendored ``pynvml.py``) loads a library torchada
  builds from ``csrc/nvml_shim`` (tables/libraries.json, row "nvidia-ml"): the NVML functions
  listed there, written over MTML's C API, with NVML's return codes and struct layouts
  (:mod:`torchada._libraries.nvml_library`).

``import pynvml`` is served only where pymtml is installed: without mthreads-ml-py, ``pynvml`` is
what the environment has (nvidia-ml-py's own module, which loads ``libnvidia-ml.so.1`` and so gets
torchada's library above; or no module, and ``import pynvml`` raises ModuleNotFoundError as it
would without torchada). Every error keeps NVML's types: a missing ``libmtml`` is
``pynvml.NVMLError_LibraryNotFound``, as NVML reports a missing ``libnvidia-ml``.

Installed on MUSA only (torchada turns on nowhere else); ``TORCHADA_DISABLE_NVML=1`` leaves it out.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any, Dict, Optional

if TYPE_CHECKING:
    from .._core.patcher import Patcher

logger = logging.getLogger("torchada")

#: The module table of the modules this subsystem serves.
TABLE = "nvml_modules"


def _original_file() -> Optional[str]:
    """Where nvidia-ml-py's ``pynvml`` is, without importing it (None where it is not installed)."""
    loaded = sys.modules.get("pynvml")
    if loaded is not None:
        original = vars(loaded).get("__torchada_original__", loaded)
        return getattr(original, "__file__", None)
    import importlib.util

    try:
        spec = importlib.util.find_spec("pynvml")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None else None


def build_proxy(module_name: str = "pynvml") -> Any:
    """The proxy module served as ``pynvml`` while torchada is on (nothing imported until a name is
    read).

    Example::

        >>> build_proxy("pynvml").__name__  # doctest: +SKIP
        'pynvml'
    """
    import functools

    from torchada_hooks import ProxyModule
    from torchada_hooks.proxy import peek_from

    from .._core import tables as _tables

    spec = _tables.load(TABLE).modules[module_name]
    original = sys.modules.get(module_name)
    attrs: Dict[str, Any] = {
        "__doc__": f"{module_name} answered from MTML by torchada (torchada/tables/{TABLE}.json).",
        "__torchada_original__": (
            vars(original).get("__torchada_original__", original) if original is not None else None
        ),
    }
    where = _original_file()
    if where:
        attrs["__file__"] = where  # a vendored copy is made from nvidia-ml-py's own source
    peek_from("torchada")
    return ProxyModule(
        module_name,
        functools.partial(_resolve, spec, module_name),
        names=functools.partial(_names, spec),
        attrs=attrs,
    )


def _resolve(spec: Any, module_name: str, attr: str) -> Any:
    """A name of the served module: its table row, else the target's (which answers every pynvml
    function name, those MTML lacks with an NVMLError that names them)."""
    import importlib

    entry = spec.names.get(attr)
    if entry is not None and entry.kind == "filled":
        if entry.impl is None:
            return entry.value
        module, _, name = entry.impl.partition(":")
        return getattr(importlib.import_module(module), name)
    target = importlib.import_module(spec.target)  # says what to install where pymtml is missing
    if entry is not None and entry.kind == "unsupported":
        return target.not_supported(f"{module_name}.{attr}", entry.why, entry.instead)
    if entry is not None:
        raise ValueError(f"{TABLE}: {module_name}.{attr} has kind {entry.kind!r}, not served")
    return getattr(target, attr)


def _names(spec: Any) -> list:
    import importlib

    names = set(spec.names)
    try:
        target = importlib.import_module(spec.target)
    except ImportError:  # no pymtml: dir() lists the table's names
        return sorted(names)
    names.update(n for n in dir(target) if not n.startswith("__"))
    return sorted(names)


def _findable(name: str) -> bool:
    """Whether ``import name`` would find a module (nothing is imported; a module already in
    ``sys.modules`` counts)."""
    if name in sys.modules:
        return sys.modules[name] is not None
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def serves(module_name: str = "pynvml") -> bool:
    """Whether torchada serves ``module_name`` from MTML: only where the package that backs it is
    installed (:data:`BACKED_BY`; for ``pynvml``, pymtml from mthreads-ml-py). Elsewhere
    ``pynvml`` is what the environment has: nvidia-ml-py's own module (whose
    ``libnvidia-ml.so.1`` torchada's ctypes translation answers from MTML), or no module at all,
    so that ``import pynvml`` raises ModuleNotFoundError as it would without torchada
    (docs/architecture.md, "What is missing stays missing").

    Example::

        >>> serves("pynvml")  # with mthreads-ml-py installed  # doctest: +SKIP
        True
    """
    return _findable(BACKED_BY[module_name])


#: The module whose package backs each served module: without it, the name is not served.
BACKED_BY = {"pynvml": "pymtml"}


def install(patcher: Patcher) -> None:
    """Serve ``import pynvml`` from MTML where pymtml is installed (MUSA and the simulator only:
    torchada turns on nowhere else); where it is not, ``pynvml`` stays what the environment has.
    The ctypes side needs nothing here: the ctypes table maps ``libnvidia-ml.so.1``."""
    from .. import _activation

    hooks = _activation._hooks
    if hooks is None:  # the import hooks are left out: nothing to register with
        return
    if not serves("pynvml"):
        logger.debug("torchada: pymtml is not installed: pynvml is left as the environment has it")
        return
    hooks.register("pynvml", build_proxy("pynvml"))
    patcher.on_undo(lambda: hooks.unregister("pynvml"))
