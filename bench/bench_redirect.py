"""torch.cuda through torchada vs torch.musa directly (the simulator stands in for torch_musa)."""

import os

import pytest
import torch
from conftest import REPO, child_ms, mark, median_child_ms, report_added_ms

N = 1000


@pytest.fixture(scope="module", autouse=True)
def enabled(musa_sim):
    import torchada

    torchada.enable()
    yield
    torchada.disable()


def _attr_loop_cuda():
    for _ in range(N):
        torch.cuda.Stream


def _attr_loop_musa():
    for _ in range(N):
        torch.musa.Stream


@pytest.mark.benchmark(group="attr: torch.cuda.Stream x1000")
def test_attr_baseline(benchmark):
    mark(benchmark, "baseline")
    benchmark(_attr_loop_musa)


@pytest.mark.benchmark(group="attr: torch.cuda.Stream x1000")
def test_attr_candidate(benchmark):
    mark(benchmark, "candidate", target=1.05)
    benchmark(_attr_loop_cuda)


def _count_loop_cuda():
    for _ in range(N):
        torch.cuda.device_count()


def _count_loop_musa():
    for _ in range(N):
        torch.musa.device_count()


@pytest.mark.benchmark(group="call: torch.cuda.device_count() x1000")
def test_device_count_baseline(benchmark):
    mark(benchmark, "baseline")
    benchmark(_count_loop_musa)


@pytest.mark.benchmark(group="call: torch.cuda.device_count() x1000")
def test_device_count_candidate(benchmark):
    mark(benchmark, "candidate", target=1.05)
    benchmark(_count_loop_cuda)


def _available_loop(fn):
    def loop():
        for _ in range(N):
            fn()

    return loop


# torch.cuda.is_available() as torchada serves it (the MUSA device's answer, after a look at the
# calling frame for NVIDIA-only callers) against torch's own function, which the program called
# before: asking must not cost more than it did.
@pytest.mark.benchmark(group="call: torch.cuda.is_available() x1000")
def test_is_available_baseline(benchmark):
    from torchada._cuda.redirect import original_module

    mark(benchmark, "baseline")
    benchmark(_available_loop(original_module("torch.cuda").is_available))


@pytest.mark.benchmark(group="call: torch.cuda.is_available() x1000")
def test_is_available_candidate(benchmark):
    mark(benchmark, "candidate", target=1.0)
    benchmark(_available_loop(torch.cuda.is_available))


SIM = {"TORCHADA_SIMULATE": "1"}

# Start-up costs: medians of fresh processes (conftest.median_child_ms); the runner's, of pairs.
ROUNDS = 9

IMPORT_DELTA = """
import time, torch, torch_musa
t = time.perf_counter()
import torchada
print((time.perf_counter() - t) * 1e3)
"""

RUN_TIMED = """
import os, runpy, sys, time
os.environ["T0"] = repr(time.perf_counter())
sys.argv = {argv!r}
runpy.run_{how}({target!r}, run_name="__main__")
"""

SCRIPT = """
import os, time, torch
x = torch.ones(2)
print((time.perf_counter() - float(os.environ["T0"])) * 1e3)
"""


#: Budget, in ms, of activation on MUSA (bench_off_musa.py: where torchada has nothing to do).
ACTIVATION_BUDGET_MS = 10


# The simulator is our code and reuses some of torchada's modules (the switch table, the native
# builder), so after its `import torch_musa` they are loaded already; the real torch_musa loads
# none of them, and on MUSA activation pays for them. SHARED lists them; SHARED_COST times their
# import where nothing loaded them (torchada off, no simulator), added to the figure.
SHARED = """
import json, sys, torch, torch_musa
own = ("torchada", "torchada_hooks")
loaded = [m for m in sys.modules if m.split(".")[0] in own and m.split(".")[1:2] != ["_simulator"]]
print(json.dumps(loaded))
"""

SHARED_COST = """
import sys, time, torch
loaded = set(sys.modules)  # torchada's entry point (off here) loads what it loads on MUSA too
t = time.perf_counter()
for name in {names!r}:
    if name not in loaded:
        __import__(name)
print((time.perf_counter() - t) * 1e3)
"""


