"""Porting a CUDA extension's sources into its build tree, never in place.

The sources and every project header they include (found through the include directories that
are not torch's, torch_musa's, Python's or a toolkit's) go through :mod:`torchada.porting` into
``<out>``, mirroring their layout below their common root so relative includes still resolve;
include directories inside the project point at their ported copies. The porter's report of each
build is kept (:func:`port_report`) and written beside the ported copies.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from torch_musa.utils import musa_extension as _me

from .._core.warn import warn_once
from .._native.build import torch_cpp_extension
from . import stable_kit

if TYPE_CHECKING:
    from ..porting.report import FileReport, TreeReport
# The porter itself is imported on first use: enabling torchada should not pay for it.

logger = logging.getLogger("torchada")

_torch_cpp = torch_cpp_extension()

#: Ported copies live in this directory under the build directory.
PORTED_DIR = "torchada_ported"
REPORT_NAME = "torchada-port-report"

_reports: Dict[str, TreeReport] = {}


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\r\n]+)[>"]', re.MULTILINE)
# Ported code that calls the MUSA runtime needs libmusart at link time.
_RUNTIME_USE = re.compile(
    r"\b(?:musa[A-Z]\w*\s*\(|C10_MUSA_CHECK|AT_MUSA_CHECK|C10_MUSA_KERNEL_LAUNCH_CHECK"
    r"|C10_MUSA_IGNORE_ERROR)"
)


@dataclass
class PortedBuild:
    """What a build compiles after porting: the ported sources, the include directories (project
    ones mapped to their ported copies) and the porter's report."""

    sources: List[str]
    include_dirs: List[str]
    report: TreeReport
    texts: List[str] = field(default_factory=list)  # ported inline sources

    def needs_runtime(self, out: Path) -> bool:
        """Whether the ported code (written under ``out``) calls the MUSA runtime."""
        if any(_RUNTIME_USE.search(t) for t in self.texts):
            return True
        for file_report in self.report.files:
            if file_report.output_path and not file_report.output_path.startswith("<"):
                try:
                    text = (out / file_report.output_path).read_text("utf-8", errors="replace")
                except OSError:
                    continue
                if _RUNTIME_USE.search(text):
                    return True
        return False


