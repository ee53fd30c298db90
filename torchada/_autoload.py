"""The ``torch.backends`` entry point: runs at the end of every ``import torch``.

It costs two environment lookups unless asked for something: ``TORCHADA_SIMULATE=1`` brings the
simulated torch_musa in (as the real torch_musa's own entry point does); ``TORCHADA_ACTIVE=1`` (set
by ``import torchada`` and the runner, so inherited by torchrun workers, spawned processes and
DataLoader workers) turns torchada on in this process too.
"""

from __future__ import annotations

import os


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def autoload() -> None:
    try:
        _autoload()
    finally:
        _forget_package()


def _autoload() -> None:
    if _truthy("TORCHADA_DISABLE"):
        return
    simulate = _truthy("TORCHADA_SIMULATE")
    active = _truthy("TORCHADA_ACTIVE")
    if not (simulate or active):
        return
    from torchada import _activation, _simulator

    if simulate and _simulator.real_torch_musa_spec() is None:
        _simulator.activate()
    if active:
        _activation.enable()


def _forget_package() -> None:
    # Reaching this entry point imported the `torchada` package without running its activation.
    # Forget the package object (its submodules stay loaded), so that the program's own later
    # `import torchada` runs the package again and turns torchada on. Not while that `import
    # torchada` is what brought torch in: the package is then mid-import and activates itself.
    import sys

    package = sys.modules.get("torchada")
    spec = getattr(package, "__spec__", None)
    if package is not None and not getattr(spec, "_initializing", False):
        sys.modules.pop("torchada", None)
