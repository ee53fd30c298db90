"""``torch.cuda.is_available()`` on MUSA: True where the MUSA device is, so that a CUDA program's
``"cuda" if torch.cuda.is_available() else "cpu"`` runs on the GPU it can use.

Some callers mean NVIDIA's own stack by "CUDA available" (a CUDA-only kernel library's import
guard, NVRTC, ``nvidia-smi``): ``tables/nvidia_callers.json`` lists them, and inside those
functions the answer is torch's own (False on MUSA). So does code with its own MUSA branch, written
for the published torchada (docs/musa_branch.md): a function that asks about MUSA itself
(``torch.musa``, ``torch_musa``, ``is_musa()``) and the table's ``musa_branch`` rows.
The caller is read from the calling frames when the question is asked, so nothing is patched in
those libraries: the answer needs no lock, is right in every thread and for libraries imported at
any time, and ``disable()`` undoes it by putting torch's ``is_available`` back like any other
redirected name. The same reading serves the capability and the backend-name questions.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
from types import CodeType, FrameType, ModuleType
from typing import Callable, Dict, FrozenSet, Mapping, Optional, Tuple

from .._core import tables as _tables
from .._core.env import flag

logger = logging.getLogger("torchada")

#: Code objects carry their qualified name from Python 3.11; before, only the plain name, so a
#: row's ``Class.method`` is matched by ``method`` in its module there.
_HAS_QUALNAME = hasattr((lambda: None).__code__, "co_qualname")

#: The switch of the rule for code with its own MUSA branch (the general rule and the
#: ``musa_branch`` rows): ``0`` gives that code CUDA's answers, like any CUDA code.
MUSA_BRANCH_SWITCH = "TORCHADA_MUSA_BRANCH"

#: The names through which a function asks about MUSA itself: ``torch.musa`` (the attribute
#: ``musa``), the ``torch_musa`` module, and the probes projects write (``is_musa()``,
#: ``is_musa_available()``, ``tensor.is_musa``, the published ``is_musa_platform()``).
_MUSA_NAME = re.compile(r"(?:torch_)?musa|_*is_musa\w*")

#: Code that is not a caller: torchada's own (it asks knowingly) and a module's top level, which
#: spans the whole file: a CUDA script's ``import torch_musa`` beside its CUDA code is no branch.
_NOT_A_BRANCH = ("torchada", "torchada_hooks")

# What each question is and what its two answers are, for the debug log.
_ASKED = {
    "is_available": (
        "torch.cuda.is_available()",
        "torch's own answer (False on MUSA)",
        "the MUSA device's answer",
    ),
    "capability": (
        "the compute capability",
        "torch_musa's own numbers",
        "the CUDA capability with the board's features",
    ),
    "backend_name": (
        "a process group's backend name",
        "torch's own name (mccl)",
        "CUDA's name (nccl)",
    ),
}


def _row_name(function: str) -> str:
    return function if _HAS_QUALNAME else function.rsplit(".", 1)[-1]


def musa_branch_rule(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether code with its own MUSA branch gets the answers it was written for (the default):
    a function that asks about MUSA itself, and the ``musa_branch`` rows of
    ``tables/nvidia_callers.json``. ``TORCHADA_MUSA_BRANCH=0`` turns it off.

    Example::

        >>> musa_branch_rule({"TORCHADA_MUSA_BRANCH": "0"}), musa_branch_rule({})
        (False, True)
    """
    return flag(MUSA_BRANCH_SWITCH, environ, default=True)


@functools.lru_cache(maxsize=None)
def _callers(
    question: str,
) -> Tuple[FrozenSet[str], Dict[Tuple[str, str], Tuple[int, bool]], int, bool]:
    """For one question: (modules named in its rows, {(module, function): (frames up it may
    sit, whether it is a musa_branch row)}, the deepest, whether the MUSA-branch rule is on)."""
    if question not in _tables.CALLER_QUESTIONS:
        raise ValueError(f"{question!r} is not one of {_tables.CALLER_QUESTIONS}")
    branch = musa_branch_rule()
    rows = [
        r
        for r in _tables.load("nvidia_callers").callers
        if question in r.questions and (branch or not r.musa_branch)
    ]
    table = {(r.module, _row_name(r.function)): (r.depth, r.musa_branch) for r in rows}
    deepest = max((depth for depth, _ in table.values()), default=0)
    return frozenset(r.module for r in rows), table, deepest, branch