def shared_modules_ms() -> float:
    """What importing the torchada modules the simulator loaded for torchada would cost."""
    import json

    from conftest import child_last_line

    names = json.loads(child_last_line(["-c", SHARED], SIM))
    return median_child_ms(SHARED_COST.format(names=sorted(names)), {"TORCHADA_DISABLE": "1"})


def report_activation_ms(benchmark, what: str, measured: float, budget: float) -> None:
    """Report an activation figure: ``measured`` plus the shared modules' import."""
    shared = shared_modules_ms()
    parts = f"{measured:.1f} ms measured + {shared:.1f} ms for the modules the simulator loaded"
    benchmark.extra_info.update(measured_ms=measured, shared_modules_ms=shared)
    report_added_ms(benchmark, f"{what} ({parts} for it)", measured + shared, budget)


@pytest.mark.benchmark(group="start-up")
def test_import_torchada_added_ms(benchmark):
    measured = median_child_ms(IMPORT_DELTA, SIM)
    what = "import torchada after torch+torch_musa"
    report_activation_ms(benchmark, what, measured, ACTIVATION_BUDGET_MS)


# What activation costs with subsystems switched off (TORCHADA_DISABLE_<NAME>=1): the redirect of
# torch.cuda and the other proxied modules alone, and with what no CUDA program goes without
# ("cuda" devices, and the CUDA runtime found by ctypes and in the process's map).
ESSENTIAL_SUBSYSTEMS = ("devices", "ctypes", "cuda_shims")


def _switched_off_except(kept) -> dict:
    from torchada._activation import SUBSYSTEMS

    return {f"TORCHADA_DISABLE_{n.upper()}": "1" for n in SUBSYSTEMS if n not in kept}


@pytest.mark.benchmark(group="start-up")
@pytest.mark.parametrize(
    "kept", [(), ESSENTIAL_SUBSYSTEMS], ids=["redirect_alone", "redirect_devices_runtime"]
)
def test_import_torchada_with_subsystems_off_ms(benchmark, kept):
    measured = median_child_ms(IMPORT_DELTA, {**SIM, **_switched_off_except(kept)})
    what = f"import torchada, every subsystem off but {list(kept)}"
    report_activation_ms(benchmark, what, measured, ACTIVATION_BUDGET_MS)


INHERITED_DELTA = """
import os, sys, time, torch
assert "torch_musa" in sys.modules  # brought in by its own entry point
_autoload = sys.modules["torchada._autoload"]  # loaded by torch (import torchada would enable)
os.environ["TORCHADA_ACTIVE"] = "1"
t = time.perf_counter()
_autoload.autoload()  # what the entry point does in a child that inherited TORCHADA_ACTIVE=1
ms = (time.perf_counter() - t) * 1e3
assert sys.modules["torchada._activation"].is_enabled()
print(ms)
"""


@pytest.mark.benchmark(group="start-up")
def test_inherited_activation_added_ms(benchmark, tmp_path):
    # As on a MUSA machine: torch_musa an installed package (the simulator, installed the way the
    # real one is), loaded by its own entry point at the end of `import torch`.
    from torchada._simulator import SITE
    from torchada._simulator.install import install

    install(tmp_path)
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), SITE, REPO])}
    measured = median_child_ms(INHERITED_DELTA, env)
    report_activation_ms(benchmark, "inherited TORCHADA_ACTIVE=1 in a child", measured, 20)


@pytest.mark.benchmark(group="start-up")
def test_runner_added_ms(benchmark, tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    import statistics

    plain_code = RUN_TIMED.format(argv=[str(script)], how="path", target=str(script))
    runner_code = RUN_TIMED.format(
        argv=["torchada.run", "--simulate", str(script)], how="module", target="torchada.run"
    )
    # Both runs import torch (about 1.5 s, +-100 ms from one process to the next): interleave
    # them and take the median of the pairwise differences.
    pairs = [(child_ms(plain_code, SIM), child_ms(runner_code, {})) for _ in range(2 * ROUNDS)]
    plain = statistics.median(p for p, _ in pairs)
    runner = statistics.median(r for _, r in pairs)
    added = statistics.median(r - p for p, r in pairs)
    benchmark.extra_info.update(plain_ms=plain, runner_ms=runner)
    report_added_ms(benchmark, f"runner: {runner:.0f} ms vs plain {plain:.0f} ms", added, 50)
