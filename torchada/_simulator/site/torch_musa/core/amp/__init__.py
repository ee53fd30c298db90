"""torch.musa.amp (torch_musa/core/amp)."""

from .autocast_mode import autocast, custom_bwd, custom_fwd
from .common import _hook_autocast_common, amp_definitely_not_available  # noqa: F401
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler"]

_hook_autocast_common()
