"""ctypes symbol access: a CUDA name through torchada vs the MUSA name on a raw CDLL."""

import sys

import pytest
from conftest import mark

N = 1000


@pytest.fixture(scope="module")
def libs(musa_sim):
    import ctypes

    import torchada
    from torchada._simulator import sdk

    torchada.enable()
    raw = ctypes.CDLL(str(sdk.library_paths()["libmusart.so"]))
    mapped = sys.modules["ctypes"].CDLL("libcudart.so.12")
    raw.musaMalloc, mapped.cudaMalloc  # first access (resolution) outside the timings
    yield raw, mapped
    torchada.disable()


@pytest.mark.benchmark(group="ctypes: lib.<symbol> x1000")
def test_raw_symbol(benchmark, libs):
    mark(benchmark, "baseline")
    raw = libs[0]

    def loop():
        for _ in range(N):
            raw.musaMalloc

    benchmark(loop)


@pytest.mark.benchmark(group="ctypes: lib.<symbol> x1000")
def test_mapped_symbol(benchmark, libs):
    mark(benchmark, "candidate", target=1.1)
    mapped = libs[1]

    def loop():
        for _ in range(N):
            mapped.cudaMalloc

    benchmark(loop)
