"""torchada's cache directory, and values derived from the package's data files, kept there
between processes the way Python keeps bytecode: activation reads the tables as one stored value
instead of parsing and checking their JSON again (the JSON stays the one source of truth).

A cached value is keyed by the path, modification time and size of every file it was derived
from (and by Python's version), so an edited table is read again; a cache that cannot be read or
written only costs the time to compute the value.

What the cache holds is run or trusted: native libraries are loaded from it, the module bundle
(torchada._core.code_bundle) holds code. So nothing is read from a directory or file that another
user could have written: the cache root, the folders below it and each entry must belong to this
user (or to root: an administrator's prebuilt cache) and be writable by no one else (a shared
sticky directory such as ``/tmp`` counts only through a private folder of this user's in it).
Otherwise torchada says so once, naming the path, its owner, its mode and the fix, and uses a
private directory of this user's instead (:func:`cache_root` answers that one). The verdict on a
directory is kept for the process: a few ``stat`` calls per activation, no hashing. Files and
directories torchada makes are private (0600 and 0700) whatever the umask, and derived values are
stored as JSON, whose reading cannot run code: a value of another shape is computed again.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

from . import records
from .warn import log_once

logger = logging.getLogger("torchada")

T = TypeVar("T")

_UID = os.geteuid() if hasattr(os, "geteuid") else -1
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_UNKNOWN = object()

#: The layout of a stored derived value; a file of another layout is computed again.
_FORMAT = 2


# ---------------------------------------------------------------- where, and whether to trust it
def configured_root() -> Path:
    """The cache directory asked for: ``TORCHADA_CACHE_DIR``, else ``~/.cache/torchada`` (under
    ``XDG_CACHE_HOME`` where that is set). :func:`cache_root` is the one used.

    Example::

        >>> configured_root(  # doctest: +SKIP
        ... )
        PosixPath('/home/me/.cache/torchada')
    """
    env = os.environ.get("TORCHADA_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return _default_root()


def _default_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchada"


_roots: Dict[Tuple[Optional[str], ...], Path] = {}  # what configures it -> the root in use
_private_roots: Dict[str, Path] = {}  # configured root -> the private one beside it
_verdicts: Dict[str, Optional[str]] = {}  # directory -> None (trusted), or why it is not


def cache_root() -> Path:
    """Where torchada caches what it builds: :func:`configured_root` when it can be trusted (see
    the module's doc), else a private directory of this user's (said once, with the fix).

    Example::

        >>> cache_root(  # doctest: +SKIP
        ... )
        PosixPath('/home/me/.cache/torchada')
    """
    env = os.environ
    # Asked a dozen times per activation: found by what decides it, without building paths.
    key = (env.get("TORCHADA_CACHE_DIR"), env.get("XDG_CACHE_HOME"), env.get("HOME"))
    root = _roots.get(key)
    if root is not None:
        return root
    configured = configured_root()
    why = _dir_verdict(configured)
    if why is None:
        # Kept once it exists; until then (nothing there to read) asked again.
        if os.fspath(configured) in _verdicts:
            _roots[key] = configured
        return configured
    root = _roots[key] = _private_root(configured)
    _warn(configured, why, f"torchada uses {root} instead")
    return root


def _why(st: os.stat_result) -> Optional[str]:
    """Why a file or directory with this status may hold what another user wrote, or None."""
    if _UID < 0:  # no POSIX owners to go by
        return None
    if st.st_uid != _UID and st.st_uid != 0:
        return "owned by another user"
    if st.st_mode & _OTHERS_WRITE:
        return "writable by other users"
    return None


def _dir_verdict(path: Path) -> Optional[str]:
    """None where directory ``path`` is trusted or absent (nothing to read there); kept per
    process once it exists."""
    key = os.fspath(path)
    try:
        return _verdicts[key]
    except KeyError:
        pass
    try:
        st = os.stat(path)
    except OSError:  # absent, or below a file: nothing can be read from it
        return None
    why = _why(st)
    _verdicts[key] = why
    return why


def describe(path: Path) -> Dict[str, Any]:
    """``path``'s owner and mode and whether torchada trusts what it holds, for ``doctor`` and
    messages: ``{"path", "exists", "owner", "uid", "mode", "trusted", "why"}``.

    Example::

        >>> describe(Path("/nonexistent/torchada"))["exists"]
        False
    """
    out: Dict[str, Any] = {"path": os.fspath(path), "exists": False, "trusted": True, "why": ""}
    try:
        st = os.stat(path)
    except OSError:
        return out
    why = _why(st)
    out.update(
        exists=True,
        uid=st.st_uid,
        owner=_owner(st.st_uid),
        mode=f"{stat.S_IMODE(st.st_mode):04o}",
        trusted=why is None,
        why=why or "",
    )
    return out


def _owner(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


def _warn(path: Path, why: str, instead: str) -> None:
    info = describe(path)
    log_once(
        ("cache-untrusted", os.fspath(path)),
        "torchada: not reading the cache at %s: %s (owner %s, mode %s), so another user could "
        "have put code there that torchada would run; %s. To use it, make it yours and writable "
        "by you alone (chown -R %s %s && chmod -R go-w %s), or set TORCHADA_CACHE_DIR to a "
        "directory of your own",
        path,
        why,
        info.get("owner", "?"),
        info.get("mode", "?"),
        instead,
        _owner(_UID),
        path,
        path,
    )


def _private_root(configured: Path) -> Path:
    """A directory of this user's alone for a process whose configured cache is not trusted: the
    default cache where that is another and trusted, else ``$TMPDIR/torchada-<uid>``, else a new
    temporary directory removed at exit (someone else holds that name)."""
    candidates = [Path(tempfile.gettempdir()) / f"torchada-{_UID}"]
    if _default_root() != configured:
        candidates.insert(0, _default_root())
    for candidate in candidates:
        try:
            make_dirs(candidate)
            st = os.lstat(candidate)  # a link to elsewhere is not ours to follow
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and _why(st) is None:
            _verdicts[os.fspath(candidate)] = None
            return candidate
    fresh = tempfile.mkdtemp(prefix="torchada-")  # 0700, ours
    atexit.register(shutil.rmtree, fresh, True)
    _verdicts[fresh] = None
    return Path(fresh)


def private_root() -> Path:
    """A directory of this user's alone, for what must not go where :func:`cache_root` says (an
    entry there that another user could have written): the default cache, ``$TMPDIR`` or a fresh
    temporary directory, as for an untrusted cache.

    Example::

        >>> private_root().is_dir()  # doctest: +SKIP
        True
    """
    configured = configured_root()
    key = os.fspath(configured)
    root = _private_roots.get(key)
    if root is None:
        root = _private_roots[key] = _private_root(configured)
    return root


def trusted(path: Path, *, warn: bool = True) -> bool:
    """Whether ``path`` (a file or directory in the cache, absent counts) and the directories
    between it and :func:`cache_root` hold only what this user or root wrote; a path outside the
    cache is judged with its folder. An untrusted path is named once on the ``torchada`` logger
    (with ``warn``). Directories' verdicts are kept per process.

    Example::

        >>> trusted(cache_root() / "derived")
        True
    """
    # Strings, not Path arithmetic: asked for every file of every cached build at activation.
    root = os.fspath(cache_root())
    target = os.fspath(path)
    if target.startswith(root) and target[len(root) : len(root) + 1] == os.sep:
        chain = []
        here = root
        for part in target[len(root) + 1 :].split(os.sep):
            here = f"{here}{os.sep}{part}"
            chain.append(here)
    elif target == root:
        return True
    else:
        chain = [os.path.dirname(target), target]
    for item in chain:
        why = _verdicts.get(item, _UNKNOWN)
        if why is _UNKNOWN:
            try:
                st = os.stat(item)
            except OSError:
                return True  # absent, and so is all below it
            why = _why(st)
            if stat.S_ISDIR(st.st_mode):
                _verdicts[item] = why
        if why is not None:
            if warn:
                _warn(Path(item), why, "it is left alone and what it holds is made again")
            return False
    return True


def read_trusted(path: Path) -> Optional[bytes]:
    """The bytes of cache file ``path``, or None where it is absent, unreadable or not trusted
    (:func:`trusted`; the file's owner and mode are those of the file opened).

    Example::

        >>> read_trusted(cache_root() / "remembered" / "no-such-fact") is None
        True
    """
    if not trusted(path.parent):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with open(fd, "rb", buffering=0) as f:
        try:
            st = os.fstat(fd)
            why = _why(st)
            if why is not None or not stat.S_ISREG(st.st_mode):
                _warn(path, why or "not a plain file", "it is made again")
                return None
            return f.read()
        except OSError:
            return None


# ---------------------------------------------------------------- writing, privately
def make_dirs(path: Path) -> None:
    """Make directory ``path`` and its missing parents, each readable by this user alone (0700,
    whatever the umask). Raises OSError.

    Example::

        >>> make_dirs(cache_root() / "example")  # doctest: +SKIP
    """
    missing = []
    here = Path(path)
    while not here.is_dir():
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue
        os.chmod(folder, 0o700)  # a umask such as 0277 takes bits away: put them back


def write_atomically(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to ``path`` whole, making its folder (0700): a reader, in this process or
    another, sees the old file or the new one, never part of either. The file is ``mode`` (0600:
    this user's alone), whatever the umask. Raises OSError.

    Example::

        >>> write_atomically(cache_root() / "example" / "value.bin", b"42")  # doctest: +SKIP
    """
    make_dirs(path.parent)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # one per writer: they never share
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, mode)
    except FileExistsError:  # left by a dead process of the same id
        os.unlink(tmp)
        fd = os.open(tmp, flags, mode)
    try:
        with open(fd, "wb") as f:
            os.fchmod(fd, mode)
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------- values as data
_SCALARS = (str, int, float, bool, type(None))


