"""``python -m torchada <command> ...``: a minimal subcommand dispatcher."""

from __future__ import annotations

import sys
from typing import Callable, Dict, List, Optional


def _port(argv: List[str]) -> int:
    # Imported lazily so other subcommands do not pay for the porter (and vice versa).
    from torchada.porting.cli import main

    return main(argv)


def _tables(argv: List[str]) -> int:
    from torchada._docs import main

    return main(argv)


def _build(argv: List[str]) -> int:
    from torchada._build_command import main

    return main(argv)


def _doctor(argv: List[str]) -> int:
    from torchada._doctor import main

    return main(argv)


def _simulator(argv: List[str]) -> int:
    from torchada._simulator.install import main

    return main(argv)


COMMANDS: Dict[str, Callable[[List[str]], int]] = {
    "build": _build,
    "doctor": _doctor,
    "port": _port,
    "simulator": _simulator,
    "tables": _tables,
}


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m torchada {" + ",".join(sorted(COMMANDS)) + "} ...")
        return 0 if args else 2
    command = COMMANDS.get(args[0])
    if command is None:
        print(f"python -m torchada: unknown command {args[0]!r}", file=sys.stderr)
        return 2
    return command(args[1:])


if __name__ == "__main__":
    sys.exit(main())
