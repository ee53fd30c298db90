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


@pytest.fixture(scope="module")
def loaders(libs):
    from torchada._libraries.ctypes_bindings import _RealCDLL
    from torchada._simulator import sdk

    path = str(sdk.library_paths()["libmusart.so"])
    # ctypes' own CDLL and its __init__ as it is without torchada (wrapped while torchada is on).
    plain_init = getattr(_RealCDLL.__init__, "__wrapped__", _RealCDLL.__init__)

    def plain():
        lib = _RealCDLL.__new__(_RealCDLL)
        plain_init(lib, path)
        return lib

    def through_torchada():
        return sys.modules["ctypes"].CDLL("libcudart.so.12")

    return plain, through_torchada


@pytest.mark.benchmark(group="ctypes: load the runtime library")
def test_plain_load(benchmark, loaders):
    mark(benchmark, "baseline")
    benchmark(loaders[0])


@pytest.mark.benchmark(group="ctypes: load the runtime library")
def test_load_through_torchada(benchmark, loaders):
    mark(benchmark, "candidate", target=1.2)
    benchmark(loaders[1])