class _Encoder:
    """A value as JSON data. Every container or record is a node, ``[tag, [indexes of the nodes
    among the items], *items]``: tag ``t`` a tuple, ``l`` a list, ``d`` a dict and ``m`` a
    read-only mapping (keys and values alternating), ``module:qualname`` a record (its fields'
    values in order). Among the nodes, an integer is the n-th node completed before (an object
    met twice stays one object, as with pickle) and a string names a module-level singleton of
    torchada's that pickles by name (the tables' ``ABSENT``)."""

    def __init__(self) -> None:
        self.numbers: Dict[int, int] = {}  # id of an object -> its node's number (-1: unfinished)
        self.done: List[Any] = []  # the objects numbered, kept alive while their ids are used

    def encode(self, value: Any) -> Tuple[Any, bool]:
        """``value`` as data, and whether that is a node (to decode) rather than a scalar."""
        kind = type(value)
        if kind in _SCALARS:
            return value, False
        number = self.numbers.get(id(value))
        if number is not None:
            if number < 0:
                raise TypeError("a value that holds itself is not stored as data")
            return number, True
        if kind is tuple or kind is list:
            self.numbers[id(value)] = -1
            tag, items = ("t" if kind is tuple else "l"), [self.encode(v) for v in value]
        elif kind is dict or kind is MappingProxyType:
            self.numbers[id(value)] = -1
            tag, items = ("d" if kind is dict else "m"), []
            for k, v in value.items():
                items.append(self.encode(k))
                items.append(self.encode(v))
        elif getattr(kind, "__record_fields__", None) is not None:
            tag = f"{kind.__module__}:{kind.__qualname__}"
            if records.record_class(tag) is not kind:
                raise TypeError(f"record class {tag} cannot be found by its name")
            self.numbers[id(value)] = -1
            items = [self.encode(getattr(value, f.name)) for f in records.fields(value)]
        else:
            reduce = kind.__reduce__
            name = reduce(value) if reduce is not object.__reduce__ else None
            if isinstance(name, str):
                try:
                    if _singleton(f"{kind.__module__}:{name}") is value:
                        return f"{kind.__module__}:{name}", True
                except ValueError:
                    pass
            raise TypeError(f"a {kind.__name__} is not stored as data")
        self.numbers[id(value)] = len(self.done)
        self.done.append(value)
        return [tag, [i for i, (_, node) in enumerate(items) if node], *(v for v, _ in items)], True


