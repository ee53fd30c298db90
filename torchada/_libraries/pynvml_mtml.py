"""nvidia-ml-py's ``pynvml`` API answered from MTML: what ``import pynvml`` reads on MUSA.

The functions are pymtml's (mthreads-ml-py) NVML layer, over MTML's C API, with these changes so
that NVML code runs as written:

- ``NVMLError`` is pymtml's ``MTMLError``, the base of every error pymtml's functions raise, so
  ``except pynvml.NVMLError`` catches them (pymtml's own ``NVMLError`` is a sibling class).
  ``NVMLError_<Name>`` and ``NVML_ERROR_<NAME>`` are MTML's classes and codes (MTML numbers its
  codes differently from NVML: compare with the module's constants, not with literals).
- ``nvmlDeviceGetMemoryInfo`` takes pynvml's ``version`` (``nvmlMemory_v2``).
- ``nvmlDeviceGetHandleByUUID`` is pymtml's ``nvmlDeviceGetHandleByUuid``.
- ``nvmlInit`` where MTML's C library (``libmtml.so.2``) cannot be loaded raises
  ``NVMLError_LibraryNotFound`` (pymtml raises ``OSError``), as NVML's does where
  ``libnvidia-ml.so.1`` is missing; a device or system function called before ``nvmlInit`` (or
  after the last ``nvmlShutdown``) raises ``NVMLError_Uninitialized``, as NVML's do.
- Functions pymtml answers with made-up values (tables/nvml_modules.json, "unsupported") raise
  :class:`NotSupportedOnMusa`, an ``NVMLError_NotSupported``; a pynvml function MTML has nothing
  for raises :class:`NoCounterpartOnMusa`, an ``NVMLError_FunctionNotFound``. Both name the
  function, as NVML's own answers for a reading a device or a driver lacks.

Imported at the first name a program reads from ``pynvml`` with torchada on MUSA.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

try:
    import pymtml as _mtml
except ImportError as _err:
    raise ImportError(
        "pynvml on MUSA is answered from MTML, Moore Threads' management library, through its "
        "Python bindings, which are not installed: pip install mthreads-ml-py"
    ) from _err

# pymtml's NVML layer, as pynvml spells it.
for _name in dir(_mtml):
    if _name.startswith(("nvml", "NVML", "c_nvml", "_nvml")):
        globals()[_name] = getattr(_mtml, _name)
# Every MTML error code and class under NVML's spelling (pymtml maps only some, and
# NVMLError_InvalidArgument to its NotFound class).
for _name in dir(_mtml):
    if _name.startswith("MTML_ERROR_"):
        globals()["NVML_ERROR_" + _name[len("MTML_ERROR_") :]] = getattr(_mtml, _name)
    elif _name.startswith("MTMLError_"):
        globals()["NVMLError_" + _name[len("MTMLError_") :]] = getattr(_mtml, _name)
del _name

NVML_SUCCESS = _mtml.MTML_SUCCESS
NVMLError = _mtml.MTMLError
nvmlDeviceGetHandleByUUID = _mtml.nvmlDeviceGetHandleByUuid


def _initialised() -> bool:
    return bool(getattr(_mtml, "_mtmlLib_handles", True))  # pymtml's count of nvmlInit calls


def _needs_init(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` raising NVML's ``NVMLError_Uninitialized`` before ``nvmlInit`` (pymtml would
    call MTML with no library handle, or answer FunctionNotFound)."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not _initialised():
            raise _mtml.MTMLError(_mtml.MTML_ERROR_UNINITIALIZED)
        return function(*args, **kwargs)

    return call


for _name in [n for n in globals() if n.startswith(("nvmlDevice", "nvmlSystem"))]:
    globals()[_name] = _needs_init(globals()[_name])
del _name


def _loading(init: Callable[..., Any]) -> Callable[..., Any]:
    """``nvmlInit`` answering NVML's ``NVMLError_LibraryNotFound`` where MTML's C library cannot be
    loaded (pymtml raises ``OSError``, which no ``except pynvml.NVMLError`` catches)."""

    @functools.wraps(init)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return init(*args, **kwargs)
        except OSError as err:
            raise _mtml.MTMLError(_mtml.MTML_ERROR_LIBRARY_NOT_FOUND) from err

    return call


nvmlInit = _loading(_mtml.nvmlInit)
nvmlInitWithFlags = _loading(_mtml.nvmlInitWithFlags)
#: NVML's version word of ``nvmlMemory_v2_t`` (its size, 40 bytes, and version 2).
nvmlMemory_v2 = 0x02000028


class NotSupportedOnMusa(_mtml.MTMLError_NotSupported):  # type: ignore[misc,valid-type]
    """``NVMLError_NotSupported`` for a pynvml function whose reading MUSA does not give."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else super().__str__()


