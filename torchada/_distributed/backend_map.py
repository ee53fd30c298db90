"""torch.distributed's default backend for the "cuda" device type is MCCL while torchada is on.

torch picks a backend by device type wherever none is named (``init_process_group()`` with no
backend, ``new_group(device_id=...)``, DeviceMesh): "cuda" maps to "nccl", which does not exist on
MUSA. The registry row ``torch.distributed.Backend`` (tables/torch_distributed.json) documents this;
``TORCHADA_DISABLE_BACKEND_MAP=1`` leaves it out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._core.patcher import Patcher

#: device type -> backend torchada makes torch.distributed choose for it.
DEVICE_BACKENDS = {"cuda": "mccl"}


def install(patcher: Patcher) -> None:
    """Point ``Backend.default_device_backend_map``'s CUDA entry at MCCL, undone by ``disable()``.

    Example::

        >>> import torch.distributed as dist
        >>> dist.Backend.default_device_backend_map["cuda"]  # on MUSA  # doctest: +SKIP
        'mccl'
    """
    from .._cuda.redirect import original_module

    # torch's own module: the proxy's first use resolves all its names, which is the program's
    # first use to pay for (if any), not every activation.
    mapping = original_module("torch.distributed").Backend.default_device_backend_map
    for device, backend in DEVICE_BACKENDS.items():
        old = mapping.get(device)
        mapping[device] = backend

        def restore(device: str = device, old: "str | None" = old) -> None:
            if old is None:
                mapping.pop(device, None)
            else:
                mapping[device] = old

        patcher.on_undo(restore)
