"""The simulator itself: per-op cost vs plain CPU, warm load, and (opt-in) a cold native build."""

import os

import pytest
import torch
from conftest import fresh_process_seconds, mark


@pytest.fixture(scope="module")
def tensors(musa_sim):
    cpu = (torch.randn(16, 16), torch.randn(16, 16))
    return cpu, tuple(t.to("musa") for t in cpu)


@pytest.mark.benchmark(group="sim: 16x16 add, musa vs cpu")
def test_add_cpu(benchmark, tensors):
    mark(benchmark, "baseline")
    a, b = tensors[0]
    benchmark(torch.add, a, b)


@pytest.mark.benchmark(group="sim: 16x16 add, musa vs cpu")
def test_add_musa(benchmark, tensors):
    mark(benchmark, "candidate")
    a, b = tensors[1]
    benchmark(torch.add, a, b)


@pytest.mark.benchmark(group="sim: empty(8), musa vs cpu")
def test_empty_cpu(benchmark, musa_sim):
    mark(benchmark, "baseline")
    benchmark(torch.empty, 8)


@pytest.mark.benchmark(group="sim: empty(8), musa vs cpu")
def test_empty_musa(benchmark, musa_sim):
    mark(benchmark, "candidate")
    benchmark(torch.empty, 8, device="musa")


@pytest.mark.benchmark(group="sim: import (fresh process, warm cache)")
def test_import_plain_torch(benchmark):
    mark(benchmark, "baseline")
    benchmark.pedantic(fresh_process_seconds, args=(["-c", "import torch"],), rounds=5)


@pytest.mark.benchmark(group="sim: import (fresh process, warm cache)")
def test_import_simulated(benchmark):
    mark(benchmark, "candidate")
    benchmark.pedantic(
        fresh_process_seconds, args=(["-c", "import torch"], {"TORCHADA_SIMULATE": "1"}), rounds=5
    )


@pytest.mark.skipif(
    not os.environ.get("TORCHADA_BENCH_COLD_BUILD"),
    reason="a cold build takes about a minute: set TORCHADA_BENCH_COLD_BUILD=1",
)
@pytest.mark.benchmark(group="sim: cold native build")
def test_cold_build(benchmark, tmp_path):
    def build():
        cache = tmp_path / f"cache{len(os.listdir(tmp_path))}"
        fresh_process_seconds(
            ["-c", "import torch"], {"TORCHADA_SIMULATE": "1", "TORCHADA_CACHE_DIR": str(cache)}
        )

    benchmark.pedantic(build, rounds=1)
