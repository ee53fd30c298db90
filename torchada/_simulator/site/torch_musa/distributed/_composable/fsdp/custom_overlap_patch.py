"""torch_musa's FSDP2 overlap settings: which streams FSDP2's communication runs on, and the
FSDPCommContext (and, up to 2.9.1.post1, FSDPState) methods it replaces to pick them.

torch_musa imports this module at the first ``fully_shard`` call, so the environment is read
then: ``TORCH_MUSA_FSDP2_OVERLAP_LEVEL`` (0 to 4; 0, no overlap, is the default) or the older
``TORCH_MUSA_FSDP2_DISABLE_OVERLAP=0`` (level 4). The replacements are process-wide and not keyed
on the mesh: what torch_musa does to the streams it does for a CPU mesh too. Its release decides
their shape (``fsdp2_patch`` in releases.json):

- "2.7.1": ``FSDPCommContext.lazy_init(self)`` raises "FSDP requires MUSA for streams" where MUSA
  is not available, else makes ``torch.musa`` streams; ``FSDPState._init_shared_state`` (which
  calls it without a device) and ``FSDPState._pre_forward`` are replaced too.
- "2.11.0.post2": ``lazy_init(self, device)`` ignores ``device`` and always makes ``torch.musa``
  streams; the FSDPState methods are torch's.

Not modelled: ce_comm (a separate package; without it, torch_musa's per-layer collectives are
torch's default all-gather and reduce-scatter, which torch uses anyway) and 2.11.0.post2's
TORCH_MUSA_FSDP2_COMM_TYPE (symmetric-memory collectives). What the replacements leave alone runs
as the installed torch's own method (torchada._simulator.fsdp2 says why).
"""

import importlib
import os
import warnings
from enum import Enum

import torch

# The module, not FSDPState: 2.11.0.post2's custom_overlap_patch.py (@d77e3ac) binds no FSDPState.
from torch.distributed.fsdp._fully_shard import _fsdp_state
from torch.distributed.fsdp._fully_shard._fsdp_param_group import FSDPCommContext

__all__ = ["_apply_custom_overlap_patch", "FSDP2OverlapLevel", "_FSDP2_OVERLAP_LEVEL"]


class FSDP2OverlapLevel(Enum):
    """How much of FSDP2's communication overlaps computation (TORCH_MUSA_FSDP2_OVERLAP_LEVEL)."""

    NO_OVERLAP = 0  # every collective and copy on the current stream (the default)
    OVERLAP_FSDP_COMM_ONLY = 1  # all-gather/reduce-scatter on one side stream
    OVERLAP_FSDP_COMM_COPY_IN_WITH_COPY_OUT = 2  # copy-in joins that side stream
    OVERLAP_FSDP_COMM_COPY_IN_WITH_COMM = 3  # copy-in on a stream of its own
    OVERLAP_HSDP_COMM = 4  # torch's own layout: four streams
    END = 5


def _get_fsdp2_overlap_level() -> FSDP2OverlapLevel:
    raw = os.environ.get("TORCH_MUSA_FSDP2_OVERLAP_LEVEL")
    if raw is not None:
        level = int(raw)
        assert level < FSDP2OverlapLevel.END.value
        if level == 1:
            warnings.warn(
                "users should set prefetch order manually if "
                "using FSDP2OverlapLevel.OVERLAP_FSDP_COMM_ONLY"
            )
        # torch_musa maps 0 to 3 to their levels and anything else below 5 to the last one.
        return FSDP2OverlapLevel(level) if 0 <= level <= 3 else FSDP2OverlapLevel.OVERLAP_HSDP_COMM
    if os.environ.get("TORCH_MUSA_FSDP2_DISABLE_OVERLAP", "1") == "0":
        warnings.warn(
            "TORCH_MUSA_FSDP2_DISABLE_OVERLAP env will be deprecated in the future, use "
            "TORCH_MUSA_FSDP2_OVERLAP_LEVEL instead"
        )
        return FSDP2OverlapLevel.OVERLAP_HSDP_COMM
    return FSDP2OverlapLevel.NO_OVERLAP


_FSDP2_OVERLAP_LEVEL = _get_fsdp2_overlap_level()


if importlib.import_module("torchada._simulator.fsdp2").shape() == "2.7.1":

    def comm_context_lazy_init(self):
        """FSDP2's streams, from torch.musa: MUSA is required."""
        if not torch.musa.is_available():
            raise RuntimeError("FSDP requires MUSA for streams")
        importlib.import_module("torchada._simulator.fsdp2").set_musa_streams(
            self, _FSDP2_OVERLAP_LEVEL.value
        )

    def _fsdp_state_init_shared_state(self) -> None:
        # torch_musa's calls lazy_init() without the state's device; the rest (sharing the
        # contexts with every state and parameter group) is the installed torch's own.
        self._comm_ctx.lazy_init()
        ctx = self._comm_ctx
        ctx.lazy_init = lambda *args: None  # torch's own call of it is done already
        try:
            importlib.import_module("torchada._simulator.fsdp2").torch_own(
                _fsdp_state.FSDPState, "_init_shared_state"
            )(self)
        finally:
            del ctx.lazy_init

    def _pre_forward(self, module, args, kwargs):
        # torch_musa's adds its ce_comm collectives to torch's (not modelled: nothing without it).
        return importlib.import_module("torchada._simulator.fsdp2").torch_own(
            _fsdp_state.FSDPState, "_pre_forward"
        )(self, module, args, kwargs)

else:

    def comm_context_lazy_init(self, device):
        """FSDP2's streams, from torch.musa whatever ``device`` is."""
        importlib.import_module("torchada._simulator.fsdp2").set_musa_streams(
            self, _FSDP2_OVERLAP_LEVEL.value
        )


def _apply_custom_overlap_patch():
    sim = importlib.import_module("torchada._simulator.fsdp2")
    if sim.shape() == "2.7.1":
        sim.replace(_fsdp_state.FSDPState, "_init_shared_state", _fsdp_state_init_shared_state)
        sim.replace(_fsdp_state.FSDPState, "_pre_forward", _pre_forward)
    sim.replace(FSDPCommContext, "lazy_init", comm_context_lazy_init)
