"""torch_musa.profiler: torch's profiler anti-pattern checks (TorchTidy) for MUSA devices."""

import torch

from ._pattern_matcher import (
    ExtraMUSACopyPattern,
    FP32MatMulPattern,
    MatMulDimInFP16Pattern,
    report_all_anti_patterns,
)
from ._utils import BasicEvaluation


def set_profiler_attributes():
    # As torch_musa does at import: torch's checks then name and measure MUSA devices.
    torch.profiler._utils.BasicEvaluation = BasicEvaluation
    matcher = torch.profiler._pattern_matcher
    matcher.ExtraMUSACopyPattern = ExtraMUSACopyPattern
    matcher.FP32MatMulPattern = FP32MatMulPattern
    matcher.MatMulDimInFP16Pattern = MatMulDimInFP16Pattern
    matcher.report_all_anti_patterns = report_all_anti_patterns
