"""The usage record (the migration report): which CUDA APIs a program touched through torchada
and what each became.

Off by default, and then free: proxies are sealed into plain modules and nothing is wrapped. With
``TORCHADA_REPORT=path`` (or ``python -m torchada.run --report``) the proxies stay lazy, so each
first access is seen with the user's call site, and callables are wrapped to count calls. At exit
the record prints a compact table on stderr and writes one JSON file per process.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
from typing import Any, Dict, List, Optional

REPORT_ENV = "TORCHADA_REPORT"
OWNER_ENV = "TORCHADA_REPORT_OWNER"

_lock = threading.Lock()
_entries: Dict[str, Dict[str, Any]] = {}
_atexit_registered = False

# The package's own folder (torchada/, not just torchada/_core/) and torchada_hooks/.
_OWN_DIRS = tuple(
    os.path.dirname(os.path.abspath(os.path.join(os.path.dirname(__file__), "..", *p, "x")))
    for p in ((), ("..", "torchada_hooks"))
)


def report_path() -> Optional[str]:
    value = os.environ.get(REPORT_ENV, "").strip()
    return value or None


def enabled() -> bool:
    return report_path() is not None


def _call_site() -> Optional[str]:
    """The first frame outside torchada, torchada_hooks and the import system."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        own = filename.startswith(_OWN_DIRS) or filename.startswith("<frozen importlib")
        if not own:
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _entry(api: str, kind: str) -> Dict[str, Any]:
    entry = _entries.get(api)
    if entry is None:
        entry = {"api": api, "kind": kind, "calls": 0, "first_site": None}
        _entries[api] = entry
    return entry


def note(api: str, kind: str) -> None:
    """An API was resolved (accessed for the first time)."""
    if not enabled():
        return
    with _lock:
        entry = _entry(api, kind)
        if entry["first_site"] is None:
            entry["first_site"] = _call_site()
    _ensure_atexit()


def record(api: str, kind: str) -> None:
    """An API was called (unsupported stand-ins always report, even if the error is caught)."""
    if not enabled():
        return
    with _lock:
        entry = _entry(api, kind)
        entry["calls"] += 1
        if entry["first_site"] is None:
            entry["first_site"] = _call_site()
    _ensure_atexit()


def wrap(api: str, kind: str, value: Any) -> Any:
    """In report mode, a callable that counts its calls; the value itself otherwise."""
    if not enabled() or isinstance(value, type) or not callable(value):
        return value
    import wrapt

    def counting(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        record(api, kind)
        return wrapped(*args, **kwargs)

    return wrapt.FunctionWrapper(value, counting)


def snapshot() -> List[Dict[str, Any]]:
    with _lock:
        return [dict(e) for _, e in sorted(_entries.items())]


def clear() -> None:
    with _lock:
        _entries.clear()


def _output_file(path: str) -> str:
    # One file per process: torchrun ranks and worker processes must not overwrite each other.
    rank = os.environ.get("RANK")
    if rank is not None:
        suffix = f".rank{rank}"
    elif os.environ.get(OWNER_ENV, str(os.getpid())) != str(os.getpid()):
        suffix = f".pid{os.getpid()}"  # a child of the process that asked for the report
    else:
        suffix = ""
    if os.path.isdir(path):
        return os.path.join(path, f"torchada-report{suffix}.json")
    root, ext = os.path.splitext(path)
    return f"{root}{suffix}{ext or '.json'}"


def render_table(entries: List[Dict[str, Any]]) -> str:
    if not entries:
        return "torchada report: no CUDA API was used through torchada\n"
    width = max(len(e["api"]) for e in entries)
    lines = [
        f"torchada report: {len(entries)} CUDA APIs used",
        f"{'api':{width}}  {'as':12} calls  first use",
    ]
    for e in entries:
        lines.append(
            f"{e['api']:{width}}  {e['kind']:12} {e['calls']:5d}  {e['first_site'] or '-'}"
        )
    return "\n".join(lines) + "\n"


def write_report() -> Optional[str]:
    path = report_path()
    if path is None:
        return None
    entries = snapshot()
    out = _output_file(path)
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(
            {"pid": os.getpid(), "rank": os.environ.get("RANK"), "apis": entries}, fh, indent=1
        )
    sys.stderr.write(render_table(entries))
    sys.stderr.write(f"torchada report written to {out}\n")
    return out


def _ensure_atexit() -> None:
    global _atexit_registered
    if not _atexit_registered:
        _atexit_registered = True
        atexit.register(write_report)
