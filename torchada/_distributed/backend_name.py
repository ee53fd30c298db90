"""The name a CUDA program gets for its process groups on MUSA: the one CUDA gives.

A group the program made as "nccl" runs MCCL (:mod:`.c10d` translates the name), and torch
records "mccl". CUDA code asks the name to decide where its tensors live
(``"cuda" if dist.get_backend() == "nccl" else "cpu"``) or which collective to run, so the
program is told what CUDA tells it: ``dist.get_backend()`` is ``"nccl"`` (``Backend.NCCL``
itself), ``get_backend_config()`` ``"cuda:nccl"``, a ``"cuda:nccl,cpu:gloo"`` group says so,
and ``ProcessGroup.name()`` / ``_get_backend_name()`` are ``"nccl"`` for a group MCCL serves
(docs/distributed.md has the table, measured on CUDA).

Some callers would take an NVIDIA-only path on "nccl" (torch's debug hashing of object
collectives, on a torch with NCCL built in): ``tables/nvidia_callers.json`` lists them under the
question ``backend_name``, and inside them the answer is torch's own, read from the calling
frames as for ``torch.cuda.is_available()``. A group made as "mccl" answers "nccl" too: CUDA
code makes one from ``Backend.default_device_backend_map["cuda"]`` (Lightning's DDP does), which
says "mccl" while torchada is on (:mod:`.backend_map`), and gets "nccl" from the same call on
CUDA. ``TORCHADA_BACKEND_NAME=mccl`` keeps torch's own answer everywhere, as the published
torchada gives (for code written for torch_musa that compares the name with "mccl").
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

import torch.distributed as _dist
from torch.distributed import distributed_c10d as _c10d

from .._core.env import choice, flag
from .._cuda.available import nvidia_caller

if TYPE_CHECKING:
    from .._core.patcher import Patcher

SWITCH = "TORCHADA_BACKEND_NAME"
#: MUSA's spelling -> CUDA's, for backends and device types in a name.
CUDA_SPELLING = {"mccl": "nccl", "musa": "cuda"}
_QUESTION = "backend_name"

# torch's own functions, before install() replaces them in their modules.
_torch_get_backend = _c10d.get_backend
_torch_get_backend_config = _c10d.get_backend_config


def published(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether groups answer with torch's own name, "mccl" (``TORCHADA_BACKEND_NAME=mccl``, as
    the published torchada does), rather than CUDA's (the default).

    Example::

        >>> published({"TORCHADA_BACKEND_NAME": "mccl"}), published({})
        (True, False)
    """
    return choice(SWITCH, environ, normalise=lambda raw: raw.strip().lower()) == "mccl"


def active(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether programs get CUDA's names: not switched to the published answer, and the
    subsystem not left out (``TORCHADA_DISABLE_BACKEND_NAME``).

    Example::

        >>> active({"TORCHADA_DISABLE_BACKEND_NAME": "1"})
        False
    """
    return not published(environ) and not flag("TORCHADA_DISABLE_BACKEND_NAME", environ)


def cuda_spelling(name: str) -> str:
    """``name`` (a backend or a ``device:backend,...`` map) as CUDA spells it.

    Example::

        >>> cuda_spelling("mccl"), cuda_spelling("musa:mccl,cpu:gloo"), cuda_spelling("gloo")
        ('nccl', 'cuda:nccl,cpu:gloo', 'gloo')
    """
    if ":" not in name:
        return CUDA_SPELLING.get(name, name)
    pairs = (item.partition(":") for item in name.split(","))
    return ",".join(f"{CUDA_SPELLING.get(d, d)}:{CUDA_SPELLING.get(b, b)}" for d, _, b in pairs)


@functools.lru_cache(maxsize=64)
def _as_backend(name: str) -> str:
    # Backend("nccl") is Backend.NCCL itself, so that ``is`` comparisons hold.
    return _dist.Backend(cuda_spelling(name))


def _for_program(truth: str, frame: Any) -> str:
    """The name the caller at ``frame`` gets for a group whose name torch says is ``truth``."""
    if "mccl" not in truth:
        return truth
    if nvidia_caller(frame, _QUESTION) is not None:
        return truth
    return _as_backend(truth)


@functools.wraps(_torch_get_backend)
def get_backend(group: Any = None) -> str:
    truth = _torch_get_backend(group)
    if "mccl" not in truth:  # the common answers cost one substring test
        return truth
    return _for_program(truth, sys._getframe(1))


@functools.wraps(_torch_get_backend_config)
def get_backend_config(group: Any = None) -> str:
    truth = _torch_get_backend_config(group)
    return _for_program(truth, sys._getframe(1))


def _group_name(method: Callable[[Any], str]) -> Callable[[Any], str]:
    """``ProcessGroup.name`` / ``_get_backend_name``: "nccl" for a group MCCL serves, as CUDA
    names a group NCCL serves (also one made with no backend or a device map)."""

    @functools.wraps(method)
    def name(self: Any) -> str:
        truth = method(self)
        config = _c10d._world.pg_backend_config.get(self)
        if config is None or "mccl" not in config:
            return truth
        if nvidia_caller(sys._getframe(1), _QUESTION) is not None:
            return truth
        return "nccl"

    return name


def served_get_backend() -> Callable[..., str]:
    """What ``torch.distributed`` serves as ``get_backend`` (its row in torch_distributed.json).

    Example::

        >>> served_get_backend().__name__
        'get_backend'
    """
    return get_backend if active() else _torch_get_backend


def served_get_backend_config() -> Callable[..., str]:
    """What ``torch.distributed`` serves as ``get_backend_config``, as :func:`served_get_backend`.

    Example::

        >>> served_get_backend_config().__name__
        'get_backend_config'
    """
    return get_backend_config if active() else _torch_get_backend_config


def install(patcher: Patcher) -> None:
    """Give programs CUDA's names wherever torch's functions are reached from (``torch.distributed``
    is served from its table), unless ``TORCHADA_BACKEND_NAME=mccl``; ``patcher`` undoes it.

    Example::

        >>> dist.init_process_group("nccl")  # on MUSA  # doctest: +SKIP
        >>> dist.get_backend()  # doctest: +SKIP
        'nccl'
    """
    if published() or not _dist.is_available():
        return
    from .._cuda.redirect import original_module

    for module in (_c10d, original_module("torch.distributed")):
        patcher.set_attr(module, "get_backend", get_backend)
        patcher.set_attr(module, "get_backend_config", get_backend_config)
    group = _c10d.ProcessGroup
    for method in ("name", "_get_backend_name"):
        if hasattr(group, method):  # _get_backend_name: torch 2.2+
            patcher.set_attr(group, method, _group_name(getattr(group, method)))
