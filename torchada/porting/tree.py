"""Porting a whole source tree into an output directory (or, on request, in place).

Safety rules, checked before anything is written:

* ``out`` may not be the source directory nor contain it (writing there could overwrite
  sources); it may live inside the source tree, in which case it is skipped by the walk.
* A symlink inside the source tree that points outside it is refused. Symlinked files inside the
  tree are ported as regular files; symlinked directories are skipped (their contents are reached
  through the real path).
* Every destination must resolve inside ``out``; an existing symlink at a destination is refused.
* In place, a symlinked file is refused (renaming or rewriting its target would leave it dangling
  or turn it into a copy).
* Two sources that would land on one destination (``k.cu`` and ``k.mu``) are refused.

Hand-written MUSA sources (``.mu``/``.muh``) and everything that is not C/C++/CUDA source are
copied byte for byte. Binary and non-UTF-8 files are copied byte for byte and noted.

Incremental: a manifest in ``out`` records each source's content hash; an unchanged source whose
output is still as written is not ported again, and an output whose content would not change is
never rewritten, so its mtime (and the build that depends on it) stays put.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Set, Tuple, Union

from ._engine import MUSA_SUFFIXES, SOURCE_SUFFIXES, Translator, get_translator
from .project import ProjectRenames, collect_project_names
from .report import (
    STATUS_BINARY,
    STATUS_CACHED,
    STATUS_COPIED,
    STATUS_MUSA,
    STATUS_REMOVED,
    STATUS_UNDECODABLE,
    FileReport,
    TreeReport,
)

logger = logging.getLogger("torchada.porting")

PathLike = Union[str, "os.PathLike[str]"]

# What the project renaming reads: the ported sources and the hand-written MUSA ones.
_PROJECT_SUFFIXES = SOURCE_SUFFIXES | frozenset(MUSA_SUFFIXES)
#: With ``rename_cu``: the MUSA build compiles only .mu with its device compiler.
CU_RENAMES = {".cu": ".mu", ".cuh": ".muh"}
#: Directories never walked (version control, caches).
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache"})
MANIFEST_NAME = ".torchada-port.json"
_MANIFEST_VERSION = 1
_BINARY_SNIFF = 8192

#: Called for every ported text file whose output differs from its source.
OnPorted = Callable[[FileReport, str, str], None]


class PortError(Exception):
    """Porting a tree could not proceed.

    The base class of what :func:`port_tree` raises deliberately (see :class:`PortPathError`);
    ``python -m torchada port`` reports it as an error message.

    Example::

        >>> from torchada.porting import PortError, port_tree
        >>> try:
        ...     port_tree("no/such/dir", "out")
        ... except PortError as err:
        ...     print(err)
        source 'no/such/dir' does not exist
    """


class PortPathError(PortError, ValueError):
    """A source or output path is unusable or unsafe; the message names the path.

    Raised by :func:`port_tree` before anything is written: no ``out`` (without ``in_place`` or
    ``dry_run``), an ``out`` that is or contains the source, a symlink leaving the source tree,
    two sources landing on one output, porting in place through symlinks. Also a ValueError.

    Example::

        >>> from torchada.porting import PortPathError, port_tree
        >>> try:
        ...     port_tree(".")  # neither out nor in_place=True
        ... except PortPathError as err:
        ...     print(err)  # doctest: +ELLIPSIS
        no output directory given for '.'; pass out=... (or in_place=True ...)
    """


class PortSourceNotFoundError(FileNotFoundError, PortPathError):
    """The source does not exist: a FileNotFoundError, as reading it would raise, so callers'
    ``except OSError`` still applies (and a PortPathError, as before).

    Raised by :func:`port_tree` when ``src`` does not exist; ``filename`` is the path as given.

    Example::

        >>> from torchada.porting import PortSourceNotFoundError, port_tree
        >>> try:
        ...     port_tree("no/such/dir", "out")
        ... except FileNotFoundError as err:
        ...     print(type(err).__name__, err.filename)
        PortSourceNotFoundError no/such/dir
    """

    def __init__(self, path: PathLike) -> None:
        super().__init__(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))

    def __str__(self) -> str:
        return f"source {self.filename!r} does not exist"


@dataclass
class _Item:
    source: Path  # absolute path in the source tree (may be a symlink inside the tree)
    rel: str  # POSIX path relative to the source root
    dest_rel: str  # POSIX path relative to the output root


def port_tree(
    src: PathLike,
    out: Optional[PathLike] = None,
    *,
    in_place: bool = False,
    rename_cu: bool = True,
    rewrite_comments: bool = False,
    dry_run: bool = False,
    on_ported: Optional[OnPorted] = None,
    rename_project: bool = False,
) -> TreeReport:
    """Port every C/C++/CUDA source under ``src`` into ``out``; returns a :class:`TreeReport`.

    ``src`` may also be a single file. ``in_place=True`` rewrites the sources themselves (and,
    with ``rename_cu``, renames ``.cu``/``.cuh`` to ``.mu``/``.muh``); without it ``out`` is
    required and is the only place written to. ``dry_run=True`` computes everything and writes
    nothing (``out`` may then be omitted). ``on_ported(report, old, new)`` sees each change.
    ``rename_project=True`` (opt-in) also renames the tree's own CUDA-named identifiers, files and
    folders consistently in every file (``WITH_CUDA`` -> ``WITH_MUSA``, ``cuda/add_cuda.cu`` ->
    ``musa/add_musa.mu``; see :mod:`torchada.porting.project`); the report's notes say what the
    build must follow.

    Incremental: a manifest in ``out`` lets an unchanged source skip porting (status
    ``cached``), an output is rewritten only when its content changes, and the outputs it wrote
    for sources that are gone are removed. ``.mu``/``.muh`` files and files that are not
    C/C++/CUDA source are copied unchanged.

    Raises :class:`PortSourceNotFoundError` (a FileNotFoundError and a PortPathError) for a
    missing source, :class:`PortPathError` for an unsafe ``out``, an escaping symlink or two
    sources with one destination; both before anything is written.

    Example::

        >>> from torchada.porting import port_tree
        >>> report = port_tree("csrc", "csrc_musa")  # doctest: +SKIP
        >>> report.written  # doctest: +SKIP
        ['kernels.mu', 'ops.cpp']
        >>> preview = port_tree("csrc", dry_run=True)  # writes nothing  # doctest: +SKIP
        >>> print(preview.format_table())  # doctest: +SKIP
    """
    src_path = Path(src)
    if not src_path.exists():
        raise PortSourceNotFoundError(src)
    src_abs = src_path.resolve()
    single_file = src_abs.is_file()
    root = src_abs.parent if single_file else src_abs
    out_root = _check_out(src, out, root, in_place=in_place, dry_run=dry_run)
    translator = get_translator(rename_cu, rewrite_comments)

    if single_file:
        items = [_Item(src_abs, src_abs.name, _dest_name(src_abs.name, rename_cu))]
        notes: List[str] = []
    else:
        items, notes = _plan(root, out_root if not in_place else None, rename_cu)
    project: Optional[ProjectRenames] = None
    if rename_project:
        sources = [i.rel for i in items if os.path.splitext(i.rel)[1].lower() in _PROJECT_SUFFIXES]
        project = collect_project_names(root, sources)
        for item in items:
            moved = project.paths.get(item.rel)
            if moved is not None:
                item.dest_rel = _dest_name(moved, rename_cu)
        notes = notes + project.notes
    fingerprint = _fingerprint(
        translator.ruleset.digest,
        rename_cu,
        rewrite_comments,
        project.digest() if project is not None else "",
    )
    _check_collisions(items, in_place)
    if in_place:
        _check_no_file_links([src_path] if single_file else [item.source for item in items])

    report = TreeReport(source=str(src), output=str(out if out is not None else src))
    report.notes.extend(notes)
    manifest_path = None
    old_manifest: Dict[str, dict] = {}
    if out_root is not None and not in_place:
        manifest_path = out_root / MANIFEST_NAME
        old_manifest = _load_manifest(manifest_path, fingerprint)
    new_manifest: Dict[str, dict] = {}
    source_paths: Set[Path] = {item.source for item in items}
    writer = _Writer(out_root, source_paths, in_place=in_place, dry_run=dry_run)
    dests = [writer.dest(item) for item in items]  # every path is vetted before any write

    for item, dest in zip(items, dests):
        data = item.source.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        cached = old_manifest.get(item.rel)
        reused = _reuse(cached, digest, item.dest_rel, dest)
        if reused is not None:
            report.files.append(reused)
            new_manifest[item.rel] = cached  # type: ignore[assignment]
            continue
        file_report, output = _port_bytes(item, data, translator, on_ported, project)
        report.files.append(file_report)
        if writer.write(item, dest, output):
            report.written.append(item.dest_rel)
        if in_place and item.dest_rel != item.rel and not dry_run:
            item.source.unlink()  # the renamed copy replaces it
        if dest is not None:
            new_manifest[item.rel] = {
                "sha256": digest,
                "out": item.dest_rel,
                "stat": _stat_key(dest),
                "report": file_report.to_dict(),
            }

    if manifest_path is not None and not single_file:
        _remove_stale(old_manifest, new_manifest, out_root, report, dry_run)  # type: ignore[arg-type]
    if manifest_path is not None and not dry_run:
        _save_manifest(manifest_path, fingerprint, new_manifest, old_manifest, single_file)
    logger.info(
        "ported %s -> %s: %d files, %d written",
        src,
        report.output,
        len(report.files),
        len(report.written),
    )
    return report


# ---------------------------------------------------------------------- planning and checks
def _check_out(
    src: PathLike, out: Optional[PathLike], root: Path, *, in_place: bool, dry_run: bool
) -> Optional[Path]:
    if in_place:
        if out is not None and Path(out).resolve() != root:
            raise PortPathError(
                f"in_place=True ports {str(src)!r} itself; do not also pass out={str(out)!r}"
            )
        return root
    if out is None:
        if dry_run:
            return None
        raise PortPathError(
            f"no output directory given for {str(src)!r}; pass out=... (or in_place=True to "
            "rewrite the sources themselves)"
        )
    out_abs = Path(out).resolve()
    if out_abs == root:
        raise PortPathError(
            f"output {str(out)!r} is the source directory; choose another directory or pass "
            "in_place=True"
        )
    if out_abs in root.parents:
        raise PortPathError(
            f"output {str(out)!r} contains the source {str(src)!r}; writing there could "
            "overwrite sources"
        )
    if out_abs.exists() and not out_abs.is_dir():
        raise PortPathError(f"output {str(out)!r} exists and is not a directory")
    return out_abs


def _dest_name(rel: str, rename_cu: bool) -> str:
    if rename_cu:
        stem, dot, suffix = rel.rpartition(".")
        new = CU_RENAMES.get("." + suffix.lower()) if dot else None
        if new is not None:
            return stem + new
    return rel


def _plan(root: Path, skip: Optional[Path], rename_cu: bool) -> Tuple[List[_Item], List[str]]:
    items: List[_Item] = []
    notes: List[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        kept = []
        for name in sorted(dirnames):
            path = here / name
            if name in SKIP_DIRS or (skip is not None and path == skip):
                continue
            if path.is_symlink():
                target = _inside(path, root)
                notes.append(
                    f"skipped symlinked directory {path.relative_to(root).as_posix()} "
                    f"(-> {target.relative_to(root).as_posix()}, reached through its real path)"
                )
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            path = here / name
            rel = path.relative_to(root).as_posix()
            if rel == MANIFEST_NAME:
                continue
            if path.is_symlink():
                target = _inside(path, root)
                if not target.is_file():
                    notes.append(f"skipped {rel}: symlink to something that is not a file")
                    continue
            elif not path.is_file():
                notes.append(f"skipped {rel}: not a regular file")
                continue
            items.append(_Item(path, rel, _dest_name(rel, rename_cu)))
    return items, notes


def _inside(link: Path, root: Path) -> Path:
    """The resolved target of ``link``; refuses one that leaves ``root``."""
    target = link.resolve()
    if target != root and root not in target.parents:
        raise PortPathError(
            f"symlink {str(link)!r} points outside the source tree ({str(target)!r}); refusing "
            "to follow it"
        )
    return target


def _check_collisions(items: List[_Item], in_place: bool) -> None:
    by_dest: Dict[str, str] = {}
    for item in items:
        other = by_dest.get(item.dest_rel)
        if other is not None:
            raise PortPathError(
                f"{other!r} and {item.rel!r} would both be written to {item.dest_rel!r}"
            )
        by_dest[item.dest_rel] = item.rel
    if in_place:
        sources = {item.rel for item in items}
        for item in items:
            if item.dest_rel != item.rel and item.dest_rel in sources:
                raise PortPathError(
                    f"renaming {item.rel!r} to {item.dest_rel!r} would overwrite an existing file"
                )


def _check_no_file_links(paths: List[Path]) -> None:
    links = [path for path in paths if path.is_symlink()]
    if links:
        named = ", ".join(f"{str(link)!r} -> {os.readlink(link)!r}" for link in links[:5])
        more = f" and {len(links) - 5} more" if len(links) > 5 else ""
        raise PortPathError(
            f"cannot port in place through symlinks: {named}{more}; replace each link by a copy "
            "of its target or remove it, or port into another directory with --out DIR "
            "(nothing was changed)"
        )


# ---------------------------------------------------------------------- porting one file
def _port_bytes(
    item: _Item,
    data: bytes,
    translator: Translator,
    on_ported: Optional[OnPorted],
    project: Optional[ProjectRenames] = None,
) -> Tuple[FileReport, bytes]:
    suffix = os.path.splitext(item.rel)[1].lower()
    report = FileReport(path=item.rel, output_path=item.dest_rel)
    if suffix in MUSA_SUFFIXES:
        report.status = STATUS_MUSA
        report.notes.append("hand-written MUSA source: copied unchanged")
        return report, data
    if suffix not in SOURCE_SUFFIXES:
        report.status = STATUS_COPIED
        return report, data
    if b"\0" in data[:_BINARY_SNIFF]:
        report.status = STATUS_BINARY
        report.notes.append("looks binary (NUL bytes): copied unchanged")
        return report, data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.status = STATUS_UNDECODABLE
        report.notes.append(f"not valid UTF-8 ({exc.reason} at byte {exc.start}): copied unchanged")
        return report, data
    ported, file_report = translator.port(text, filename=item.rel, project=project)
    file_report.output_path = item.dest_rel
    if ported != text and on_ported is not None:
        on_ported(file_report, text, ported)
    logger.debug(
        "%s: %s, %d translations", item.rel, file_report.status, file_report.translation_count
    )
    return file_report, ported.encode("utf-8") if ported is not text else data


class _Writer:
    """Writes outputs, refusing anything that would land outside the output root."""

    def __init__(
        self, out_root: Optional[Path], sources: Set[Path], *, in_place: bool, dry_run: bool
    ) -> None:
        self.out_root = out_root
        self.sources = sources
        self.in_place = in_place
        self.dry_run = dry_run
        self._vetted: Set[Path] = set()  # parent directories already checked

    def dest(self, item: _Item) -> Optional[Path]:
        if self.out_root is None:
            return None
        dest = self.out_root / item.dest_rel
        if dest.is_symlink():
            raise PortPathError(f"destination {str(dest)!r} is a symlink; refusing to write it")
        if dest.parent not in self._vetted:
            # The parent may not exist yet: check the deepest existing ancestor resolves inside.
            probe = dest.parent
            while not probe.exists() and probe != self.out_root:
                probe = probe.parent
            real = probe.resolve()
            if real != self.out_root and self.out_root not in real.parents:
                raise PortPathError(
                    f"destination {str(dest)!r} resolves outside the output directory "
                    f"({str(real)!r}); refusing to write"
                )
            self._vetted.add(dest.parent)
        if not self.in_place and dest in self.sources:
            raise PortPathError(f"destination {str(dest)!r} is a source file; refusing to write")
        return dest

    def write(self, item: _Item, dest: Optional[Path], data: bytes) -> bool:
        """Write ``data`` to ``dest`` unless it already holds exactly that; True if written."""
        if dest is None:
            return False
        try:
            if dest.stat().st_size == len(data) and dest.read_bytes() == data:
                return False
            exists = True
        except FileNotFoundError:
            exists = False
        if self.dry_run:
            return True
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not exists:
            # A new file needs no atomic swap: if this is interrupted, the manifest has no entry
            # for it and the next run rewrites it.
            with open(dest, "xb") as fh:
                fh.write(data)
            _copy_mode(item.source, dest)
            return True
        # Replacing an output: write aside and swap, so a build never sees half a file.
        fd, tmp = tempfile.mkstemp(prefix=".torchada-", dir=str(dest.parent))
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            _copy_mode(item.source, Path(tmp))
            os.replace(tmp, dest)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return True


def _copy_mode(source: Path, target: Path) -> None:
    try:
        shutil.copymode(str(source), str(target))
    except OSError:
        pass  # permissions are a nicety; the content is what matters


# ---------------------------------------------------------------------- manifest
def _fingerprint(
    rules_digest: str, rename_cu: bool, rewrite_comments: bool, project_digest: str = ""
) -> str:
    # The project renaming depends on the whole tree: a new name anywhere ports everything again.
    key = f"{_MANIFEST_VERSION}:{rules_digest}:{int(rename_cu)}:{int(rewrite_comments)}"
    if project_digest:
        key += f":{project_digest}"
    return hashlib.sha256(key.encode()).hexdigest()


def _stat_key(path: Path) -> Optional[List[int]]:
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _reuse(
    cached: Optional[dict], digest: str, dest_rel: str, dest: Optional[Path]
) -> Optional[FileReport]:
    """The recorded report if the source is unchanged and its output still as written."""
    if not isinstance(cached, dict) or dest is None:
        return None
    if cached.get("sha256") != digest or cached.get("out") != dest_rel:
        return None
    if _stat_key(dest) != cached.get("stat"):
        return None  # output edited or deleted since: port again
    try:
        file_report = FileReport.from_dict(cached["report"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # a damaged manifest only costs a re-port
    file_report.status = STATUS_CACHED
    return file_report


def _load_manifest(path: Path, fingerprint: str) -> Dict[str, dict]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("fingerprint") != fingerprint:
        return {}  # other rules or options: everything is ported again
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _save_manifest(
    path: Path,
    fingerprint: str,
    files: Dict[str, dict],
    previous: Dict[str, dict],
    single_file: bool,
) -> None:
    if single_file:
        # A single-file run knows nothing about the other entries: keep them.
        merged = dict(previous)
        merged.update(files)
        files = merged
    if files == previous and path.exists():
        return  # nothing changed: leave the manifest (and its mtime) alone
    payload = {"version": _MANIFEST_VERSION, "fingerprint": fingerprint, "files": files}
    # Compact, so json uses its C encoder (the manifest holds every file's report).
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, path)


def _remove_stale(
    old: Dict[str, dict], new: Dict[str, dict], out_root: Path, report: TreeReport, dry_run: bool
) -> None:
    """Delete outputs this porter wrote earlier whose source has gone away."""
    still = {entry["out"] for entry in new.values()}
    for rel, entry in sorted(old.items()):
        if rel in new or entry.get("out") in still:
            continue
        out_rel = entry.get("out")
        if not isinstance(out_rel, str) or not out_rel:
            continue
        dest = out_root / out_rel
        real = dest.resolve()
        if real == out_root or out_root not in real.parents:
            continue  # never delete outside the output directory, whatever the manifest says
        if dest.is_file() and not dest.is_symlink() and _stat_key(dest) == entry.get("stat"):
            if not dry_run:
                dest.unlink()
            report.files.append(
                FileReport(
                    path=rel,
                    output_path=entry["out"],
                    status=STATUS_REMOVED,
                    notes=["source no longer exists: removed its stale output"],
                )
            )
