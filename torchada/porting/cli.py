"""``python -m torchada port SRC --out DIR [--diff] [--report [PATH]] [--in-place]
[--rename-project]``."""

from __future__ import annotations

import argparse
import difflib
import logging
import sys
from typing import List, NoReturn, Optional, Sequence, TextIO

from .report import FileReport
from .tree import PortError, port_tree

logger = logging.getLogger("torchada.porting")

EXIT_OK = 0
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse exits with 2 as well; raising lets main() return it instead of exiting.
        raise _UsageError(f"{self.prog}: error: {message}")


class _UsageError(Exception):
    pass


EXAMPLES = """\
Examples:
  # port the tree csrc/ into csrc_musa/ and print what changed, file by file
  python -m torchada port csrc --out csrc_musa --report
  # only look: a diff of every change, nothing written
  python -m torchada port csrc/kernel.cu --diff
  # rewrite csrc/ itself, and keep the report as JSON
  python -m torchada port csrc --in-place --report port_report.json
"""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m torchada port",
        description=(
            "Writes MUSA ports of the sources in SRC into --out; SRC itself is never touched\n"
            "unless --in-place is given. .cu/.cuh files become .mu/.muh (see --keep-cu)."
        ),
        epilog=EXAMPLES,
        # Keeps the examples' lines as written.
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("src", metavar="SRC", help="source directory or single file")
    parser.add_argument("--out", metavar="DIR", help="output directory for the ported copies")
    parser.add_argument(
        "--in-place", action="store_true", help="rewrite SRC itself (explicit opt-in)"
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="print a unified diff of every change; without --out/--in-place nothing is written",
    )
    parser.add_argument(
        "--report",
        nargs="?",
        const="-",
        metavar="PATH",
        help="print the report as a table, or write it as JSON to PATH",
    )
    parser.add_argument(
        "--keep-cu",
        action="store_true",
        help="keep .cu/.cuh names (default: rename to .mu/.muh, which the MUSA build compiles)",
    )
    parser.add_argument(
        "--rewrite-comments", action="store_true", help="also apply plain renames inside comments"
    )
    parser.add_argument(
        "--rename-project",
        action="store_true",
        help=(
            "also rename the project's own CUDA-named identifiers, files and folders (WITH_CUDA, "
            "CHECK_CUDA, add_cuda, cuda/) consistently across SRC; the build must follow"
        ),
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    return parser


def main(argv: Optional[Sequence[str]] = None, *, stdout: Optional[TextIO] = None) -> int:
    """Run the ``port`` command; returns the process exit code (2 for usage/path errors)."""
    out_stream = stdout if stdout is not None else sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except _UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    if args.out is not None and args.in_place:
        return _fail(f"--out {args.out!r} and --in-place exclude each other")
    if args.out is None and not args.in_place and not args.diff:
        return _fail(f"nothing to do for {args.src!r}: pass --out DIR, --in-place or --diff")

    diffs: List[str] = []

    def on_ported(report: FileReport, old: str, new: str) -> None:
        src_name = report.path or "<source>"
        dst_name = report.output_path or src_name
        diffs.extend(
            difflib.unified_diff(
                old.splitlines(True), new.splitlines(True), f"a/{src_name}", f"b/{dst_name}"
            )
        )

    try:
        report = port_tree(
            args.src,
            args.out,
            in_place=args.in_place,
            rename_cu=not args.keep_cu,
            rewrite_comments=args.rewrite_comments,
            dry_run=args.out is None and not args.in_place,
            on_ported=on_ported if args.diff else None,
            rename_project=args.rename_project,
        )
    except PortError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{exc.filename or args.src}: {exc.strerror or exc}")

    if args.diff:
        for line in diffs:
            out_stream.write(line if line.endswith("\n") else line + "\n")
    if args.report == "-":
        print(report.format_table(), file=out_stream)
    elif args.report is not None:
        try:
            with open(args.report, "w", encoding="utf-8") as fh:
                fh.write(report.to_json() + "\n")
        except OSError as exc:
            return _fail(f"cannot write report {args.report!r}: {exc.strerror or exc}")
    if not args.quiet and args.report != "-":
        totals = report.totals()
        print(
            f"torchada port: {totals['files']} files, {totals['written']} written, "
            f"{totals['translations']} translations, {totals['remaining']} unported "
            f"CUDA-looking names, {totals['attention']} kept for review",
            file=sys.stderr,
        )
    return EXIT_OK


def _fail(message: str) -> int:
    print(f"torchada port: error: {message}", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
