"""On a real NVIDIA CUDA machine: what torchada costs when it has nothing to do.

Skipped without a CUDA device. Fresh processes each: ``import torch`` (+ one CUDA tensor) with and
without ``import torchada``, and a small CUDA training loop run plainly and through the runner.
"""

import pytest
import torch
from conftest import fresh_process_seconds, mark

pytestmark = pytest.mark.skipif(
    not (torch.version.cuda and torch.cuda.is_available()), reason="needs an NVIDIA CUDA device"
)

IMPORT = "import torch; torch.zeros(1, device='cuda')"
LOOP = (
    "import torch\n"
    "m = torch.nn.Linear(1024, 1024).cuda(); o = torch.optim.SGD(m.parameters(), lr=0.1)\n"
    "x = torch.randn(512, 1024, device='cuda')\n"
    "for _ in range(200):\n"
    "    o.zero_grad(); m(x).square().mean().backward(); o.step()\n"
    "torch.cuda.synchronize()\n"
)


@pytest.mark.benchmark(group="cuda: import torch + first CUDA tensor (fresh process)")
def test_import_plain(benchmark):
    mark(benchmark, "baseline")
    benchmark.pedantic(fresh_process_seconds, args=(["-c", IMPORT],), rounds=7)


@pytest.mark.benchmark(group="cuda: import torch + first CUDA tensor (fresh process)")
def test_import_with_torchada(benchmark):
    mark(benchmark, "candidate", target=1.05)
    benchmark.pedantic(fresh_process_seconds, args=(["-c", "import torchada;" + IMPORT],), rounds=7)


@pytest.mark.benchmark(group="cuda: 200-step training loop (fresh process)")
def test_loop_plain(benchmark, tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    mark(benchmark, "baseline")
    benchmark.pedantic(fresh_process_seconds, args=([str(script)],), rounds=5)


@pytest.mark.benchmark(group="cuda: 200-step training loop (fresh process)")
def test_loop_runner(benchmark, tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    mark(benchmark, "candidate", target=1.05)
    benchmark.pedantic(fresh_process_seconds, args=(["-m", "torchada.run", str(script)],), rounds=5)
