"""torch_musa.distributed: registers the mccl backend (the simulator's lives in
torchada._simulator.mccl_backend, outside the torch_musa namespace) and applies torch_musa's
patches of torch.distributed (``_apply_distributed_patch``, called when torch_musa imports).

Of those patches only FSDP2's (``_composable.fsdp.patch``) is modelled. torch_musa applies, in
this order, patches of DeviceMesh's default group, FSDP1's init and runtime (its streams), DTensor
(sharding rules of its fused kernels), FSDP2, the state-dict utilities and the checkpoint's
reduce_scatter: on the simulator the others are torch's own code, unpatched.
"""

import importlib

importlib.import_module("torchada._simulator.mccl_backend")
del importlib


def _apply_distributed_patch():
    from ._composable.fsdp.patch import _apply_fsdp2_patches

    _apply_fsdp2_patches()
