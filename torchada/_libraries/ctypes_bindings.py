"""ctypes bindings to CUDA libraries, answered by their MUSA counterparts.

``ctypes.CDLL("libcudart.so.12")`` loads ``libmusart.so`` and its functions answer to CUDA names
(``lib.cudaMalloc`` is ``musaMalloc``); ``ctypes.util.find_library("cudart")`` finds the MUSA
runtime. Any other library is loaded by ctypes itself and returned as the very same type, with no
wrapper. The rules are data: the rows of tables/libraries.json marked "ctypes".
"""

from __future__ import annotations

import _ctypes as _ctypes_c
import ctypes as _ctypes
import ctypes.util as _ctypes_util
import functools
import os
import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from .._core.cache import recall, remember
from .._core.tables import Library

if TYPE_CHECKING:
    from .._core.patcher import Patcher

_RealCDLL = _ctypes.CDLL
_RealPyDLL = _ctypes.PyDLL
_real_find_library = _ctypes_util.find_library


@functools.lru_cache(maxsize=1)
def _rules() -> List[Tuple["re.Pattern[str]", Library]]:
    from .._core import tables as _tables

    rows = _tables.load("libraries").libraries
    return [(re.compile(r.file_pattern), r) for r in rows if r.ctypes]


@functools.lru_cache(maxsize=1)
def _musa_rules() -> List[Tuple["re.Pattern[str]", Library]]:
    # The other direction, from the same rows: a MUSA library opened by its own name or path
    # (libmusart.so, /opt/musa/lib/libmccl.so.2) answers the CUDA names of its functions.
    out = []
    for _, rule in _rules():
        stem = rule.musa_file.split(".so")[0]
        out.append((re.compile(re.escape(stem) + r"(\.so(\.\d+)*)?"), rule))
    return out


_library_dir: Dict[str, Optional[str]] = {}  # filled at first use while torchada is on


def musa_library_dir() -> Optional[str]:
    """Where MUSA's libraries are: the directory of the ``libmusart`` that torch_musa has loaded
    (its C extension links it), else ``$MUSA_HOME/lib``.

    Read once while torchada is on (as torch_musa reads ``MUSA_HOME`` once, at import): every
    library load asks, and loads must cost about what a plain ``CDLL`` does.

    Example::

        >>> musa_library_dir()  # doctest: +SKIP
        '/usr/local/musa/lib'
    """
    try:
        return _library_dir["dir"]
    except KeyError:
        pass
    found = _loaded_library_dir("libmusart.so")
    if found is None:
        home = os.environ.get("MUSA_HOME") or os.environ.get("MUSA_PATH") or "/usr/local/musa"
        lib = os.path.join(home, "lib")
        found = lib if os.path.isdir(lib) else None
    _library_dir["dir"] = found
    return found


def _loaded_library_dir(stem: str) -> Optional[str]:
    """The directory of a loaded shared library whose file name starts with ``stem``."""
    # Reading the loader's map costs about a millisecond in a torch process: the path found last
    # time is asked of the loader first (a loaded file is found without reading anything).
    recalled = recall(f"loaded-{stem}")
    if recalled and _is_loaded(recalled):
        return os.path.dirname(recalled)
    path = _mapped_file(stem)
    if path is None:
        return None
    if path != recalled:
        remember(f"loaded-{stem}", path)
    return os.path.dirname(path)


def _is_loaded(path: str) -> bool:
    """Whether the shared library at ``path`` is loaded in this process; asking loads nothing."""
    try:
        _ctypes_c.dlopen(path, os.RTLD_NOLOAD | os.RTLD_LAZY)
    except (OSError, AttributeError):  # not loaded, or no RTLD_NOLOAD on this system
        return False
    return True


def _mapped_file(stem: str) -> Optional[str]:
    """The path of a file mapped into this process whose name starts with ``stem``."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            text = maps.read()
    except OSError:  # not Linux: the loader's own map is not readable this way
        return None
    # A search for the name, not a loop over the lines: a torch process maps hundreds of files.
    found = text.find("/" + stem)
    while found >= 0:
        start = text.rfind("\n", 0, found) + 1
        end = text.find("\n", found)
        path = "/" + text[start : end if end >= 0 else len(text)].partition("/")[2]
        if os.path.basename(path).startswith(stem):
            return path
        found = text.find("/" + stem, found + 1)
    return None


@functools.lru_cache(maxsize=64)
def _musa_path(directory: Optional[str], target: str) -> str:
    if directory and os.path.exists(os.path.join(directory, target)):
        return os.path.join(directory, target)
    return target  # let the dynamic loader search for it


def library_rule(cuda_file: str) -> Library:
    """The ctypes row of CUDA library ``cuda_file`` (``"libcudart"``), read from the table alone
    (:func:`map_library` matches any spelling of a name, at the cost of its patterns).

    Example::

        >>> library_rule("libcudart").musa_file
        'libmusart.so'
    """
    from .._core import tables as _tables

    for rule in _tables.load("libraries").libraries:
        if rule.ctypes and rule.cuda_file == cuda_file:
            return rule
    raise KeyError(f"{cuda_file!r} is not a ctypes library in tables/libraries.json")


def _load_path(rule: Library) -> str:
    """The path ctypes loads for ``rule``'s CUDA library. Raises OSError, as ctypes does for a
    library it cannot load, where torchada's own library of the CUDA names cannot be built."""
    if rule.implemented:
        # torchada's own library of the CUDA names (built and bound at its first load).
        import sys

        from .nvml_library import library_path

        try:
            return str(library_path(sys.modules[__name__], rule.cuda_file))
        except OSError:
            raise
        except Exception as err:  # no compiler, a read-only cache, ...: a library not there
            raise OSError(
                f"{rule.cuda_file}.so: torchada's {rule.cuda_file} over {rule.musa_file} cannot "
                f"be built ({type(err).__name__}: {err})"
            ) from err
    return _musa_path(musa_library_dir(), rule.musa_file)


