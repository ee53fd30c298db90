"""``python -m torchada COMMAND ...``: runs one of torchada's command-line tools.

Each command lives in its own module, imported only when that command runs: listing the commands
(``python -m torchada --help``) imports none of them, and one command does not pay for another.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Dict, List, NamedTuple, Optional

PROG = "python -m torchada"


class Command(NamedTuple):
    module: str  # defines main(argv) -> exit status, and the command's own --help
    summary: str  # the line `python -m torchada --help` shows; the command's --help says more


COMMANDS: Dict[str, Command] = {
    "build": Command(
        "torchada._native.command",
        "build torchada's native library ahead of time and say where it lives",
    ),
    "doctor": Command(
        "torchada._doctor",
        "show what torchada sees on this machine, and what looks wrong",
    ),
    "port": Command(
        "torchada.porting.cli",
        "port CUDA C++ sources (.cu, .cuh, .cpp, .h) to MUSA",
    ),
    "simulator": Command(
        "torchada._simulator.install",
        "install, uninstall or check the CPU simulator of torch_musa as a package",
    ),
    "tables": Command(
        "torchada._cuda.registry_docs",
        "regenerate the name and switch tables in docs/ and README.md (source checkout)",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: it only picks the command; the command parses the rest itself."""
    width = max(map(len, COMMANDS))
    listing = "\n".join(f"  {name:<{width}}  {cmd.summary}" for name, cmd in COMMANDS.items())
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="torchada's command-line tools.\n\ncommands:\n" + listing,
        epilog=(
            f"Run `{PROG} COMMAND --help` for a command's options and examples.\n"
            "To run a CUDA-written program on MUSA with no code change, see\n"
            "`python -m torchada.run --help`."
        ),
        # Keeps the command table's columns as written.
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "command", metavar="COMMAND", choices=list(COMMANDS), help="one of the commands above"
    )
    # default=[] keeps argparse from calling an empty ARGS missing.
    parser.add_argument(
        "args", metavar="ARGS", nargs="*", default=[], help="the command's own arguments"
    )
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``python -m torchada`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit
    status."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args:
        # A missing command is a usage error (status 2, as argparse's); the full help says why.
        parser.print_help(sys.stderr)
        return 2
    try:
        # Only the first word is ours: the rest, options included, belongs to the command.
        command = parser.parse_args(args[:1]).command
    except SystemExit as exc:  # --help (0), or an unknown command (2, argparse's message)
        return int(exc.code or 0)
    module = importlib.import_module(COMMANDS[command].module)
    return module.main(args[1:])


if __name__ == "__main__":
    sys.exit(main())