_CONTAINER_TAGS = frozenset("tldm")
_singletons: Dict[str, Any] = {}
_record_fields: Dict[str, Tuple[type, Tuple[str, ...]]] = {}


def _singleton(name: str) -> Any:
    found = _singletons.get(name)
    if found is None:
        module_name, _, attr = name.partition(":")
        module = sys.modules.get(module_name)  # never imported for it
        found = vars(module).get(attr) if module is not None else None
        kind = type(found)
        # Only an instance of a class of torchada's, in the module that defines that class: a
        # function (whose __reduce__ also gives its name) is not data.
        if (
            not module_name.startswith("torchada")
            or kind.__module__ != module_name
            or kind.__reduce__ is object.__reduce__
            or kind.__reduce__(found) != attr
        ):
            raise ValueError(f"{name} is not a singleton stored by name")
        _singletons[name] = found
    return found


def _decode(node: Any, done: List[Any]) -> Any:
    kind = type(node)
    if kind is not list:
        return done[node] if kind is int else _singleton(node)
    tag = node[0]
    items = node[2:]
    for i in node[1]:
        items[i] = _decode(items[i], done)
    # Records first: most nodes of the tables are.
    known = _record_fields.get(tag)
    if known is None and tag not in _CONTAINER_TAGS:
        cls = records.record_class(tag)
        if cls is None:
            raise ValueError(f"no record class {tag}")
        known = _record_fields[tag] = (cls, tuple(f.name for f in records.fields(cls)))
    if known is not None:
        cls, names = known
        if len(names) != len(items):
            raise ValueError(f"{tag} has {len(names)} fields, not {len(items)}")
        # As pickle makes a record: its fields set, nothing of the class run.
        made = object.__new__(cls)
        made.__dict__.update(zip(names, items))
    elif tag == "t":
        made = tuple(items)
    elif tag == "l":
        made = items
    elif tag == "d":
        made = dict(zip(items[::2], items[1::2]))
    else:
        made = MappingProxyType(dict(zip(items[::2], items[1::2])))
    done.append(made)
    return made