def musa_library_path(cuda_file: str) -> str:
    """The path to load for the MUSA counterpart of CUDA library ``cuda_file`` (``"libcudart"``).

    Example::

        >>> musa_library_path("libcudart")  # doctest: +SKIP
        '/usr/local/musa/lib/libmusart.so'
    """
    return _load_path(library_rule(cuda_file))


def map_library(name: "str | None") -> Tuple["str | None", Optional[Library]]:
    """``(path to load, rule)`` for a library name or path; the rule is None when it is neither a
    CUDA library nor a MUSA one (then the path is returned unchanged). A MUSA library keeps its
    path and gets the rule that lets it answer CUDA function names."""
    if not name:
        return name, None
    kind, rule = _classify(os.path.basename(str(name)))
    if kind == "cuda":
        return _load_path(rule), rule
    return name, rule


@functools.lru_cache(maxsize=256)
def _classify(base: str) -> Tuple[Optional[str], Optional[Library]]:
    """("musa" or "cuda", rule) for a library file name, (None, None) for any other."""
    for pattern, rule in _musa_rules():
        if pattern.fullmatch(base):
            return "musa", rule
    for pattern, rule in _rules():
        if pattern.fullmatch(base):
            return "cuda", rule
    return None, None


@functools.lru_cache(maxsize=8)
def _porting_rules(domain: str) -> Dict[str, Any]:
    # The porter's rules for this library's API: the same data that renames C++ sources.
    from ..porting._ruleset import load_rules

    return {r.cuda: r for r in load_rules().domains.get(domain, ())}


def _symbol(rule: Library, name: str) -> str:
    """The MUSA function name for ``name``: the porter's rule for it where there is one (renames
    that are not a prefix swap; functions MUSA lacks raise AttributeError with the reason), else
    the row's prefix swap."""
    domain = rule.porting
    if domain and name[:1].islower():
        ported = _porting_rules(domain).get(name)
        if ported is not None:
            if ported.kind == "unsupported":
                raise AttributeError(
                    f"{name} has no MUSA counterpart in {rule.musa_file}: {ported.note}"
                )
            if ported.kind == "rename":
                return ported.musa
    for cuda_prefix, musa_prefix in rule.symbols:
        if name.startswith(cuda_prefix):
            return musa_prefix + name[len(cuda_prefix) :]
    return name


_real_getitem = _RealCDLL.__getitem__
_real_init = _RealCDLL.__init__  # taken before install() patches it


def open_untranslated(path: str) -> Any:
    """``ctypes.CDLL(path)`` as ctypes itself opens it, even when the name is a CUDA library's
    (torchada's own CUDA-named forwarding libraries)."""
    lib = _RealCDLL.__new__(_RealCDLL)
    _real_init(lib, path)
    return lib


def _lookup(lib: Any, name: str) -> Any:
    """Function ``name`` (a CUDA or a MUSA name) of a MUSA library ``lib``."""
    musa_name = _symbol(lib._torchada_rule, name)
    try:
        return _real_getitem(lib, musa_name)
    except AttributeError:
        raise AttributeError(
            f"{lib._torchada_cuda_name} (loaded as {lib._name}) has no function "
            f"{name!r} (looked for MUSA's {musa_name!r})"
        ) from None


class _MusaLibrary(_RealCDLL):
    """A MUSA library, reached under its CUDA name or its own: functions answer to their CUDA
    names too."""

    _torchada_rule: Optional[Library] = None
    _torchada_cuda_name = ""

    def __getitem__(self, name_or_ordinal: Any) -> Any:
        if not isinstance(name_or_ordinal, str):
            return _real_getitem(self, name_or_ordinal)
        return _lookup(self, name_or_ordinal)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        func = self.__getitem__(name)
        setattr(self, name, func)  # later accesses are plain attribute hits, as with CDLL
        return func


