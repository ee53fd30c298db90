"""On a real NVIDIA CUDA machine: what torchada costs when it has nothing to do.

Skipped without a CUDA device. Process start-up varies by hundreds of milliseconds on a GPU host, so
each figure is timed inside fresh processes (perf_counter around the part that differs), with the
plain and torchada runs interleaved (in alternating order, so that drift cancels), and reported as
medians:
- ``import torchada`` after ``import torch`` (budget 3 ms: off MUSA it loads only the platform
  check);
- a 1000-step training loop run plainly vs with ``import torchada`` first: the median of the
  per-pair ratios (target 1.02x).
"""

import statistics

import pytest
import torch
from conftest import child_ms

pytestmark = pytest.mark.skipif(
    not (torch.version.cuda and torch.cuda.is_available()), reason="needs an NVIDIA CUDA device"
)

ROUNDS = 9

IMPORT = """
import time, torch
torch.zeros(1, device="cuda")
t0 = time.perf_counter()
{imports}
print((time.perf_counter() - t0) * 1e3)
"""

LOOP = """
{imports}
import time, torch
m = torch.nn.Linear(1024, 1024).cuda()
o = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(512, 1024, device="cuda")
for _ in range(20):  # warm-up: cuBLAS handles, allocator
    o.zero_grad(); m(x).square().mean().backward(); o.step()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(1000):
    o.zero_grad(); m(x).square().mean().backward(); o.step()
torch.cuda.synchronize()
print((time.perf_counter() - t0) * 1e3)
"""


def _interleaved(template):
    plain, ours = [], []
    for i in range(ROUNDS):
        for which in ("pass", "import torchada")[:: 1 if i % 2 == 0 else -1]:
            (plain if which == "pass" else ours).append(child_ms(template.format(imports=which)))
    return plain, ours


@pytest.mark.benchmark(group="cuda: no-op")
def test_import_torchada_added_ms(benchmark):
    plain, ours = _interleaved(IMPORT)
    added = statistics.median(o - p for p, o in zip(plain, ours))
    benchmark.extra_info.update(added_ms=added, budget_ms=3)
    benchmark.pedantic(lambda: None, rounds=1)
    verdict = "met" if added <= 3 else "NOT MET"
    print(f"\nCUDA: import torchada after torch: {added:.2f} ms (budget 3 ms, {verdict})")


@pytest.mark.benchmark(group="cuda: no-op")
def test_training_loop_ratio(benchmark):
    runs_plain, runs_ours = _interleaved(LOOP)
    ratio = statistics.median(o / p for p, o in zip(runs_plain, runs_ours))
    plain, ours = statistics.median(runs_plain), statistics.median(runs_ours)
    benchmark.extra_info.update(plain_ms=plain, torchada_ms=ours, ratio=ratio, target=1.02)
    benchmark.pedantic(lambda: None, rounds=1)
    verdict = "met" if ratio <= 1.02 else "NOT MET"
    print(
        f"\nCUDA: 1000 steps {plain:.1f} ms plain, {ours:.1f} ms with torchada: {ratio:.3f}x "
        f"(target 1.02, {verdict})"
    )
