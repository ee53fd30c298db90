import warnings

import torch

from .common import amp_definitely_not_available  # noqa: F401


class GradScaler(torch.amp.GradScaler):
    def __init__(
        self,
        init_scale=2.0**16,
        growth_factor=2.0,
        backoff_factor=0.5,
        growth_interval=2000,
        enabled=True,
    ):
        if enabled and not torch.musa.is_available():
            warnings.warn(
                "torch.musa.amp.GradScaler is enabled, but MUSA is not available. Disabling.",
                stacklevel=2,
            )
            enabled = False
        super().__init__(
            "musa",
            init_scale=init_scale,
            growth_factor=growth_factor,
            backoff_factor=backoff_factor,
            growth_interval=growth_interval,
            enabled=enabled,
        )