class _MusaPyLibrary(_MusaLibrary):
    _func_flags_ = _ctypes._FUNCFLAG_CDECL | _ctypes._FUNCFLAG_PYTHONAPI


class _LoaderMeta(type):
    # isinstance(x, ctypes.CDLL) stays true for libraries ctypes itself created.
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls._real)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls._real)


def _load(real: type, musa_type: type, name: Any, args: tuple, kwargs: dict) -> Any:
    if isinstance(name, bytes):  # ctypes takes bytes paths too
        name = os.fsdecode(name)
    path, rule = map_library(name) if isinstance(name, (str, os.PathLike)) else (name, None)
    if rule is None:
        return real(name, *args, **kwargs)
    if rule.implemented:
        # torchada's own library under the CUDA name, or the MUSA library it is written over
        # (MTML keeps its own names: their signatures differ): ctypes' plain objects.
        return real(path, *args, **kwargs)
    try:
        lib = musa_type.__new__(musa_type)
        _real_init(lib, path, *args, **kwargs)  # ctypes' own: the path is mapped already
    except OSError as err:
        raise OSError(
            f"{name}: cannot load its MUSA counterpart {path} ({err}); is the MUSA toolkit "
            "installed (MUSA_HOME) or on LD_LIBRARY_PATH?"
        ) from err
    lib._torchada_rule = rule
    lib._torchada_cuda_name = str(name)
    return lib


class CDLL(_RealCDLL, metaclass=_LoaderMeta):
    """ctypes.CDLL on MUSA: CUDA library names load their MUSA counterparts."""

    _real = _RealCDLL

    def __new__(cls, name: Any, *args: Any, **kwargs: Any) -> Any:
        if cls is not CDLL:  # a user subclass: construct it normally, on the mapped path
            obj = _RealCDLL.__new__(cls)
            return obj
        return _load(_RealCDLL, _MusaLibrary, name, args, kwargs)

    def __init__(self, name: Any, *args: Any, **kwargs: Any) -> None:
        # Only user subclasses get here (our __new__ returns objects of other types otherwise).
        path, _ = map_library(name) if isinstance(name, str) else (name, None)
        _RealCDLL.__init__(self, path, *args, **kwargs)


class PyDLL(_RealPyDLL, metaclass=_LoaderMeta):
    _real = _RealPyDLL

    def __new__(cls, name: Any, *args: Any, **kwargs: Any) -> Any:
        if cls is not PyDLL:
            return _RealPyDLL.__new__(cls)
        return _load(_RealPyDLL, _MusaPyLibrary, name, args, kwargs)

    def __init__(self, name: Any, *args: Any, **kwargs: Any) -> None:
        path, _ = map_library(name) if isinstance(name, str) else (name, None)
        _RealPyDLL.__init__(self, path, *args, **kwargs)


cdll = _ctypes.LibraryLoader(CDLL)
pydll = _ctypes.LibraryLoader(PyDLL)


def find_library(name: str) -> Optional[str]:
    """ctypes.util.find_library: CUDA library names find the MUSA ones (None, as ctypes answers,
    where there is none)."""
    _, rule = _classify(f"lib{name}.so")
    if rule is None:
        return _real_find_library(name)
    try:
        path, _ = map_library(f"lib{name}.so")
    except OSError:  # torchada's own library of the CUDA names cannot be built
        return None
    if path and os.path.isabs(path):
        return path
    return _real_find_library(str(rule.musa))


def install(patcher: Patcher) -> None:
    """Make ``ctypes.CDLL`` objects created through references taken before torchada was on
    (``from ctypes import CDLL`` at the top of a module imported first) behave as the proxy's:
    CUDA library names load the MUSA library, and its functions answer to CUDA names."""
    original_init = _RealCDLL.__init__
    original_getitem = _RealCDLL.__getitem__
    _library_dir.clear()  # read again for this activation
    patcher.on_undo(_library_dir.clear)

    def __init__(self: Any, name: Any, *args: Any, **kwargs: Any) -> None:
        rule = None
        if not isinstance(self, _MusaLibrary) and isinstance(name, (str, bytes, os.PathLike)):
            cuda_name = os.fsdecode(name)
            path, rule = map_library(cuda_name)
            if rule is not None and rule.implemented:
                name, rule = path, None  # torchada's own library, or MTML: plain objects
            if rule is not None:
                self._torchada_rule = rule
                self._torchada_cuda_name = cuda_name
                name = path
        original_init(self, name, *args, **kwargs)

    def __getitem__(self: Any, name_or_ordinal: Any) -> Any:
        if "_torchada_rule" in self.__dict__ and isinstance(name_or_ordinal, str):
            return _lookup(self, name_or_ordinal)
        return original_getitem(self, name_or_ordinal)

    __init__.__wrapped__ = original_init  # type: ignore[attr-defined]
    patcher.set_attr(_RealCDLL, "__init__", __init__)
    patcher.set_attr(_RealCDLL, "__getitem__", __getitem__)