def inside(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _system_dirs() -> List[str]:
    """Directories whose headers are never ported: torch's, torch_musa's, Python's, toolkits,
    torchada's stable-ABI kit."""
    dirs = set(_torch_cpp.include_paths()) | set(_me.include_paths(musa=True))
    paths = sysconfig.get_paths()
    dirs.update(paths.get(key, "") for key in ("include", "platinclude", "stdlib", "purelib"))
    dirs.update({sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/opt"})
    dirs.update(h for h in (_me.MUSA_HOME, _me.MUDNN_HOME, _torch_cpp.CUDA_HOME) if h)
    # The stable-ABI kit's headers are MUSA-ready already and defer to torch's by include path.
    dirs.add(stable_kit.include_dir())
    return sorted(os.path.abspath(d) for d in dirs if d)


def _collect(
    sources: Sequence[str],
    include_dirs: Sequence[str],
    base_root: Optional[str],
    texts: Sequence[str],
    out: str,
) -> Tuple[List[str], List[str]]:
    """The files to port (the sources, then every project file they include) and the project's
    include directories (those inside ``base_root`` or outside every system directory). Files in
    ``out`` are ported copies already: never ported again."""
    system = _system_dirs()

    def is_system(path: str) -> bool:
        if base_root is not None and inside(path, base_root):
            return False
        return any(inside(path, s) for s in system)

    project_dirs = [d for d in include_dirs if not is_system(d)]
    files: Dict[str, None] = dict.fromkeys(sources)
    queue = list(sources)

    def scan(text: str, here: Optional[str]) -> None:
        for delimiter, target in _INCLUDE.findall(text):
            target = target.strip()
            bases = ([here] if delimiter == '"' and here else []) + project_dirs
            for base in bases:
                candidate = os.path.normpath(os.path.join(base, target))
                if os.path.isfile(candidate):
                    if candidate not in files and not (
                        is_system(candidate) or inside(candidate, out)
                    ):
                        files[candidate] = None
                        queue.append(candidate)
                    break

    for text in texts:
        scan(text, None)
    while queue:
        path = queue.pop()
        try:
            text = Path(path).read_text("utf-8", errors="replace")
        except OSError:
            continue
        scan(text, os.path.dirname(path))
    return list(files), project_dirs


def port_build(
    name: str,
    sources: Sequence[str],
    include_dirs: Sequence[str],
    out: Path,
    base_root: Optional[str],
    texts: Sequence[str] = (),
) -> PortedBuild:
    """Port ``sources`` and the project headers they reach into ``out``, mirroring their layout
    below the common root, so relative includes still resolve. Incremental: unchanged files are
    neither ported nor written again."""
    from ..porting import TreeReport, port_tree

    sources = [os.path.abspath(s) for s in sources]
    for source in sources:
        if os.path.isdir(source):
            # What torch's own build raises opening it; porting it would walk the whole directory.
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), source)
    include_dirs = [os.path.abspath(d) for d in include_dirs]
    files, project_dirs = _collect(sources, include_dirs, base_root, texts, str(out.resolve()))
    anchors = [os.path.dirname(f) for f in files] + project_dirs
    if base_root is not None:
        anchors.append(base_root)
    root = os.path.commonpath(anchors) if anchors else str(out)
    report = TreeReport(source=root, output=str(out))
    dest: Dict[str, str] = {}
    for path in files:
        rel_dir = os.path.relpath(os.path.dirname(path), root)
        tree = port_tree(path, out / rel_dir, rename_cu=True)
        for file_report in tree.files:
            file_report.path = os.path.normpath(os.path.join(rel_dir, file_report.path or ""))
            file_report.output_path = os.path.normpath(
                os.path.join(rel_dir, file_report.output_path or "")
            )
            report.files.append(file_report)
            dest[path] = str(out / file_report.output_path)
        report.written.extend(os.path.normpath(os.path.join(rel_dir, w)) for w in tree.written)
        report.notes.extend(tree.notes)
    mapped_dirs = []
    for directory in include_dirs:
        if directory in project_dirs:
            target = out / os.path.relpath(directory, root)
            target.mkdir(parents=True, exist_ok=True)
            mapped_dirs.append(str(target))
        else:
            mapped_dirs.append(directory)
    return PortedBuild([dest[s] for s in sources], mapped_dirs, report)


def port_texts(texts: Sequence[str], label: str) -> Tuple[List[str], List[FileReport]]:
    """Inline sources (``load_inline``'s) ported, with a report for each, named ``<label[i]>``."""
    from ..porting import port_source

    ported, reports = [], []
    for i, text in enumerate(texts):
        new, file_report = port_source(text, filename=f"{label}[{i}]")
        file_report.path = file_report.output_path = f"<{label}[{i}]>"
        ported.append(new)
        reports.append(file_report)
    return ported, reports


def publish(
    name: str, report: TreeReport, out: Path, verbose: bool, announce: bool = False
) -> None:
    """Keep the report (port_report(name)), write it beside the ported copies, and say what
    needs a look: the table with ``verbose``, one line with ``announce`` (setup.py builds)."""
    _reports[name] = report
    out.mkdir(parents=True, exist_ok=True)
    for suffix, text in ((".json", report.to_json()), (".txt", report.format_table() + "\n")):
        path = out / (REPORT_NAME + suffix)
        try:
            if path.read_text("utf-8") == text:
                continue
        except OSError:
            pass
        path.write_text(text, "utf-8")
    totals = report.totals()
    line = (
        f"torchada: ported extension {name}: {totals['files']} files, {totals['written']} "
        f"written, into {out} (report: {out / (REPORT_NAME + '.txt')})"
    )
    if verbose:
        print(report.format_table(), file=sys.stderr)
    elif announce:
        print(line)
    else:
        logger.info(line)
    remaining = report.remaining()
    if remaining:
        names = ", ".join(sorted(remaining)[:8]) + (", ..." if len(remaining) > 8 else "")
        warn_once(
            f"cpp_extension-remaining:{name}",
            f"extension {name}: the porter has no rule for CUDA names it found ({names}); the "
            f"build may fail there. The report is {out / (REPORT_NAME + '.txt')}",
        )


def port_report(name: str) -> Optional[TreeReport]:
    """The porter's report of the latest build of extension ``name`` in this process."""
    return _reports.get(name)
