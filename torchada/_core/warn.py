"""One message per cause per process, however often the cause recurs: :func:`warn_once` as a
Python warning (for what the program's own code does), :func:`log_once` on the ``torchada``
logger (for what torchada decided on its own)."""

from __future__ import annotations

import logging
import threading
import warnings
from typing import Any, Hashable, Set, Type

logger = logging.getLogger("torchada")

_seen: Set[Hashable] = set()
_lock = threading.Lock()


def first_time(key: Hashable) -> bool:
    """True the first time ``key`` is seen in this process, False afterwards.

    Example::

        >>> first_time(("doctest", "first_time")), first_time(("doctest", "first_time"))
        (True, False)
    """
    with _lock:
        if key in _seen:
            return False
        _seen.add(key)
        return True


def warn_once(
    key: Hashable, message: str, category: Type[Warning] = UserWarning, stacklevel: int = 2
) -> None:
    """``warnings.warn(message, category)`` the first time ``key`` is seen. ``stacklevel`` counts
    from the caller of :func:`warn_once`, as it does for ``warnings.warn`` (2: the caller's
    caller)."""
    if first_time(key):
        warnings.warn(message, category, stacklevel=stacklevel + 1)


def log_once(key: Hashable, message: str, *args: Any) -> None:
    """``logger.warning(message, *args)`` on the ``torchada`` logger the first time ``key`` is
    seen."""
    if first_time(key):
        logger.warning(message, *args)
