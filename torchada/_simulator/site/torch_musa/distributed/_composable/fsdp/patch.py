"""torch_musa's FSDP2 patches: ``torch.distributed.fsdp.fully_shard`` becomes a wrapper (with
``functools.wraps``, so ``__wrapped__`` is torch's function) whose first call applies them.

That first call queries the MUSA architecture (torch_musa defers the query so that importing it
does not initialise MUSA), warns below mp_31, replaces the stream set-up (custom_overlap_patch)
and, with no overlap (the default, and always below mp_31), replaces
``FSDPParamGroup.wait_for_unshard`` and ``post_backward`` and assigns ``foreach_all_gather``'s
``__code__``. All of it process-wide, whatever mesh the call and later ones are for. Only
``torch.distributed.fsdp.fully_shard`` is wrapped: the same function reached through
``torch.distributed.fsdp._fully_shard`` or ``torch.distributed._composable.fsdp`` is torch's.

As torch_musa's: below mp_31 the no-overlap choice is local to the set-up, so the streams follow
TORCH_MUSA_FSDP2_OVERLAP_LEVEL still; the ``__code__`` assignment changes nothing, both functions
being ``torch.no_grad()`` wrappers that share one code object (torch's all-gather keeps running,
on the streams lazy_init chose); ``post_backward`` sets ``_traing_state``, so a group's training
state never becomes POST_BACKWARD there. Not modelled: 2.9.1.post1's lazy HSDP all-reduce
(torch_musa/distributed/fsdp/_fully_shard), which only 2-D (replicate x shard) meshes use.
"""

import importlib
import warnings
from functools import wraps

import torch
from torch.distributed.fsdp._fully_shard import fully_shard
from torch.distributed.fsdp._fully_shard._fsdp_common import TrainingState
from torch.distributed.fsdp._fully_shard._fsdp_param_group import FSDPParamGroup

__all__ = ["_apply_fsdp2_patches"]


def wait_for_unshard_non_overlap(self):
    """Copy-out of the all-gather on the current stream, its output freed at once: no stream
    syncs, no all-gather state kept for the next group (torch's keeps it to overlap)."""
    importlib.import_module("torchada._simulator.fsdp2").torch_own(
        FSDPParamGroup, "wait_for_unshard"
    )(self)
    if getattr(self.comm_ctx, "all_gather_state", None) is not None:
        self.comm_ctx.all_gather_state = None


def post_backward_non_overlap(self, *unused):
    """Accumulate, reshard and reduce-scatter the gradients on the streams lazy_init chose."""
    # torch_musa's defect: it sets `_traing_state`, so `_training_state` keeps what it was.
    state = self._training_state
    self._traing_state = TrainingState.POST_BACKWARD
    try:
        importlib.import_module("torchada._simulator.fsdp2").torch_own(
            FSDPParamGroup, "post_backward"
        )(self, *unused)
    finally:
        self._training_state = state


@torch.no_grad()
def foreach_all_gather_non_overlap(
    fsdp_params,
    group,
    async_op,
    all_gather_copy_in_stream,
    all_gather_stream,
    device,
    all_gather_comm,
):
    """Copy-in, all-gather and copy-out all on the current stream, so the result has no event."""
    collectives = torch.distributed.fsdp._fully_shard._fsdp_collectives
    current = torch.musa.current_stream()
    result = collectives.foreach_all_gather(
        fsdp_params, group, async_op, current, current, device, all_gather_comm
    )
    return None if result is None else result._replace(all_gather_event=None)


def _setup_fsdp2_patches():
    from .custom_overlap_patch import (
        _FSDP2_OVERLAP_LEVEL,
        FSDP2OverlapLevel,
        _apply_custom_overlap_patch,
    )

    _apply_custom_overlap_patch()
    level = _FSDP2_OVERLAP_LEVEL  # a local copy: custom_overlap_patch keeps the asked level
    if torch.musa.core._utils._get_musa_arch() < 31:
        level = FSDP2OverlapLevel.NO_OVERLAP
        warnings.warn("The overlapping of FSDP2 was disabled on musa arch older than mp_31")
    if level == FSDP2OverlapLevel.NO_OVERLAP:
        replace = importlib.import_module("torchada._simulator.fsdp2").replace
        collectives = torch.distributed.fsdp._fully_shard._fsdp_collectives
        collectives.foreach_all_gather.__code__ = foreach_all_gather_non_overlap.__code__
        replace(FSDPParamGroup, "wait_for_unshard", wait_for_unshard_non_overlap)
        replace(FSDPParamGroup, "post_backward", post_backward_non_overlap)


def monkey_patched_fully_shard(fully_shard_func):
    """``fully_shard_func`` behind a wrapper that applies torch_musa's patches on its first call
    (again on the next call if they failed)."""
    patched = []

    @wraps(fully_shard_func)
    def wrapper(*args, **kwargs):
        if not patched:
            _setup_fsdp2_patches()
            patched.append(True)
        return fully_shard_func(*args, **kwargs)

    return wrapper


def _apply_fsdp2_patches():
    torch.distributed.fsdp.fully_shard = monkey_patched_fully_shard(fully_shard)