def dumps(value: Any, key: str = "") -> bytes:
    """``value`` (scalars, lists, tuples, dicts, read-only mappings, records of
    :mod:`torchada._core.records` and singletons that pickle by name) as JSON that
    :func:`loads` reads back under the same ``key``. Raises TypeError for anything else.

    Example::

        >>> loads(dumps({"a": (1, None)}, "k"), "k")
        {'a': (1, None)}
    """
    encoded, _ = _Encoder().encode(value)
    payload = {"format": _FORMAT, "key": key, "value": encoded}
    return json.dumps(payload, separators=(",", ":"), allow_nan=True).encode()


def loads(data: bytes, key: str = "") -> Any:
    """The value :func:`dumps` stored under ``key``. Nothing the data names is run or imported;
    data of another layout or key raises ValueError.

    Example::

        >>> loads(b'{"format": 2, "key": "k", "value": ["t", [], 1, 2]}', "k")
        (1, 2)
    """
    try:
        payload = json.loads(data)
        if payload["format"] != _FORMAT or payload["key"] != key:
            raise ValueError(f"stored for {payload['key']!r}, format {payload['format']!r}")
        encoded = payload["value"]
        return _decode(encoded, []) if type(encoded) is list else encoded
    except (KeyError, IndexError, TypeError, AttributeError, RecursionError) as exc:
        # Garbled data of the right layout (an index out of range, a number where a node is).
        raise ValueError(f"not a stored value: {type(exc).__name__}: {exc}") from None


