"""What the running torch offers, tested by feature, never by version number, and the one place
where a piece of torchada that cannot install on this torch says so.

torchada runs on every torch a torch_musa release pairs with (2.7.1 through 2.13). Where a torch
lacks something a piece needs (a c10d method, an ATen overload, a Python function), that piece is
left out and everything else installs. It is said once per piece:

- as a WARNING when a CUDA program on this torch loses something by it (torchada cannot give it
  the behaviour it would have on CUDA);
- at INFO when torch itself lacks the API, so a CUDA program on this torch cannot use it either.

``python -m torchada doctor`` lists every piece left out in the process.
"""

from __future__ import annotations

import logging
import threading
from typing import Dict, Optional

logger = logging.getLogger("torchada")

_lock = threading.Lock()
_left_out: Dict[str, str] = {}


def left_out(piece: str, feature: str, loses: Optional[str] = None) -> None:
    """Record that ``piece`` of torchada is not installed because this torch lacks ``feature``,
    and say so once per piece. ``loses`` is what a CUDA program loses by it (then a warning);
    leave it None where torch itself lacks the API.

    Example::

        >>> left_out("torch.mm out_dtype fill", "aten::mm.dtype")  # logged once, at INFO
        >>> "torch.mm out_dtype fill" in left_out_pieces()
        True
    """
    import torch

    with _lock:
        if piece in _left_out:
            return
        _left_out[piece] = feature
    message = "torchada: %s left out: torch %s has no %s"
    if loses:
        logger.warning(message + "; %s", piece, torch.__version__, feature, loses)
    else:
        logger.info(message, piece, torch.__version__, feature)


def left_out_pieces() -> Dict[str, str]:
    """The pieces left out in this process, each with the torch feature it lacked.

    Example::

        >>> left_out_pieces()  # on torch 2.7.1 with the simulator  # doctest: +SKIP
        {'torch.mm/bmm out_dtype fill': 'aten::mm.dtype', ...}
    """
    with _lock:
        return dict(_left_out)


def has_operator(name: str) -> bool:
    """Whether this torch defines the ATen operator overload ``name`` (``"aten::mm.dtype"``; no
    overload means the default one).

    Example::

        >>> has_operator("aten::mm.out")
        True
        >>> has_operator("aten::mm.no_such_overload")
        False
    """
    import torch

    op, _, overload = name.partition(".")
    try:
        torch._C._get_schema(op, overload)
    except RuntimeError:
        return False
    return True
