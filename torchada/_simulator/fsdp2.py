"""torch's own FSDP2 methods, kept when the simulated torch_musa replaces them.

torch_musa's FSDP2 replacements (``torch_musa/distributed/_composable/fsdp/``) are written against
the FSDP2 internals of the torch a release pairs with, and those internals change from one torch
to the next (a world-size-1 fast path, several parameter groups per state, new FSDPCommContext
fields). The simulated replacements keep what torch_musa's do differently (the streams they pick,
what they skip, their defects) and run the rest as the installed torch's own method does: that
method is kept here, outside the torch_musa namespace, which holds only torch_musa's names.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

_kept: Dict[Tuple[type, str], Callable] = {}


def replace(cls: type, name: str, new: Callable) -> None:
    """Set ``cls.name`` to ``new`` process-wide, as torch_musa does, keeping torch's own method
    (the one there before the first replacement).

    Example::

        >>> class C:
        ...     def f(self):
        ...         return "torch"
        >>> replace(C, "f", lambda self: "musa")
        >>> C().f(), torch_own(C, "f")(C())
        ('musa', 'torch')
    """
    _kept.setdefault((cls, name), cls.__dict__[name])
    setattr(cls, name, new)


def torch_own(cls: type, name: str) -> Callable[..., Any]:
    """torch's own ``cls.name``, as it was before torch_musa replaced it (see :func:`replace`)."""
    return _kept.get((cls, name)) or cls.__dict__[name]


def shape() -> str:
    """The shape of the simulated release's patches (``fsdp2_patch`` in releases.json)."""
    from . import state

    return state.config.facts["fsdp2_patch"]


def set_musa_streams(ctx: Any, level: int) -> None:
    """torch_musa's streams for overlap ``level`` (0 to 4) on the FSDPCommContext ``ctx``.

    The streams come first (a missing MUSA fails there, as in torch_musa). torch's own lazy init
    then makes the context's other fields, which differ per torch version, and torch_musa's
    streams replace torch's. torch_musa sets no device handle: each parameter group's lazy init
    sets it from the group's own device, as torch's does where it is missing.
    """
    import torch

    current = torch.musa.current_stream()

    def side() -> Any:
        return torch.musa.Stream(priority=-1)

    # (all-gather copy-in, all-gather, reduce-scatter, all-reduce)
    if level == 0:
        streams = (current, current, current, current)
    elif level == 1:
        gather = side()
        streams = (current, gather, gather, current)
    elif level == 2:
        gather = side()
        streams = (gather, gather, gather, current)
    elif level == 3:
        gather = side()
        streams = (side(), gather, gather, current)
    else:
        streams = (side(), side(), side(), torch.musa.Stream())
    torch_own(type(ctx), "lazy_init")(ctx, torch.device("musa"))
    ctx.__dict__.pop("device_handle", None)
    (
        ctx.all_gather_copy_in_stream,
        ctx.all_gather_stream,
        ctx.reduce_scatter_stream,
        ctx.all_reduce_stream,
    ) = streams
