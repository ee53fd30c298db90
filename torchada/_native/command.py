"""``python -m torchada build``: build the native library ahead of time and say where it lives.

The cache key includes torch_musa's version, so the build is done with torch_musa loaded (or the
simulator, with ``--simulate`` / ``TORCHADA_SIMULATE=1``) to be the one later runs find.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List

USAGE = "usage: python -m torchada build [--simulate] [--verbose] [--json]"

HELP = f"""{USAGE}

Builds the library with torch_musa loaded, as later runs load it (its cache key includes
torch_musa's version), or with the CPU simulator of torch_musa. Exits with 1 when the library
could not be built or loaded (the reason is printed).

Run it once after installing torchada (and after upgrading torch or torch_musa): the build takes
a minute or more on a slow machine, and the first program that uses torchada is then spared that
wait. While it builds, a terminal shows ninja's [n/m] count and the seconds so far; a log gets
one line when a build starts, one every 15 s with the count and the seconds so far, and one with
its time when it is done (TORCHADA_QUIET=1: the first and the last only).

options:
  -h, --help  show this help message and exit
  --simulate  build with the simulator (as TORCHADA_SIMULATE=1 does)
  --verbose   show the compiler's commands and output (as TORCHADA_CPP_OPS_VERBOSE=1 does)
  --json      print the result as JSON

Examples:
  python -m torchada build
  python -m torchada build --simulate --json
"""


def _load_torch_musa(simulate: bool) -> str:
    """Loads torch_musa (real, or the simulator when asked); says which."""
    from .. import _simulator

    if simulate or _simulator.requested():
        _simulator.activate()
        return "simulated"
    if _simulator.real_torch_musa_spec() is not None:
        import torch_musa  # noqa: F401

        return "real"
    return "absent"


def collect(simulate: bool = False) -> Dict[str, Any]:
    """Builds (or finds) the native library; returns what ``build`` prints. Raises ValueError for
    a bad ``MTGPU_TARGET``."""
    import torch

    from .._ops import overrides as _cpp_ops
    from . import build as _build
    from . import library as _native

    torch_musa = _load_torch_musa(simulate)
    arch = _native.target_arch()  # validates MTGPU_TARGET before a long build
    plan = _native.plan()
    module = _native.load()
    state = _native.state()
    record = _build.last_build(_native.LIBRARY_NAME)
    info: Dict[str, Any] = {
        "library": _native.LIBRARY_NAME,
        "status": state.get("status"),
        "torch": torch.__version__,
        "torch_musa": _native.torch_musa_version() if torch_musa != "absent" else None,
        "simulated": torch_musa == "simulated",
        "target_arch": arch,
        "target_from": "MTGPU_TARGET" if os.environ.get(_native.ARCH_ENV) else "device 0",
        "musa_kernels": plan.musa_note(),
    }
    if module is None:
        info["reason"] = state.get("reason")
        return info
    # The build's final place: a library just built was imported from the directory it was built
    # in, before that directory was renamed into place.
    info["path"] = str(record.path if record is not None else getattr(module, "__file__", ""))
    if record is not None:
        info["built"] = record.built
        info["seconds"] = round(record.seconds, 3)
    info["overrides"] = [
        {k: entry[k] for k in ("name", "op", "summary")} for entry in _cpp_ops.available(module)
    ]
    return info


def render(info: Dict[str, Any]) -> str:
    lines = [f"torchada native library ({info['library']})"]
    if info["status"] != "loaded":
        lines.append(f"  status        {info['status']}: {info.get('reason', '')}")
        return "\n".join(lines)
    if "built" in info:
        how = f"built in {info['seconds']:.1f} s" if info["built"] else "up to date (cached)"
    else:
        how = "loaded"
    lines.append(f"  path          {info['path']}")
    lines.append(f"  status        {how}")
    musa = info["torch_musa"] or "no torch_musa (a MUSA machine keys the build on its own)"
    lines.append(
        f"  built for     torch {info['torch']}, {musa}"
        + (" (simulated)" if info["simulated"] else "")
    )
    arch = info["target_arch"]
    lines.append(
        "  MUSA target   " + (f"{arch} (from {info['target_from']})" if arch else "unknown")
    )
    lines.append(f"  MUSA kernels  {info['musa_kernels']}")
    overrides = info.get("overrides", [])
    lines.append(
        "  overrides     "
        + (", ".join(o["name"] for o in overrides) or "none")
        + "  (installed with TORCHADA_ENABLE_CPP_OPS=1)"
    )
    for o in overrides:
        lines.append(f"    {o['name']:<12} {o['op']}: {o['summary']}")
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(HELP, end="")
        return 0
    unknown = [a for a in argv if a not in ("--simulate", "--verbose", "--json")]
    if unknown:
        print(f"python -m torchada build: unknown argument {unknown[0]!r}", file=sys.stderr)
        print(USAGE, file=sys.stderr)
        return 2
    if "--verbose" in argv:
        from .library import VERBOSE_ENV

        os.environ[VERBOSE_ENV] = "1"
    try:
        info = collect(simulate="--simulate" in argv)
    except ValueError as err:
        print(f"python -m torchada build: {err}", file=sys.stderr)
        return 2
    print(json.dumps(info, indent=1) if "--json" in argv else render(info))
    return 0 if info["status"] == "loaded" else 1
