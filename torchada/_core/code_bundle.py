"""torchada's own modules served from one cached file while torchada activates.

Importing a module costs 100-200 µs before its code runs: every finder on ``sys.meta_path`` is
asked, and the bytecode file is found, opened, read and checked. Activation imports about 45 of
torchada's modules, so that was a third of its time. While :func:`serving` is in effect, a finder
placed first on ``sys.meta_path`` serves them from one file in torchada's cache that holds each
module's code with the modification time and size of its source, checked the way Python checks
bytecode. A module whose source changed, or one the file lacks, is imported the normal way, and the
file is written again afterwards (where Python writes bytecode: not under
``PYTHONDONTWRITEBYTECODE`` or ``-B``). A module is served only from the folder a normal import
would find it in, its parent package's ``__path__``; its ``__file__``, ``__spec__`` and source
(``inspect.getsource``, tracebacks) are those of the normal import.

The file holds code that is run, so it is read only where torchada's cache trusts it (owned by this
user or root, writable by no one else: torchada._core.cache.read_trusted); elsewhere the modules
are imported the normal way.
"""

from __future__ import annotations

import _imp
import contextlib
import hashlib
import importlib.machinery
import importlib.util
import logging
import marshal
import os
import sys
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from .cache import cache_root, read_trusted, trusted, write_atomically

logger = logging.getLogger("torchada")

#: A module in the file: (source path, its st_mtime_ns, its st_size, is a package, marshalled code)
Entry = Tuple[str, int, int, bool, bytes]

_FORMAT = 1  # the layout of the file; a file of another layout is ignored and written again


class _BundledLoader(importlib.machinery.SourceFileLoader):
    """The normal loader of a source file, whose first ``get_code`` is the bundled code."""

    def __init__(self, fullname: str, path: str, code: bytes) -> None:
        super().__init__(fullname, path)
        self._bundled: Optional[bytes] = code

    def get_code(self, fullname: str) -> CodeType:  # type: ignore[override]
        code, self._bundled = self._bundled, None
        if code is not None and fullname == self.name:
            bundled = marshal.loads(code)
            # As importlib does for bytecode: the code names the file it is loaded from.
            _imp._fix_co_filename(bundled, self.path)
            return bundled
        return super().get_code(fullname)


class _BundleFinder:
    """Finds the bundled modules whose sources are unchanged, where a normal import finds them."""

    def __init__(self, entries: Dict[str, Entry], roots: Tuple[str, ...]) -> None:
        self.entries = entries
        self.roots = roots
        # Names of these packages asked for and not served: the normal import may find them.
        self.missed: List[str] = []

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Any = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        spec = self._find(fullname, path)
        if spec is None and fullname.startswith(self.roots):
            self.missed.append(fullname)
        return spec

    def _find(
        self, fullname: str, path: Optional[Sequence[str]]
    ) -> Optional[importlib.machinery.ModuleSpec]:
        entry = self.entries.get(fullname)
        if entry is None or path is None:  # top-level modules are left to the normal import
            return None
        file, mtime_ns, size, is_package, code = entry
        folder = os.path.dirname(file)
        if (os.path.dirname(folder) if is_package else folder) not in path:
            return None
        try:
            st = os.stat(file)
        except OSError:
            return None
        if st.st_mtime_ns != mtime_ns or st.st_size != size:
            return None
        return importlib.util.spec_from_file_location(
            fullname,
            file,
            loader=_BundledLoader(fullname, file, code),
            submodule_search_locations=[folder] if is_package else None,
        )


def bundle_path(name: str, packages: Sequence[ModuleType]) -> str:
    """The cache file of bundle ``name`` for these packages: one per place they are installed
    in (two checkouts keep one each) and per Python (bytecode differs between versions)."""
    where = "\n".join(p for package in packages for p in getattr(package, "__path__", ()))
    digest = hashlib.sha256(where.encode()).hexdigest()[:12]
    tag = sys.implementation.cache_tag or "python"
    return os.path.join(cache_root(), "bundles", f"{name}-{digest}.{tag}.marshal")


def _read(path: str) -> Dict[str, Entry]:
    # Marshalled code is run: read only where no other user could have written it (torchada's
    # cache checks owner and mode), else the modules are imported the normal way.
    raw = read_trusted(Path(path))
    if raw is None:
        return {}
    try:
        # One read: marshal.load on a file reads it object by object, several times slower.
        data = marshal.loads(raw)
        if isinstance(data, tuple) and len(data) == 2 and data[0] == _FORMAT:
            entries = data[1]
            if isinstance(entries, dict) and all(map(_well_formed, entries.values())):
                return entries
            logger.debug("torchada: module bundle %s holds another layout; written again", path)
    except Exception as exc:  # cut short, or written by another layout: written again
        logger.debug("torchada: module bundle %s unreadable (%s); imported normally", path, exc)
    return {}


def _well_formed(entry: Any) -> bool:
    return (
        type(entry) is tuple
        and len(entry) == 5
        and type(entry[0]) is str
        and type(entry[1]) is int
        and type(entry[2]) is int
        and type(entry[3]) is bool
        and type(entry[4]) is bytes
    )


def _entry(module: ModuleType) -> Optional[Entry]:
    """The entry of a module just imported from its source's folder, or None for any other."""
    spec = getattr(module, "__spec__", None)
    loader = getattr(spec, "loader", None)
    file = getattr(spec, "origin", None)
    if not isinstance(loader, importlib.machinery.SourceFileLoader) or not file:
        return None
    try:
        code = loader.get_code(module.__name__)  # its bytecode file, just written or read
        st = os.stat(file)
    except (ImportError, OSError, SyntaxError):
        return None
    if code is None:
        return None
    return (
        file,
        st.st_mtime_ns,
        st.st_size,
        spec.submodule_search_locations is not None,
        marshal.dumps(code),
    )


def _write(path: str, entries: Dict[str, Entry]) -> None:
    if not trusted(Path(path).parent, warn=False):  # it would not be read (said when reading)
        return
    try:
        write_atomically(Path(path), marshal.dumps((_FORMAT, entries)))
    except OSError as exc:
        logger.debug("torchada: cannot write module bundle %s (%s)", path, exc)


@contextlib.contextmanager
def serving(name: str, packages: Sequence[ModuleType]) -> Iterator[None]:
    """While in effect, submodules of ``packages`` come from bundle ``name`` where it holds them
    unchanged; afterwards the bundle is written again if a module of these packages was imported
    the normal way in the meantime.

    Example::

        >>> import torchada, torchada_hooks
        >>> with serving("activation", [torchada, torchada_hooks]):  # doctest: +SKIP
        ...     import torchada._cuda.redirect
    """
    path = bundle_path(name, packages)
    finder = _BundleFinder(_read(path), tuple(f"{package.__name__}." for package in packages))
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)
        if not sys.dont_write_bytecode:
            _update(path, finder)


def _update(path: str, finder: _BundleFinder) -> None:
    # Only the names the finder was asked for and did not serve: a scan of sys.modules (over a
    # thousand entries after `import torch`) cost more than the rest of this.
    entries = {}
    for name in finder.missed:
        module = sys.modules.get(name)
        if module is None:
            continue
        entry = _entry(module)
        if entry is not None:
            entries[module.__name__] = entry
    if not entries:
        return
    # Modules of the file not imported this time (a subsystem switched off) are kept, while
    # their source still exists.
    kept = {name: e for name, e in finder.entries.items() if os.path.exists(e[0])}
    _write(path, {**kept, **entries})
