import logging
import warnings

logger = logging.getLogger("torchada")
_seen: set = set()


def warn_once(key: str, message: str) -> None:
    """One warning per cause per process."""
    if key in _seen:
        return
    _seen.add(key)
    warnings.warn(message, UserWarning, stacklevel=3)
