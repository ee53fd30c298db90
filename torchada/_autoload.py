"""The ``torch.backends`` entry point: runs at the end of every ``import torch``.

It costs two environment lookups unless asked for something: ``TORCHADA_SIMULATE=1`` brings the
simulated torch_musa in (as the real torch_musa's own entry point does); ``TORCHADA_ACTIVE=1`` (set
by ``import torchada`` and the runner, so inherited by torchrun workers, spawned processes and
DataLoader workers) turns torchada on in this process too. Whatever else the process does (its own
``import torchada`` before or after torch, an explicit ``import torch_musa`` first), the result is
the one installation a plain ``import torchada`` gives: see :func:`torchada._activation.enable`.
"""

from __future__ import annotations


def autoload() -> None:
    from torchada._core.env import flag

    if flag("TORCHADA_DISABLE"):
        return
    simulate = flag("TORCHADA_SIMULATE")
    active = flag("TORCHADA_ACTIVE")
    if not (simulate or active):
        return
    from torchada import _activation, _simulator

    if active:
        # enable() brings the simulator in itself when asked, after it has chosen the visible
        # devices (a worker's own CUDA_VISIBLE_DEVICES must be read before torch_musa is).
        _activation.enable()
    elif not _simulator.is_active() and _simulator.real_torch_musa_spec() is None:
        _simulator.activate()
