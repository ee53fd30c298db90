"""On/off environment switches, read one way everywhere.

Runs in every ``import torch`` (the entry point reads ``TORCHADA_ACTIVE`` and
``TORCHADA_SIMULATE``), so a well-formed value costs one dictionary lookup and a set membership.
A value that is neither on nor off is a user's typo (``TORCHADA_SIMULATE=ture``): it counts as off,
and a warning naming the variable and the accepted values is given once per process and variable.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Sequence

if TYPE_CHECKING:
    from .tables import Switch

ON = frozenset(("1", "true", "yes", "on"))
OFF = frozenset(("", "0", "false", "no", "off"))


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
    if value not in OFF:
        from .warn import warn_once  # only for a bad value: the start-up path stays small

        warn_once(
            ("switch", name, raw),
            f"{name}={raw!r} is not an on/off value, so it counts as {'on' if default else 'off'}"
            f"; use {name}=1 to turn it on or {name}=0 to turn it off",
            RuntimeWarning,
            stacklevel=2,
        )
    return default if value not in OFF else False


def switches() -> List["Switch"]:
    """Every environment variable torchada reads, as declared in ``tables/switches.json`` (read
    on first use: the start-up path only ever calls :func:`flag`).

    Example::

        >>> any(s.name == "TORCHADA_SIMULATE" for s in switches())
        True
    """
    from . import tables as _tables

    return list(_tables.load("switches").switches)


def _declared(name: str) -> "Switch":
    for entry in switches():
        if entry.name == name:
            return entry
    raise KeyError(f"{name} is not declared in torchada/tables/switches.json")


def bad_value(name: str, raw: str, accepted: str) -> ValueError:
    """The one message for a switch set to a value it does not take: the variable, the value,
    what it accepts, and what the switch is for."""
    return ValueError(f"{name}={raw!r} is not valid: use {accepted} ({_declared(name).help})")


def whole_number(name: str, environ: Optional[Mapping[str, str]] = None) -> int:
    """Integer switch ``name`` within its declared range (its default when unset); a bad value
    raises :func:`bad_value`'s ValueError.

    Example::

        >>> whole_number("TORCHADA_SIM_DEVICES", {"TORCHADA_SIM_DEVICES": "4"})
        4
    """
    entry = _declared(name)
    low, high = entry.min, entry.max
    assert low is not None and high is not None  # an int switch declares both
    raw = (os.environ if environ is None else environ).get(name, entry.default)
    value = raw.strip()
    # str.isdigit accepts '²' and other digits int() refuses: ASCII digits only.
    if not (value.isascii() and value.isdigit()) or not low <= int(value) <= high:
        raise bad_value(name, raw, f"a whole number from {low} to {high}")
    return int(value)


def choice(
    name: str, environ: Optional[Mapping[str, str]] = None, normalise: Any = str.strip
) -> Optional[str]:
    """Choice switch ``name``: one of its declared choices after ``normalise``, or None when
    unset or empty; another value raises :func:`bad_value`'s ValueError.

    Example::

        >>> choice("TORCHADA_PLATFORM", {"TORCHADA_PLATFORM": " cpu "})
        'cpu'
    """
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None or not raw.strip():
        return None
    value = normalise(raw)
    choices: Sequence[str] = _declared(name).choices or ()
    if value not in choices:
        raise bad_value(name, raw, "one of " + ", ".join(repr(c) for c in choices))
    return value


def markdown_table() -> str:
    """The README's table of switches, generated from the declarations."""
    lines = ["| variable | values | default | effect |", "|---|---|---|---|"]
    for entry in switches():
        if entry.internal:
            continue
        kind = entry.kind
        if kind == "flag":
            values = "on/off"
        elif kind == "choice":
            values = " \\| ".join(f"`{c}`" for c in entry.choices or ())
        elif kind == "int":
            values = f"{entry.min}-{entry.max}"
        elif kind == "list":
            values = "indices, comma-separated"
        elif entry.pattern is not None:
            values = f"`{entry.pattern}`"
        else:
            values = kind
        lines.append(f"| `{entry.name}` | {values} | {entry.default} | {entry.help} |")
    return "\n".join(lines)
