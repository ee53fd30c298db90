"""torch's profiler anti-patterns for MUSA: the copy, TF32 and fp16-alignment checks measure and
advise on MUSA devices (muDNN's TF32 switch, tensors made on "musa")."""

import math

import torch
from torch.profiler import _pattern_matcher

from torchada._simulator import support as _support

Pattern = _pattern_matcher.Pattern


class ExtraMUSACopyPattern(_pattern_matcher.ExtraCUDACopyPattern):
    def __init__(self, prof, should_benchmark=False):
        super().__init__(prof, should_benchmark)
        self.name = "Extra MUSA Copy Pattern"
        self.description = (
            "Filled a CPU tensor and immediately moved it to the MUSA device. Please initialize "
            "it on the device."
        )

    def benchmark(self, events):
        factors = {}
        for shape in {_pattern_matcher.input_shapes(event) for event in events}:
            size = shape[0]
            moved = _support.mean_time('torch.ones(size).to("musa")', size=size)
            direct = _support.mean_time('torch.ones(size, device="musa")', size=size)
            factors[shape] = direct / moved
        return factors


class FP32MatMulPattern(_pattern_matcher.FP32MatMulPattern):
    def __init__(self, prof, should_benchmark=False):
        super().__init__(prof, should_benchmark)
        self.description = (
            "You are currently using a MUSA device that supports TF32. "
            "Please enable TF32 by setting 'torch.backends.mudnn.allow_tf32 = True'"
        )

    @property
    def skip(self):
        return not torch.musa.is_tf32_supported() or not self.prof.record_shapes

    def match(self, event):
        # muDNN, not cuBLAS, decides TF32 on MUSA: an fp32 mm run with it off is the match.
        return (
            event.tag == _pattern_matcher._EventType.TorchOp
            and event.name == "aten::mm"
            and not torch.backends.mudnn.allow_tf32
        )

    def report(self, event):
        return self.description

    def benchmark(self, events):
        factors = {}
        for shape in {_pattern_matcher.input_shapes(event) for event in events}:
            a = torch.randn(shape[0], device="musa", dtype=torch.float32)
            b = torch.randn(shape[1], device="musa", dtype=torch.float32)
            before = torch.backends.mudnn.allow_tf32
            try:
                torch.backends.mudnn.allow_tf32 = False
                fp32 = _support.mean_time("torch.mm(a, b)", a=a, b=b)
                torch.backends.mudnn.allow_tf32 = True
                tf32 = _support.mean_time("torch.mm(a, b)", a=a, b=b)
            finally:
                torch.backends.mudnn.allow_tf32 = before
            factors[shape] = tf32 / fp32
        return factors


class MatMulDimInFP16Pattern(_pattern_matcher.MatMulDimInFP16Pattern):
    def benchmark(self, events):
        def aligned(dims):
            return [8 * math.ceil(dim / 8) for dim in dims]

        factors = {}
        for shape in {_pattern_matcher.input_shapes(event) for event in events}:
            half = {"device": "musa", "dtype": torch.float16}
            a, b = torch.randn(shape[0], **half), torch.randn(shape[1], **half)
            as_is = _support.mean_time("torch.mm(a, b)", a=a, b=b)
            a, b = torch.randn(aligned(shape[0]), **half), torch.randn(aligned(shape[1]), **half)
            factors[shape] = _support.mean_time("torch.mm(a, b)", a=a, b=b) / as_is
        return factors


# torch's report, run with the MUSA patterns in place of its CUDA ones.
report_all_anti_patterns = _support.with_globals(
    _pattern_matcher.report_all_anti_patterns,
    ExtraCUDACopyPattern=ExtraMUSACopyPattern,
    FP32MatMulPattern=FP32MatMulPattern,
    MatMulDimInFP16Pattern=MatMulDimInFP16Pattern,
)
