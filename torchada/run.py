"""``python -m torchada.run [--simulate] script.py [args...]`` (or ``-m module``).

Turns torchada on, then runs the program exactly as ``python script.py`` would: ``__name__`` is
``"__main__"``, ``sys.argv`` and ``sys.path[0]`` are the script's, the exit code is the program's,
and a traceback shows the program's frames, not ours.
"""

from __future__ import annotations

import os
import runpy
import sys
from typing import List, Optional

USAGE = """usage: python -m torchada.run [--simulate] (script.py | -m module) [args ...]

Runs a CUDA-written PyTorch program on MUSA through torchada, unchanged.

  --simulate   use the bundled CPU simulator of torch_musa (only where no torch_musa exists)
  --report[=PATH]  record the CUDA APIs the program used through torchada: a table on stderr at
               exit and a JSON file per process (default torchada-report.json)
  -m module    run a library module as a script, like python -m
"""


def _parse(argv: List[str]) -> "tuple[bool, Optional[str], Optional[str], List[str]]":
    simulate = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--simulate":
            simulate = True
        elif arg == "--report" or arg.startswith("--report="):
            path = arg.partition("=")[2] or "torchada-report.json"
            os.environ["TORCHADA_REPORT"] = os.path.abspath(path)
            os.environ["TORCHADA_REPORT_OWNER"] = str(os.getpid())
        elif arg in ("-h", "--help"):
            sys.stdout.write(USAGE)
            raise SystemExit(0)
        elif arg == "-m":
            if i + 1 >= len(argv):
                raise SystemExit(f"torchada.run: -m needs a module name\n\n{USAGE}")
            return simulate, None, argv[i + 1], argv[i + 2 :]
        elif arg.startswith("-") and arg != "-":
            raise SystemExit(f"torchada.run: unknown option {arg!r}\n\n{USAGE}")
        else:
            return simulate, arg, None, argv[i + 1 :]
        i += 1
    raise SystemExit(f"torchada.run: no script given\n\n{USAGE}")


# runpy may be frozen (its frames then say "<frozen runpy>").
_OWN_FILES = {os.path.abspath(__file__), os.path.abspath(runpy.__file__), "<frozen runpy>"}


def _report_without_our_frames(exc: BaseException) -> None:
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename not in _OWN_FILES and os.path.abspath(filename) not in _OWN_FILES:
            break
        tb = tb.tb_next
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)


def main(argv: Optional[List[str]] = None) -> None:
    simulate, script, module, rest = _parse(sys.argv[1:] if argv is None else argv)
    if script is not None and not os.path.exists(script):
        # The same words and exit status as the interpreter's.
        sys.stderr.write(
            f"{os.path.basename(sys.executable)}: can't open file "
            f"{os.path.abspath(script)!r}: [Errno 2] No such file or directory\n"
        )
        raise SystemExit(2)
    if simulate:
        os.environ["TORCHADA_SIMULATE"] = "1"
    import torchada

    torchada.enable(simulate=simulate or None)
    try:
        if script is not None:
            sys.argv = [script, *rest]
            sys.path[0] = os.path.dirname(os.path.abspath(script))
            runpy.run_path(script, run_name="__main__")
        else:
            sys.argv = [module, *rest]
            sys.path[0] = os.getcwd()
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit:
        raise
    except KeyboardInterrupt as exc:
        _report_without_our_frames(exc)
        raise SystemExit(130) from None
    except BaseException as exc:  # the program's own error: report it as Python would
        _report_without_our_frames(exc)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
