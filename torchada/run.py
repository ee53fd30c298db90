"""``python -m torchada.run [--simulate] script.py [args...]`` (or ``-m module``).

Turns torchada on, then runs the program exactly as ``python script.py`` would: ``__name__`` is
``"__main__"`` in a fresh ``__main__`` module laid out as the interpreter's (absolute ``__file__``,
a ``SourceFileLoader``, ``__builtins__`` the module), ``sys.argv`` and ``sys.path[0]`` are the
program's, the exit status is the program's (killed by SIGINT on an uncaught KeyboardInterrupt),
and a traceback shows the program's frames, not ours.
"""

from __future__ import annotations

import atexit
import builtins
import importlib.machinery
import os
import runpy
import signal
import sys
import types
import zipfile
from typing import List, Optional

USAGE = """usage: python -m torchada.run [--simulate] [--no-cuda-available] [--report[=PATH]]
                              (script.py | -m module) [args ...]

Runs a CUDA-written PyTorch program on MUSA through torchada, unchanged.

  --simulate   use the bundled CPU simulator of torch_musa (only where no torch_musa exists)
  --report[=PATH]  record the CUDA APIs the program used through torchada: a table on stderr at
               exit and a JSON file per process (default torchada-report.json)
  --no-cuda-available  torch.cuda.is_available() answers False on MUSA, as the published
               torchada does (by default it answers torch.musa.is_available(), so that
               "cuda" if torch.cuda.is_available() else "cpu" picks the GPU); sets
               TORCHADA_FORCE_CUDA_AVAILABLE=0 for the program and its children
  --cuda-available  the default, spelled out: TORCHADA_FORCE_CUDA_AVAILABLE=1
  -m module    run a library module as a script, like python -m
"""


def _parse(argv: List[str]) -> "tuple[bool, Optional[str], Optional[str], List[str]]":
    simulate = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--simulate":
            simulate = True
        elif arg in ("--cuda-available", "--no-cuda-available"):
            # In the environment, so the program's child processes answer the same.
            os.environ["TORCHADA_FORCE_CUDA_AVAILABLE"] = "0" if arg.startswith("--no") else "1"
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


# Only our own frames: under `python -m` the interpreter shows runpy's frames too, and so do we.
_OWN_FILES = {os.path.abspath(__file__)}


def _report_without_our_frames(exc: BaseException) -> None:
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename not in _OWN_FILES and os.path.abspath(filename) not in _OWN_FILES:
            break
        tb = tb.tb_next
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)


def _fresh_main() -> types.ModuleType:
    """A new ``__main__`` as the interpreter makes it at startup, in place of this module: the
    program must not see our names, and a ``__builtins__`` module (exec would put a dict)."""
    main_module = types.ModuleType("__main__")
    main_module.__annotations__ = {}
    main_module.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main_module
    return main_module


def _run_script(script: str) -> None:
    path = os.path.abspath(script)  # the interpreter's __file__ is absolute since 3.9
    if os.path.isdir(path) or zipfile.is_zipfile(path):
        # A directory or zip archive runs its __main__.py as a module, as the interpreter does.
        sys.path[0] = path
        _fresh_main()
        runpy._run_module_as_main("__main__", alter_argv=False)  # type: ignore[attr-defined]
        return
    sys.path[0] = os.path.dirname(path)
    main_module = _fresh_main()
    loader = importlib.machinery.SourceFileLoader("__main__", path)
    main_module.__loader__ = loader
    main_module.__file__ = path
    main_module.__cached__ = None  # type: ignore[attr-defined]
    code = compile(loader.get_data(path), path, "exec", dont_inherit=True)
    exec(code, vars(main_module))


def _die_by_sigint() -> None:
    """Ends the process as the interpreter does after an uncaught KeyboardInterrupt: cleanup as
    at a normal exit, then killed by SIGINT, so a parent shell or launcher sees the signal."""
    if not hasattr(signal, "SIGINT") or not hasattr(os, "kill") or os.name == "nt":
        raise SystemExit(0xC000013A if os.name == "nt" else 130)
    shutdown = getattr(__import__("threading"), "_shutdown", None)
    if shutdown is not None:
        shutdown()  # waits for non-daemon threads, as interpreter shutdown would
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    raise SystemExit(130)  # not reached where SIGINT kills; a last resort otherwise


def main(argv: Optional[List[str]] = None) -> None:
    """The runner: parse ``argv`` (default ``sys.argv[1:]``), turn torchada on, run the program.

    ``argv`` is what follows ``python -m torchada.run``: options (``--simulate``,
    ``--no-cuda-available``, ``--report[=PATH]``), then ``script.py`` or ``-m module``, then the
    program's arguments. The program runs in this process as ``python script.py`` would run it
    (see the module docstring); ``sys.argv``, ``sys.path[0]`` and ``__main__`` become its own.

    Returns when the program ends normally. Raises SystemExit: the program's own, 1 when the
    program raises (after its traceback is printed), 2 when the script does not exist, 0 after
    ``--help``, and one carrying the usage for a bad command line. After an uncaught
    KeyboardInterrupt the process is killed by SIGINT, as the interpreter's would be.

    Example::

        >>> from torchada import run
        >>> run.main(["--simulate", "train.py", "--epochs", "1"])  # doctest: +SKIP
        >>> run.main(["--help"])  # doctest: +SKIP
        usage: python -m torchada.run [--simulate] [--no-cuda-available] [--report[=PATH]]
        ...
    """
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
            _run_script(script)
        else:
            # As `python -m`: argv[0] is "-m" while the module is found, then its file.
            sys.argv = ["-m", *rest]
            sys.path[0] = os.getcwd()
            _fresh_main()
            runpy._run_module_as_main(module, alter_argv=True)  # type: ignore[attr-defined]
    except SystemExit:
        raise
    except KeyboardInterrupt as exc:
        _report_without_our_frames(exc)
        _die_by_sigint()
    except BaseException as exc:  # the program's own error: report it as Python would
        _report_without_our_frames(exc)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