# ---------------------------------------------------------------- derived values
def _signature(sources: Sequence[Path]) -> str:
    parts = [repr(sys.version_info[:2])]
    for path in sources:
        st = os.stat(path)
        parts.append(f"{os.fspath(path)}:{st.st_mtime_ns}:{st.st_size}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(type(v) is str for v in value)


# The shapes of the values torchada derives whose callers give none (a stored value of another
# shape is computed again rather than failing its caller). The tables give their own check: this
# module is below them.
_SHAPES: Dict[str, Callable[[str, Any], bool]] = {
    "device-argument-ops": lambda name, value: _strings(value),
    "cuda-shim-": lambda name, value: type(value) is str,
}


def _default_check(name: str) -> Optional[Callable[[Any], bool]]:
    for prefix, shape in _SHAPES.items():
        if name.startswith(prefix):
            return lambda value: shape(name, value)
    return None


def derived(
    name: str,
    sources: Sequence[Path],
    compute: Callable[[], T],
    check: Optional[Callable[[Any], bool]] = None,
) -> T:
    """``compute()``, or the value an earlier process computed from the same ``sources``.

    ``name`` names the value (a file name stem); ``sources`` are every file the value depends
    on, the code that computes it included. ``check`` says whether a stored value has the shape
    ``compute`` gives; one that has not (or cannot be read, or is not trusted) is computed again
    and stored in its place. Values are stored as data (:func:`dumps`), never as code.

    Example::

        >>> from pathlib import Path
        >>> import torchada._core.tables as tables
        >>> here = Path(tables.__file__)
        >>> derived("example", [here], lambda: 42, check=lambda v: type(v) is int)
        42
    """
    try:
        signature = _signature(sources)
    except OSError:
        return compute()
    folder = cache_root() / "derived"
    # Named by the sources' paths too: two checkouts (or installs) keep a value each, and a new
    # version of one replaces only that one's.
    where = hashlib.sha256("\n".join(map(os.fspath, sources)).encode()).hexdigest()[:8]
    stem = f"{name}-{where}"
    path = folder / f"{stem}-{signature}.json"
    key = f"{name}:{signature}"
    data = read_trusted(path)
    if data is not None:
        try:
            value = loads(data, key)
            check = check or _default_check(name)
            if check is None or check(value):
                return value
            logger.debug("torchada: cached %s has another shape; computed again", path)
        except Exception as exc:  # cut short, garbled, another layout: computed again
            logger.debug("torchada: cached %s unreadable (%s); computed again", path, exc)
    value = compute()
    if not trusted(folder, warn=False):  # said when read; kept in memory by the caller
        return value
    try:
        stored = dumps(value, key)
        for old in folder.glob(f"{stem}-*"):  # values of earlier versions of the sources
            # This name's (not a longer name's), as data or as the pickle of older torchadas.
            if len(old.name) in (len(path.name), len(path.name) + 2) and old != path:
                old.unlink(missing_ok=True)
        write_atomically(path, stored)
    except (OSError, TypeError, ValueError) as exc:
        logger.debug("torchada: cannot cache %s (%s)", path, exc)
    return value


# ---------------------------------------------------------------- remembered facts
def recall(name: str) -> Optional[str]:
    """The text :func:`remember` last kept under ``name`` in any process, or None. A fact about
    a process (where a loaded library lives) that is cheap to check and dear to find: the caller
    checks it before use, and finds it again where it no longer holds.

    Example::

        >>> remember("example-fact", "42")
        >>> recall("example-fact")
        '42'
    """
    data = read_trusted(cache_root() / "remembered" / name)
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def remember(name: str, text: str) -> None:
    """Keep ``text`` under ``name`` for :func:`recall` (replaced whole, so a reader never sees
    half of it); a cache that cannot be written only costs finding the fact again.

    Example::

        >>> remember("example-fact", "42")
    """
    path = cache_root() / "remembered" / name
    try:
        if trusted(path.parent, warn=False):
            write_atomically(path, text.encode("utf-8"))
    except OSError as exc:
        logger.debug("torchada: cannot remember %s in %s (%s)", name, path, exc)
