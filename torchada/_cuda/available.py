"""``torch.cuda.is_available()`` on MUSA: True where the MUSA device is, so that a CUDA program's
``"cuda" if torch.cuda.is_available() else "cpu"`` runs on the GPU it can use.

Some callers mean NVIDIA's own stack by "CUDA available" (a CUDA-only kernel library's import
guard, NVRTC, ``nvidia-smi``): ``tables/nvidia_callers.json`` lists them, and inside those
functions the answer is torch's own (False on MUSA). The caller is read from the calling frames
when the question is asked, so nothing is patched in those libraries: the answer needs no lock,
is right in every thread and for libraries imported at any time, and ``disable()`` undoes it by
putting torch's ``is_available`` back like any other redirected name.
"""

from __future__ import annotations

import functools
import sys
from types import FrameType, ModuleType
from typing import Callable, Dict, FrozenSet, Mapping, Optional, Tuple

from .._core import tables as _tables
from .._core.env import flag

#: Code objects carry their qualified name from Python 3.11; before, only the plain name, so a
#: row's ``Class.method`` is matched by ``method`` in its module there.
_HAS_QUALNAME = hasattr((lambda: None).__code__, "co_qualname")


def _row_name(function: str) -> str:
    return function if _HAS_QUALNAME else function.rsplit(".", 1)[-1]


@functools.lru_cache(maxsize=None)
def _callers(question: str) -> Tuple[FrozenSet[str], Dict[Tuple[str, str], int], int]:
    """For one question: (modules named in its rows, {(module, function): frames up it may
    sit}, the deepest)."""
    if question not in _tables.CALLER_QUESTIONS:
        raise ValueError(f"{question!r} is not one of {_tables.CALLER_QUESTIONS}")
    rows = [r for r in _tables.load("nvidia_callers").callers if question in r.questions]
    table = {(r.module, _row_name(r.function)): r.depth for r in rows}
    return frozenset(r.module for r in rows), table, max(table.values(), default=0)


def _qualname(frame: FrameType) -> str:
    code = frame.f_code
    return code.co_qualname if _HAS_QUALNAME else code.co_name  # type: ignore[attr-defined]


def nvidia_caller(
    frame: Optional[FrameType], question: str = "is_available"
) -> Optional[Tuple[str, str]]:
    """The table's ``(module, function)`` for ``question`` that ``frame`` (the caller of the
    function that answers it) or one of the frames above it belongs to, if any. Looks only as
    far up as the deepest row allows, and at a frame's function only when its module is in the
    table: a few dictionary lookups.

    Example::

        >>> import sys
        >>> nvidia_caller(sys._getframe()) is None
        True
        >>> nvidia_caller(sys._getframe(), "capability") is None
        True
    """
    modules, rows, deepest = _callers(question)
    depth = 1
    while frame is not None and depth <= deepest:
        module = frame.f_globals.get("__name__")
        if module in modules:
            name = _qualname(frame)
            allowed = rows.get((module, name))
            if allowed is not None and depth <= allowed:
                return module, name
        frame = frame.f_back
        depth += 1
    return None


def is_available_for(musa_is_available: Callable[[], bool], original: ModuleType) -> Callable:
    """``torch.cuda.is_available`` as torchada serves it: ``musa_is_available()``, except inside
    the functions of ``tables/nvidia_callers.json``, where it is torch's own answer.

    Example::

        >>> import torch
        >>> f = is_available_for(lambda: True, torch.cuda)  # doctest: +SKIP
        >>> f()  # doctest: +SKIP
        True
    """
    torch_answer = original.is_available
    getframe = sys._getframe

    @functools.wraps(torch_answer)
    def is_available() -> bool:
        if nvidia_caller(getframe(1)) is not None:
            return torch_answer()
        return musa_is_available()

    is_available.__torchada_musa__ = musa_is_available  # type: ignore[attr-defined]
    return is_available


def answers_for_musa(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether ``torch.cuda.is_available()`` answers for the MUSA device (the default), in
    ``environ`` (default: this process's). ``TORCHADA_FORCE_CUDA_AVAILABLE=0`` (the runner's
    ``--no-cuda-available``) keeps torch's own answer, False on MUSA, as the published adapter
    gives.

    Example::

        >>> answers_for_musa({"TORCHADA_FORCE_CUDA_AVAILABLE": "0"})
        False
        >>> answers_for_musa({})
        True
    """
    return flag("TORCHADA_FORCE_CUDA_AVAILABLE", environ, default=True)


def served() -> Callable[[], bool]:
    """What the ``torch.cuda`` proxy serves as ``is_available`` (its row in torch_cuda.json).

    Example::

        >>> import torch, torchada  # doctest: +SKIP
        >>> torch.cuda.is_available()  # doctest: +SKIP
        True
    """
    import torch_musa

    from .redirect import original_module

    original = original_module("torch.cuda")
    if not answers_for_musa():
        return original.is_available
    return is_available_for(torch_musa.is_available, original)