class NoCounterpartOnMusa(_mtml.MTMLError_FunctionNotFound):  # type: ignore[misc,valid-type]
    """``NVMLError_FunctionNotFound`` for a pynvml function that MTML has no counterpart of."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else super().__str__()


@dataclass(frozen=True)
class MemoryInfoV2:
    """``nvmlMemory_v2_t``'s fields: MTML reports no reserved memory."""

    version: int
    total: int
    reserved: int
    free: int
    used: int


@_needs_init
def nvmlDeviceGetMemoryInfo(handle: Any, version: Any = None) -> Any:
    """Total, free and used bytes of a device (with ``version=nvmlMemory_v2``, NVML's v2 fields).

    Example::

        >>> import pynvml  # with torchada on MUSA  # doctest: +SKIP
        >>> handle = pynvml.nvmlDeviceGetHandleByIndex(0)  # doctest: +SKIP
        >>> pynvml.nvmlDeviceGetMemoryInfo(handle).used  # doctest: +SKIP
        0
    """
    info = _mtml.nvmlDeviceGetMemoryInfo(handle)
    if not version:
        return info
    if version != nvmlMemory_v2:
        raise _mtml.MTMLError(_mtml.MTML_ERROR_INVALID_ARGUMENT)
    return MemoryInfoV2(version, info.total, 0, info.free, info.used)


def _raising(api: str, error: type, message: str) -> Callable[..., Any]:
    def unsupported(*args: Any, **kwargs: Any) -> Any:
        raise error(message)

    unsupported.__name__ = unsupported.__qualname__ = api.rsplit(".", 1)[-1]
    unsupported.__doc__ = message
    unsupported.__torchada_unsupported__ = message  # type: ignore[attr-defined]
    return unsupported


def not_supported(api: str, why: str, instead: str) -> Callable[..., Any]:
    """A pynvml function that raises :class:`NotSupportedOnMusa` naming ``api`` and why.

    Example::

        >>> f = not_supported("pynvml.nvmlDeviceGetMigMode", "no MIG", "skip it")  # doctest: +SKIP
        >>> f.__name__  # doctest: +SKIP
        'nvmlDeviceGetMigMode'
    """
    message = f"{api}: MUSA has no counterpart in MTML ({why}). Instead, {instead}."
    return _raising(api, NotSupportedOnMusa, message)


def __getattr__(name: str) -> Any:
    # Any other pynvml function: nvidia-ml-py defines each one, and NVML answers
    # NVML_ERROR_FUNCTION_NOT_FOUND for one the driver's library lacks; so does MTML here.
    if name.startswith("nvml") and name[4:5].isupper():
        message = (
            f"pynvml.{name}: MUSA has no counterpart: MTML (and its Python bindings, pymtml) "
            "have no such function"
        )
        function = globals()[name] = _raising(f"pynvml.{name}", NoCounterpartOnMusa, message)
        return function
    raise AttributeError(f"module 'pynvml' (MTML's, through torchada) has no attribute {name!r}")
