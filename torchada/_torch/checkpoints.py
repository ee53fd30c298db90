"""Checkpoints: what ``torch.save`` writes for tensors on the MUSA device, and how ``torch.load``
reads a ``map_location`` dict, while torchada is on.

A CUDA program's tensors live on ``musa:N``; torch (and torch_musa) would tag their storages
"musa:N" in the file. That file then fails on an NVIDIA or CPU-only machine without torch_musa
("don't know how to restore data location ... (tagged with musa:0)"), and the program's own
``map_location={"cuda:0": ...}`` or a function that looks for "cuda" misses them. So:

- saving tags storages on the MUSA device "cuda:N", as the same program writes them on CUDA.
  ``TORCHADA_CHECKPOINT_LOCATION=musa`` keeps torch_musa's "musa:N";
- loading: "cuda[:N]" locations restore onto ``musa:N`` through the devices subsystem's
  deserializer (:func:`torchada._devices.install.restore_cuda_location`), honouring
  ``map_location`` as torch does; "musa:N" locations (files written before, or with the switch)
  load as torch_musa loads them;
- a ``map_location`` dict that lacks a location's own key is also looked up under the other
  spelling of the same device ("cuda:1" for a "musa:1" storage, and the other way round), so
  ``{"cuda:1": "cpu"}`` moves an old "musa:1" checkpoint to the CPU. Only a miss is retried:
  a key the dict has keeps torch's meaning.

Tags follow device translation: with the devices subsystem off (``TORCHADA_DISABLE_DEVICES=1``)
"cuda" is not MUSA in this process, and nothing here is installed. :func:`torchada.disable`
removes the tagger and puts torch's ``_get_restore_location`` back.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import torch

if TYPE_CHECKING:
    from .._core.patcher import Patcher

logger = logging.getLogger("torchada")

LOCATION_ENV = "TORCHADA_CHECKPOINT_LOCATION"

_state: Dict[str, Any] = {"backend": None, "style": None}


def location_style() -> Optional[str]:
    """How torchada tags storages on the MUSA device in checkpoints now: ``"cuda"`` (the
    default: "cuda:N"), ``"musa"`` (``TORCHADA_CHECKPOINT_LOCATION=musa``: torch_musa's
    "musa:N"), or None while torchada's checkpoint rule is not installed.

    Example::

        >>> from torchada._torch import checkpoints
        >>> checkpoints.location_style()  # under torchada on MUSA  # doctest: +SKIP
        'cuda'
    """
    return _state["style"]


def _read_style() -> str:
    from .._core.env import choice

    # A bad value raises here, naming the variable and its choices; enable() then undoes all.
    return choice(LOCATION_ENV, normalise=lambda raw: raw.strip().lower()) or "cuda"


def _cuda_tag(storage: Any) -> Optional[str]:
    """Tagger: "cuda:N" for a storage on musa:N; None for any other, which torch's taggers
    (and torch_musa's) then tag as before."""
    device = storage.device
    if device.type != _state["backend"]:
        return None
    return "cuda" if device.index is None else f"cuda:{device.index}"


def _no_restore(storage: Any, location: str) -> None:
    return None  # "cuda" locations are the devices subsystem's deserializer's to restore


def _other_spelling(location: Any) -> Optional[str]:
    """The same device in the other spelling: "musa:N" for "cuda:N" and the other way round
    (also without an index); None for any other location, or once torchada is off."""
    backend = _state["backend"]
    if backend is None or not isinstance(location, str):
        return None
    for this, that in (("cuda", backend), (backend, "cuda")):
        rest = location[len(this) :]
        if location.startswith(this) and (not rest or rest[0] == ":"):
            return that + rest
    return None


class _AliasedLocations(dict):
    """A ``map_location`` dict whose ``get`` (all torch's dict branch calls) also tries the other
    spelling of a location's device when the location itself is not a key."""

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self[key]
        alias = _other_spelling(key)
        if alias is not None and alias in self:
            return self[alias]
        return default


def _register_tagger(patcher: Any) -> None:
    from .._devices.install import register_serialization_package

    # First of all: whichever later entry tags musa storages (torch's PrivateUse1 one at 23,
    # torch_musa's at 999, or another release's) never sees them.
    def priority(taken: List[Any]) -> float:
        return min(taken, default=1) - 1

    register_serialization_package(patcher, priority, _cuda_tag, _no_restore)


def _patch_map_location_dicts(patcher: Any) -> None:
    import torch.serialization

    previous = getattr(torch.serialization, "_get_restore_location", None)
    if previous is None:
        # A torch that resolves map_location elsewhere: dicts keep torch's exact-key lookup.
        logger.debug("torchada: torch.serialization has no _get_restore_location; dicts unaliased")
        return

    def _get_restore_location(map_location: Any) -> Any:
        if isinstance(map_location, dict) and not isinstance(map_location, _AliasedLocations):
            map_location = _AliasedLocations(map_location)
        return previous(map_location)

    _get_restore_location.__doc__ = previous.__doc__
    patcher.set_attr(torch.serialization, "_get_restore_location", _get_restore_location)


def install(patcher: Patcher) -> None:
    from .._devices import install as _devices

    if _devices.path() is None:
        logger.debug("torchada checkpoints: the devices subsystem is off; musa tags are kept")
        return
    style = _read_style()
    _state.update(backend=torch._C._get_privateuse1_backend_name(), style=style)
    patcher.on_undo(lambda: _state.update(backend=None, style=None))
    if style == "cuda":
        _register_tagger(patcher)
    _patch_map_location_dicts(patcher)
    logger.debug("torchada checkpoints: storages on the device are saved as '%s:N'", style)
