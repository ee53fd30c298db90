"""On/off environment switches, read one way everywhere.

Runs in every ``import torch`` (the entry point reads ``TORCHADA_ACTIVE`` and
``TORCHADA_SIMULATE``), so a well-formed value costs one dictionary lookup and a set membership.
A value that is neither on nor off is a user's typo (``TORCHADA_SIMULATE=ture``): it counts as off,
and a warning naming the variable and the accepted values is given once per process and variable.
"""

from __future__ import annotations

import os
from typing import Mapping, Optional, Set, Tuple

ON = frozenset(("1", "true", "yes", "on"))
OFF = frozenset(("", "0", "false", "no", "off"))

_warned: Set[Tuple[str, str]] = set()


def flag(name: str, environ: Optional[Mapping[str, str]] = None, default: bool = False) -> bool:
    """Whether switch ``name`` is on: ``1``/``true``/``yes``/``on`` (any case) mean on,
    ``0``/``false``/``no``/``off`` mean off, unset or empty mean ``default``; anything else is
    ``default`` with a warning.

    Example::

        >>> flag("TORCHADA_SIMULATE", {"TORCHADA_SIMULATE": "1"})
        True
        >>> flag("TORCHADA_SIMULATE", {})
        False
    """
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in ON:
        return True
    if not value:
        return default
    if value not in OFF and (name, raw) not in _warned:
        _warned.add((name, raw))
        import warnings

        warnings.warn(
            f"{name}={raw!r} is not an on/off value, so it counts as {'on' if default else 'off'}"
            f"; use {name}=1 to turn it on or {name}=0 to turn it off",
            RuntimeWarning,
            stacklevel=2,
        )
    return default if value not in OFF else False