def _qualname(frame: FrameType) -> str:
    code = frame.f_code
    return code.co_qualname if _HAS_QUALNAME else code.co_name  # type: ignore[attr-defined]


def asks_about_musa(code: CodeType) -> Optional[str]:
    """The name through which the function of ``code`` asks about MUSA itself (``is_musa``,
    ``musa`` for ``torch.musa``, ``torch_musa``), or None; read from the names its own code
    uses (``co_names``).

    Example::

        >>> def get_device():
        ...     if torch.cuda.is_available():
        ...         return "cuda"
        ...     return "musa" if is_musa() else "cpu"
        >>> asks_about_musa(get_device.__code__)
        'is_musa'
        >>> asks_about_musa((lambda: torch.cuda.is_available()).__code__) is None
        True
    """
    return next((name for name in code.co_names if _MUSA_NAME.fullmatch(name)), None)


# id(code) -> (code, its MUSA name or None), for each caller seen. Keyed by id, since a code
# object's hash is computed from its contents on every lookup; the entry holds the code object,
# so the id stays its own. Module-level code and torchada's own are None without a look.
_BRANCH_CALLERS: Dict[int, Tuple[CodeType, Optional[str]]] = {}


def _branch_caller(frame: FrameType) -> Optional[str]:
    """The MUSA name ``frame``'s function uses, if it is a function of code with its own MUSA
    branch (not module-level code, not torchada's own); once per code object."""
    code = frame.f_code
    entry = _BRANCH_CALLERS.get(id(code))
    if entry is not None and entry[0] is code:
        return entry[1]
    module = str(frame.f_globals.get("__name__", ""))
    own = module.partition(".")[0] in _NOT_A_BRANCH
    found = None if code.co_name == "<module>" or own else asks_about_musa(code)
    if len(_BRANCH_CALLERS) > 4096:  # code made at run time (exec) must not pile up
        _BRANCH_CALLERS.clear()
    _BRANCH_CALLERS[id(code)] = (code, found)
    return found


_TOLD: set = set()


def _note(frame: FrameType, question: str, truth: bool, why: str) -> None:
    """Say at debug level (the caller checks the level), once per caller code object and
    answer, which answer it got and why."""
    key = (frame.f_code, question, why)
    if key in _TOLD:
        return
    _TOLD.add(key)
    asked, own, device = _ASKED[question]
    code = frame.f_code
    logger.debug(
        "%s asked by %s.%s (%s:%d): %s, because %s",
        asked,
        frame.f_globals.get("__name__"),
        _qualname(frame),
        code.co_filename,
        frame.f_lineno,
        own if truth else device,
        why,
    )


def nvidia_caller(
    frame: Optional[FrameType], question: str = "is_available"
) -> Optional[Tuple[str, str]]:
    """The ``(module, function)`` that gets the truth for ``question`` at ``frame`` (the caller
    of the function that answers it), if any: a row of ``tables/nvidia_callers.json`` that
    ``frame`` or one of the frames above it belongs to (looked for only as far up as the deepest
    row allows, and at a frame's function only when its module is in the table: a few
    dictionary lookups), or ``frame``'s own function where it asks about MUSA itself (code with
    its own MUSA branch: :func:`asks_about_musa`, unless ``TORCHADA_MUSA_BRANCH=0``).

    Example::

        >>> import sys
        >>> nvidia_caller(sys._getframe()) is None
        True
        >>> nvidia_caller(sys._getframe(), "capability") is None
        True
    """
    modules, rows, deepest, branch = _callers(question)
    caller = frame
    depth = 1
    while frame is not None and depth <= deepest:
        module = frame.f_globals.get("__name__")
        if module in modules:
            name = _qualname(frame)
            row = rows.get((module, name))
            if row is not None and depth <= row[0]:
                if caller is not None and logger.isEnabledFor(logging.DEBUG):
                    kind = " (code with its own MUSA branch)" if row[1] else ""
                    _note(caller, question, True, f"of its row {module}:{name}{kind}")
                return module, name
        frame = frame.f_back
        depth += 1
    if caller is None:
        return None
    if branch:
        musa = _branch_caller(caller)
        if musa is not None:
            if logger.isEnabledFor(logging.DEBUG):
                _note(caller, question, True, f"the function asks about MUSA itself ({musa})")
            return caller.f_globals.get("__name__"), _qualname(caller)
    if logger.isEnabledFor(logging.DEBUG):
        _note(caller, question, False, "it is CUDA code (no row, and it does not ask about MUSA)")
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
