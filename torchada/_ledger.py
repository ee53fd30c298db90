"""The migration ledger: which CUDA APIs a program touched through torchada and what each became.

Resolution happens once per name, so noting it is free on hot paths; call counts are kept only for
APIs whose stand-ins call ``record`` (unsupported ones today).
"""

from __future__ import annotations

import threading
from typing import Dict, Tuple

_lock = threading.Lock()
_kinds: Dict[str, str] = {}
_calls: Dict[str, int] = {}


def note(api: str, kind: str) -> None:
    _kinds.setdefault(api, kind)


def record(api: str, kind: str) -> None:
    with _lock:
        _kinds.setdefault(api, kind)
        _calls[api] = _calls.get(api, 0) + 1


def snapshot() -> Dict[str, Tuple[str, int]]:
    with _lock:
        return {api: (kind, _calls.get(api, 0)) for api, kind in sorted(_kinds.items())}


def clear() -> None:
    with _lock:
        _kinds.clear()
        _calls.clear()
