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
    mark(benchmark, "candidate", target=2.0)
    a, b = tensors[1]
    benchmark(torch.add, a, b)


@pytest.fixture(scope="module")
def large(musa_sim):
    cpu = {
        "add": (torch.randn(4 << 20), torch.randn(4 << 20)),
        "mm": (torch.randn(512, 512), torch.randn(512, 512)),
    }
    return cpu, {k: tuple(t.to("musa") for t in v) for k, v in cpu.items()}


@pytest.mark.benchmark(group="sim: 4M-element add, musa vs cpu")
def test_large_add_cpu(benchmark, large):
    mark(benchmark, "baseline")
    benchmark(torch.add, *large[0]["add"])


@pytest.mark.benchmark(group="sim: 4M-element add, musa vs cpu")
def test_large_add_musa(benchmark, large):
    mark(benchmark, "candidate", target=1.2)
    benchmark(torch.add, *large[1]["add"])


@pytest.mark.benchmark(group="sim: 512x512 matmul, musa vs cpu")
def test_matmul_cpu(benchmark, large):
    mark(benchmark, "baseline")
    benchmark(torch.mm, *large[0]["mm"])


@pytest.mark.benchmark(group="sim: 512x512 matmul, musa vs cpu")
def test_matmul_musa(benchmark, large):
    mark(benchmark, "candidate", target=1.2)
    benchmark(torch.mm, *large[1]["mm"])


def tiny_training(device: str):
    """The training step's model, optimizer and batch (also timed phase by phase by
    bench/sim_step_phases.py)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 64, device=device), torch.randint(0, 10, (32,), device=device)
    return model, opt, x, y


def _training_step(device: str):
    model, opt, x, y = tiny_training(device)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


@pytest.mark.benchmark(group="sim: tiny model training step, musa vs cpu")
def test_training_step_cpu(benchmark, musa_sim):
    mark(benchmark, "baseline")
    benchmark(_training_step("cpu"))


@pytest.mark.benchmark(group="sim: tiny model training step, musa vs cpu")
def test_training_step_musa(benchmark, musa_sim):
    mark(benchmark, "candidate", target=1.2)
    benchmark(_training_step("musa"))


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
