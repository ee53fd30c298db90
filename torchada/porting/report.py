"""Reports produced by the porter: per file and per tree, as JSON or a plain-text table."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

__all__ = ["Finding", "FileReport", "TreeReport"]

#: FileReport.status values.
STATUS_PORTED = "ported"  # translated; the output differs from the input
STATUS_UNCHANGED = "unchanged"  # translated; nothing needed rewriting
STATUS_CACHED = "cached"  # source unchanged since the last port_tree run; report reused
STATUS_COPIED = "copied"  # not a C/C++/CUDA source; copied byte for byte
STATUS_MUSA = "musa-source"  # hand-written .mu/.muh; copied byte for byte, never rewritten
STATUS_BINARY = "binary"  # looks binary; copied byte for byte
STATUS_UNDECODABLE = "non-utf8"  # not UTF-8; copied byte for byte
STATUS_REMOVED = "removed"  # stale output of a source that no longer exists


@dataclass
class Finding:
    """A name the porter left in place: how often, first line, and why.

    The values of :attr:`FileReport.remaining` and :attr:`FileReport.attention`.

    Example::

        >>> from torchada.porting import port_source
        >>> _, report = port_source("cudaFooBar(x);")
        >>> report.remaining["cudaFooBar"]
        Finding(name='cudaFooBar', count=1, line=1, note='')
    """

    name: str
    count: int = 0
    line: int = 0
    note: str = ""

    def to_dict(self) -> Dict[str, Any]:
        """``count``, ``line`` and (when there is one) ``note``, for JSON; the name is the key
        it is filed under.

        Example::

            >>> from torchada.porting import Finding
            >>> Finding("CUDA_VERSION", 2, 7, "kept as is").to_dict()
            {'count': 2, 'line': 7, 'note': 'kept as is'}
        """
        data: Dict[str, Any] = {"count": self.count, "line": self.line}
        if self.note:
            data["note"] = self.note
        return data


@dataclass
class FileReport:
    """What happened to one file.

    ``translated`` maps a rule (its CUDA spelling) to how often it was applied. ``remaining``
    lists CUDA-looking names in code that no rule covered. ``attention`` lists names a rule
    deliberately kept (version macros, unsupported APIs, unrecognised ``__CUDA_ARCH__`` uses,
    member calls on a receiver without the replacement) or rewrote with something left for a
    human to do (a declaration or an include the new name needs).
    ``status`` is one of ``ported``, ``unchanged``, ``cached``, ``copied``, ``musa-source``,
    ``binary``, ``non-utf8`` or ``removed``.

    Example::

        >>> from torchada.porting import port_source
        >>> _, report = port_source("int v = CUDA_VERSION / 1000; cudaMalloc(&p, n);")
        >>> report.status, report.translated, sorted(report.attention)
        ('ported', {'cudaMalloc': 1}, ['CUDA_VERSION'])
    """

    path: Optional[str] = None
    output_path: Optional[str] = None
    status: str = STATUS_UNCHANGED
    translated: Dict[str, int] = field(default_factory=dict)
    remaining: Dict[str, Finding] = field(default_factory=dict)
    attention: Dict[str, Finding] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the port changed the text (status ``ported``).

        Example::

            >>> from torchada.porting import port_source
            >>> port_source("cudaMalloc(&p, n);")[1].changed, port_source("int x;")[1].changed
            (True, False)
        """
        return self.status == STATUS_PORTED

    @property
    def translation_count(self) -> int:
        """The number of rewrites applied, all rules together.

        Example::

            >>> from torchada.porting import port_source
            >>> port_source("cudaFree(a); cudaFree(b);")[1].translation_count
            2
        """
        return sum(self.translated.values())

    def to_dict(self) -> Dict[str, Any]:
        """The report as plain data (keys sorted within each table); :meth:`from_dict` reads it
        back.

        Example::

            >>> from torchada.porting import port_source
            >>> port_source("cudaFree(p);", filename="k.cu")[1].to_dict()["translated"]
            {'cudaFree': 1}
        """
        return {
            "path": self.path,
            "output_path": self.output_path,
            "status": self.status,
            "translated": dict(sorted(self.translated.items())),
            "remaining": {k: v.to_dict() for k, v in sorted(self.remaining.items())},
            "attention": {k: v.to_dict() for k, v in sorted(self.attention.items())},
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "FileReport":
        """The report :meth:`to_dict` described; missing keys take their defaults.

        Example::

            >>> from torchada.porting import FileReport, port_source
            >>> report = port_source("cudaFree(p);", filename="k.cu")[1]
            >>> FileReport.from_dict(report.to_dict()) == report
            True
        """

        def findings(raw: Dict[str, Any]) -> Dict[str, Finding]:
            return {
                k: Finding(k, int(v.get("count", 0)), int(v.get("line", 0)), v.get("note", ""))
                for k, v in raw.items()
            }

        return cls(
            path=data.get("path"),
            output_path=data.get("output_path"),
            status=data.get("status", STATUS_UNCHANGED),
            translated={k: int(v) for k, v in data.get("translated", {}).items()},
            remaining=findings(data.get("remaining", {})),
            attention=findings(data.get("attention", {})),
            notes=list(data.get("notes", [])),
        )

    def to_json(self, indent: Optional[int] = 2) -> str:
        """:meth:`to_dict` as JSON text (``indent=None`` for one line).

        Example::

            >>> from torchada.porting import port_source
            >>> print(port_source("cudaFree(p);")[1].to_json(indent=None))  # doctest: +ELLIPSIS
            {"path": null, ..., "status": "ported", "translated": {"cudaFree": 1}, ...}
        """
        return json.dumps(self.to_dict(), indent=indent)

    def format_table(self) -> str:
        """A plain-text table of the report (one row), then a line per translated rule, per
        unported name and per note.

        Example::

            >>> from torchada.porting import port_source
            >>> print(port_source("cudaFree(p); cudaFooBar();")[1].format_table())
            file      status  translated  remaining  review
            --------  ------  ----------  ---------  ------
            <string>  ported           1          1       0
            <BLANKLINE>
            <string>: translated cudaFree x1
            <string>:1: unported cudaFooBar x1
        """
        return _format_files([self])


@dataclass
class TreeReport:
    """Reports of every file a :func:`port_tree` run looked at.

    ``source`` and ``output`` are the paths as given, ``files`` the :class:`FileReport` of each
    file, ``written`` the output paths (relative to ``output``) that were written, ``notes`` what
    the walk skipped and why.

    Example::

        >>> from torchada.porting import FileReport, TreeReport
        >>> tree = TreeReport("src", "out", files=[FileReport("k.cu", "k.mu", "ported")])
        >>> tree.totals()["files"], tree.files[0].output_path
        (1, 'k.mu')
    """

    source: str
    output: str
    files: List[FileReport] = field(default_factory=list)
    written: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    def totals(self) -> Dict[str, int]:
        """Counts over all files: ``files``, ``written``, ``translations``, ``remaining`` and
        ``attention`` (occurrences), and ``status:<status>`` for each status seen.

        Example::

            >>> from torchada.porting import FileReport, TreeReport
            >>> tree = TreeReport("src", "out", files=[FileReport("k.cu", status="ported",
            ...                                                   translated={"cudaFree": 2})])
            >>> tree.totals()  # doctest: +NORMALIZE_WHITESPACE
            {'files': 1, 'written': 0, 'translations': 2, 'remaining': 0, 'attention': 0,
             'status:ported': 1}
        """
        by_status: Dict[str, int] = {}
        for report in self.files:
            by_status[report.status] = by_status.get(report.status, 0) + 1
        return {
            "files": len(self.files),
            "written": len(self.written),
            "translations": sum(r.translation_count for r in self.files),
            "remaining": sum(f.count for r in self.files for f in r.remaining.values()),
            "attention": sum(f.count for r in self.files for f in r.attention.values()),
            **{f"status:{k}": v for k, v in sorted(by_status.items())},
        }

    def translated(self) -> Dict[str, int]:
        """How often each rule was applied, summed over all files.

        Example::

            >>> from torchada.porting import FileReport, TreeReport
            >>> files = [FileReport("a.cu", translated={"cudaFree": 1}),
            ...          FileReport("b.cu", translated={"cudaFree": 2})]
            >>> TreeReport("src", "out", files=files).translated()
            {'cudaFree': 3}
        """
        merged: Dict[str, int] = {}
        for report in self.files:
            for key, count in report.translated.items():
                merged[key] = merged.get(key, 0) + count
        return merged

    def remaining(self) -> Dict[str, int]:
        """How often each unported CUDA-looking name occurs, summed over all files.

        Example::

            >>> from torchada.porting import FileReport, Finding, TreeReport
            >>> report = FileReport("a.cu", remaining={"cudaFooBar": Finding("cudaFooBar", 2, 3)})
            >>> TreeReport("src", "out", files=[report]).remaining()
            {'cudaFooBar': 2}
        """
        merged: Dict[str, int] = {}
        for report in self.files:
            for key, finding in report.remaining.items():
                merged[key] = merged.get(key, 0) + finding.count
        return merged

    def file(self, path: str) -> FileReport:
        """The report of the file at ``path`` (relative to the source, POSIX separators).

        Raises KeyError when no file of that path was looked at.

        Example::

            >>> from torchada.porting import FileReport, TreeReport
            >>> tree = TreeReport("src", "out", files=[FileReport("k.cu", "k.mu")])
            >>> tree.file("k.cu").output_path
            'k.mu'
            >>> tree.file("other.cu")
            Traceback (most recent call last):
            KeyError: 'other.cu'
        """
        for report in self.files:
            if report.path == path:
                return report
        raise KeyError(path)

    def to_dict(self) -> Dict[str, Any]:
        """The run as plain data: paths, :meth:`totals`, what was written, notes and each file's
        :meth:`FileReport.to_dict`.

        Example::

            >>> from torchada.porting import TreeReport
            >>> sorted(TreeReport("src", "out").to_dict())
            ['files', 'notes', 'output', 'source', 'totals', 'written']
        """
        return {
            "source": self.source,
            "output": self.output,
            "totals": self.totals(),
            "written": list(self.written),
            "notes": list(self.notes),
            "files": [r.to_dict() for r in self.files],
        }

    def to_json(self, indent: Optional[int] = 2) -> str:
        """:meth:`to_dict` as JSON text (``indent=None`` for one line); what ``python -m
        torchada port SRC --report PATH`` writes to PATH.

        Example::

            >>> from torchada.porting import TreeReport
            >>> print(TreeReport("src", "out").to_json(indent=None))  # doctest: +ELLIPSIS
            {"source": "src", "output": "out", "totals": {"files": 0, ...}, ...}
        """
        return json.dumps(self.to_dict(), indent=indent)

    def format_table(self) -> str:
        """A summary line, a table with a row per file, then the per-file details and notes.

        Example::

            >>> from torchada.porting import FileReport, TreeReport
            >>> tree = TreeReport("src", "out", files=[FileReport("k.cu", status="ported",
            ...                                                   translated={"cudaFree": 2})])
            >>> print(tree.format_table())  # doctest: +NORMALIZE_WHITESPACE
            ported src -> out: 1 files, 0 written, 2 translations, 0 unported CUDA-looking names,
            0 kept for review
            file  status  translated  remaining  review
            ----  ------  ----------  ---------  ------
            k.cu  ported           2          0       0
            <BLANKLINE>
            k.cu: translated cudaFree x2
        """
        totals = self.totals()
        head = (
            f"ported {self.source} -> {self.output}: {totals['files']} files, "
            f"{totals['written']} written, {totals['translations']} translations, "
            f"{totals['remaining']} unported CUDA-looking names, "
            f"{totals['attention']} kept for review"
        )
        lines = [head, _format_files(self.files)]
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


def _format_files(files: List[FileReport]) -> str:
    rows = [("file", "status", "translated", "remaining", "review")]
    details: List[str] = []
    for r in files:
        rows.append(
            (
                r.path or "<string>",
                r.status,
                str(r.translation_count),
                str(sum(f.count for f in r.remaining.values())),
                str(sum(f.count for f in r.attention.values())),
            )
        )
        name = r.path or "<string>"
        if r.translated:
            top = sorted(r.translated.items(), key=lambda kv: (-kv[1], kv[0]))
            details.append(f"{name}: translated " + ", ".join(f"{k} x{v}" for k, v in top))
        for title, group in (("unported", r.remaining), ("review", r.attention)):
            for key, f in sorted(group.items()):
                note = f" ({f.note})" if f.note else ""
                details.append(f"{name}:{f.line}: {title} {key} x{f.count}{note}")
        details.extend(f"{name}: note: {n}" for n in r.notes)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for i, row in enumerate(rows):
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(row[2:], widths[2:])]
        out.append("  ".join(cells).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    if details:
        out.append("")
        out.extend(details)
    return "\n".join(out)
