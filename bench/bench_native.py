"""Cost of torchada's native library (csrc/torchada_native): cold build, warm load, installing
the operator overrides; and the isfinite override against torch's default on the simulator.

    python -m pytest bench/bench_native.py --benchmark-only -q

Cold build and warm load run in fresh processes against a temporary TORCHADA_CACHE_DIR (the
simulator's own backend comes from the usual cache first, so it is not part of the figures). The
cold build is one round (the library a MUSA user's first run builds: two translation units, one
per core); the warm load is the median of five fresh processes. The figures go to ``extra_info``
(``build_s``, ``build_cpu_s``: the build's user+sys CPU seconds, which hold on a machine shared
with other work where the wall figure does not; ``load_ms``, ``install_ms``) and to the budget
table printed at the end; nothing here is asserted. ``bench/native_units.py`` times each unit.
"""

from __future__ import annotations

import json
import resource
import statistics
import textwrap

import pytest
from conftest import child_last_line, mark

torch = pytest.importorskip("torch")

# 30 s on 2 idle cores: two units that include only the torch headers they use.
COLD_BUDGET_MS = 30_000
WARM_BUDGET_MS = 50  # what loading the cached library may add to a process with torch loaded

PROBE = textwrap.dedent(
    """
    import json, os, sys, time
    from torchada import _simulator
    _simulator.activate()  # the simulator's backend from the usual cache
    os.environ["TORCHADA_CACHE_DIR"] = sys.argv[1]  # the native library from the temporary one
    from torchada._native import build as _build, library as _native
    t = time.perf_counter()
    module = _native.load()
    load_s = time.perf_counter() - t
    assert module is not None, _native.state()
    t = time.perf_counter()
    for entry in module.op_overrides():
        module.install_op_override(entry["name"])
    install_s = time.perf_counter() - t
    built = _build.last_build(_native.LIBRARY_NAME).built
    print(json.dumps({"load_s": load_s, "install_s": install_s, "built": built}))
    """
)

_cache: dict = {}


def _probe(cache_dir: str) -> dict:
    return json.loads(child_last_line(["-c", PROBE, cache_dir], timeout=1800))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("native-cache"))


def _cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def test_cold_build(benchmark, cache_dir):
    # The simulator's backend is built (or found) in the usual cache first: not in the figure.
    child_last_line(["-c", "from torchada import _simulator; _simulator.activate(); print(1)"])
    cpu = _cpu_seconds()
    result = benchmark.pedantic(_probe, args=(cache_dir,), rounds=1, iterations=1)
    cpu = _cpu_seconds() - cpu  # the child's, compilers included; its start-up is a second
    assert result["built"], "the temporary cache was not empty"
    _cache["built"] = True
    benchmark.extra_info.update(
        build_s=round(result["load_s"], 1),
        build_cpu_s=round(cpu, 1),
        added_ms=result["load_s"] * 1000,
        budget_ms=COLD_BUDGET_MS,
        command="python -m pytest bench/bench_native.py --benchmark-only -q",
    )


def test_warm_load(benchmark, cache_dir):
    if not _cache.get("built"):
        _probe(cache_dir)  # run alone: build first, untimed
    results = []

    def once():
        results.append(_probe(cache_dir))

    benchmark.pedantic(once, rounds=5, iterations=1)
    assert not any(r["built"] for r in results)
    load_ms = statistics.median(r["load_s"] for r in results) * 1000
    install_ms = statistics.median(r["install_s"] for r in results) * 1000
    benchmark.extra_info.update(
        load_ms=round(load_ms, 1),
        install_ms=round(install_ms, 3),
        added_ms=load_ms,
        budget_ms=WARM_BUDGET_MS,
    )


# ---------------------------------------------------------------- isfinite on the simulator
@pytest.fixture(scope="module")
def native(musa_sim):
    from torchada._native import library as _native

    module = _native.load()
    if module is None:
        pytest.skip(f"native library unavailable: {_native.state()}")
    return module


@pytest.fixture
def isfinite_override(native):
    native.install_op_override("isfinite")
    yield
    native.remove_op_override("isfinite")


@pytest.mark.parametrize("n", [16, 1 << 20])
def test_isfinite_default(benchmark, native, n):
    x = torch.randn(n, device="musa")
    benchmark.group = f"isfinite float32[{n}] on the simulator"
    mark(benchmark, "baseline")
    benchmark(torch.isfinite, x)


@pytest.mark.parametrize("n", [16, 1 << 20])
def test_isfinite_override(benchmark, native, isfinite_override, n):
    x = torch.randn(n, device="musa")
    benchmark.group = f"isfinite float32[{n}] on the simulator"
    mark(benchmark, "candidate", target=1.0)
    benchmark(torch.isfinite, x)
