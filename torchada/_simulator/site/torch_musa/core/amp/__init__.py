"""torch.musa.amp (torch_musa/core/amp)."""

from .autocast_mode import autocast, custom_bwd, custom_fwd  # noqa: F401
from .common import _hook_autocast_common
from .grad_scaler import GradScaler  # noqa: F401

_hook_autocast_common()
