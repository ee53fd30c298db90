"""torchada's cache directory, and values derived from the package's data files, kept there
between processes the way Python keeps bytecode: activation reads each table as one pickle
instead of parsing and checking its JSON again (the JSON stays the one source of truth).

A cached value is keyed by the path, modification time and size of every file it was derived
from (and by Python's version), so an edited table is read again; a cache that cannot be read or
written only costs the time to compute the value.
"""

from __future__ import annotations

import copyreg
import hashlib
import io
import logging
import os
import pickle
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Sequence, TypeVar

logger = logging.getLogger("torchada")

T = TypeVar("T")


def cache_root() -> Path:
    """Where torchada caches what it builds: ``TORCHADA_CACHE_DIR``, else ``~/.cache/torchada``
    (under ``XDG_CACHE_HOME`` where that is set).

    Example::

        >>> cache_root(  # doctest: +SKIP
        ... )
        PosixPath('/home/me/.cache/torchada')
    """
    env = os.environ.get("TORCHADA_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchada"


def _mapping_proxy(items: dict) -> MappingProxyType:
    return MappingProxyType(items)


class _Pickler(pickle.Pickler):
    # The tables hand out read-only mappings, which pickle cannot write by itself; this is
    # private to our pickler, so nobody else's pickles change.
    dispatch_table = {
        **copyreg.dispatch_table,
        MappingProxyType: lambda m: (_mapping_proxy, (dict(m),)),
    }


def _signature(sources: Sequence[Path]) -> str:
    parts = [repr(sys.version_info[:2])]
    for path in sources:
        st = os.stat(path)
        parts.append(f"{os.fspath(path)}:{st.st_mtime_ns}:{st.st_size}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole, making its folder: a reader, in this process or another,
    sees the old file or the new one, never part of either. Raises OSError.

    Example::

        >>> write_atomically(cache_root() / "example" / "value.bin", b"42")  # doctest: +SKIP
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # one per writer: they never share
    tmp.write_bytes(data)
    os.replace(tmp, path)


def derived(name: str, sources: Sequence[Path], compute: Callable[[], T]) -> T:
    """``compute()``, or the value an earlier process computed from the same ``sources``.

    ``name`` names the value (a file name stem); ``sources`` are every file the value depends
    on, the code that computes it included.

    Example::

        >>> from pathlib import Path
        >>> import torchada._core.tables as tables
        >>> here = Path(tables.__file__)
        >>> derived("example", [here], lambda: 42)
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
    path = folder / f"{stem}-{signature}.pickle"
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except FileNotFoundError:
        pass
    except Exception as exc:  # written by another torchada, cut short, ...: computed again
        logger.debug("torchada: cached %s unreadable (%s); computed again", path, exc)
    value = compute()
    try:
        buf = io.BytesIO()
        _Pickler(buf, protocol=4).dump(value)
        for old in folder.glob(f"{stem}-*.pickle"):  # values of earlier versions of the sources
            if len(old.name) == len(path.name):  # this name's, not a longer name's
                old.unlink(missing_ok=True)
        write_atomically(path, buf.getvalue())
    except (OSError, pickle.PicklingError) as exc:
        logger.debug("torchada: cannot cache %s (%s)", path, exc)
    return value


def recall(name: str) -> str | None:
    """The text :func:`remember` last kept under ``name`` in any process, or None. A fact about
    a process (where a loaded library lives) that is cheap to check and dear to find: the caller
    checks it before use, and finds it again where it no longer holds.

    Example::

        >>> remember("example-fact", "42")
        >>> recall("example-fact")
        '42'
    """
    try:
        return (cache_root() / "remembered" / name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def remember(name: str, text: str) -> None:
    """Keep ``text`` under ``name`` for :func:`recall` (replaced whole, so a reader never sees
    half of it); a cache that cannot be written only costs finding the fact again.

    Example::

        >>> remember("example-fact", "42")
    """
    path = cache_root() / "remembered" / name
    try:
        write_atomically(path, text.encode("utf-8"))
    except OSError as exc:
        logger.debug("torchada: cannot remember %s in %s (%s)", name, path, exc)
