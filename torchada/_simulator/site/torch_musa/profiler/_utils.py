"""torch.profiler._utils.BasicEvaluation with the device's events named ``musa_events``."""

import torch  # noqa: F401  (bound as in torch_musa)
from torch.profiler import _utils

EventKey = _utils.EventKey
EventMetrics = _utils.EventMetrics
Interval = _utils.Interval


class BasicEvaluation(_utils.BasicEvaluation):
    def __init__(self, prof):
        super().__init__(prof)
        # Kernel launches and kernels the profiler saw on the device. The simulated device runs
        # its kernels on the host, so the profiler records none and this list stays empty.
        self.musa_events = self.cuda_events
