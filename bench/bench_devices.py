"""Cost of reading "cuda" devices as MUSA ones (torchada's device translation).

Each benchmark times the "cuda" spelling with pytest-benchmark and also measures it against its
baseline in the same run, alternating the two so that machine noise hits both alike; the ratio of
the best rounds goes to ``benchmark.extra_info["ratio"]`` (with the target it is meant to meet) and
into the table printed at the end. Process-level comparisons (torchada on vs off) run subprocesses.

    python -m pytest bench/bench_devices.py --benchmark-only -q

Ratios are reported, not asserted: timings belong here, not in the test suite.
"""

from __future__ import annotations

import contextlib
import json
import textwrap
import timeit
from typing import Callable, Dict, List

import pytest
from conftest import child_last_line

torch = pytest.importorskip("torch")

ROUNDS = 15


@pytest.fixture(scope="module", autouse=True)
def translated():
    import torchada
    from torchada import _simulator
    from torchada._devices import install as _devices

    _simulator.activate()
    was_enabled = torchada.is_enabled()
    assert torchada.enable()
    yield _devices.path()
    if not was_enabled:
        torchada.disable()


@pytest.fixture(scope="module")
def table(request):
    rows: List[Dict[str, object]] = []
    yield rows
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if reporter is None or not rows:
        return
    width = max(len(str(row["case"])) for row in rows)
    lines = [f"{'case':{width}} {'subject':>11} {'baseline':>11} {'ratio':>7} {'target':>7}"]
    for row in rows:
        target = f"<={row['target']:.2f}" if row.get("target") else "-"
        lines.append(
            f"{row['case']:{width}} {row['subject_ns']:>9.0f}ns {row['baseline_ns']:>9.0f}ns "
            f"{row['ratio']:>7.3f} {target:>7}"
        )
    # Teardown output is captured (and dropped) unless capturing is suspended.
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        reporter.write_line("")
        reporter.write_sep("-", "device translation: cuda spelling vs baseline (best rounds)")
        for line in lines:
            reporter.write_line(line)


def _calibrate(fn: Callable[[], object]) -> int:
    number = 200
    while timeit.timeit(fn, number=number) < 0.02:
        number *= 2
    return number


def interleaved(subject: Callable[[], object], baseline: Callable[[], object]) -> Dict[str, float]:
    """Best per-call times of ``subject`` and ``baseline``, measured in alternating rounds."""
    number = _calibrate(baseline)
    best_s = best_b = float("inf")
    for _ in range(ROUNDS):
        best_b = min(best_b, timeit.timeit(baseline, number=number) / number)
        best_s = min(best_s, timeit.timeit(subject, number=number) / number)
    return {"subject_ns": best_s * 1e9, "baseline_ns": best_b * 1e9, "ratio": best_s / best_b}


def record(benchmark, table, case: str, figures: Dict[str, float], target=None, **info) -> None:
    benchmark.extra_info.update(figures, target=target, **info)
    table.append(dict(figures, case=case, target=target))


def test_empty_cuda_vs_musa(benchmark, table, translated):
    figures = interleaved(
        lambda: torch.empty(8, device="cuda"), lambda: torch.empty(8, device="musa")
    )
    benchmark(torch.empty, 8, device="cuda")
    record(benchmark, table, f'torch.empty(8, device="cuda") [{translated}]', figures, 1.05)


def test_tensor_cuda_vs_to_musa(benchmark, table, translated):
    x = torch.ones(8)
    figures = interleaved(x.cuda, lambda: x.to("musa"))
    benchmark(x.cuda)
    record(benchmark, table, f'x.cuda() vs x.to("musa") [{translated}]', figures, 1.05)


def test_to_cuda_vs_to_musa(benchmark, table, translated):
    x = torch.ones(8)
    figures = interleaved(lambda: x.to("cuda"), lambda: x.to("musa"))
    benchmark(x.to, "cuda")
    record(benchmark, table, f'x.to("cuda") vs x.to("musa") [{translated}]', figures, 1.05)


@pytest.mark.parametrize(
    "spelling", ["'cuda:1'", "torch.device('cuda', 1)", "1"], ids=["str", "device", "int"]
)
def test_cuda_function_with_a_device_vs_musa_with_an_int(benchmark, table, translated, spelling):
    device = eval(spelling, {"torch": torch})  # noqa: S307 - the spellings above
    cuda_call, musa_call = torch.cuda.memory_allocated, torch.musa.memory_allocated
    figures = interleaved(lambda: cuda_call(device), lambda: musa_call(1))
    benchmark(cuda_call, device)
    case = f"torch.cuda.memory_allocated({spelling}) vs torch.musa...(1)"
    record(benchmark, table, case, figures, 1.1)


def test_device_cuda_vs_musa(benchmark, table, translated):
    figures = interleaved(lambda: torch.device("cuda"), lambda: torch.device("musa"))
    benchmark(torch.device, "cuda")
    record(benchmark, table, f'torch.device("cuda") [{translated}]', figures, 1.2)


# ---------------------------------------------------------------- separate processes
_PROBE = """
import json, sys, timeit
import torch
from torchada import _simulator
_simulator.activate()
if {enable}:
    import torchada
    assert torchada.enable()
x = torch.ones(8)
best = {{}}
for stmt in {stmts!r}:
    number = 200
    while timeit.timeit(stmt, globals=globals(), number=number) < 0.02:
        number *= 2
    best[stmt] = min(timeit.repeat(stmt, globals=globals(), number=number, repeat=7)) / number
print(json.dumps(best))
"""


def _probe(enable: bool, stmts: List[str], native: bool = True) -> Dict[str, float]:
    code = textwrap.dedent(_PROBE.format(enable=enable, stmts=stmts))
    env = {"TORCHADA_NATIVE": "1" if native else "0"}
    return json.loads(child_last_line(["-c", code], env))


def across_processes(stmts: List[str], native: bool = True) -> Dict[str, Dict[str, float]]:
    """Best per-call seconds of each statement in processes without torchada ("off") and with it
    ("on"), alternating the two kinds of process three times."""
    best: Dict[str, Dict[str, float]] = {"off": {}, "on": {}}
    for _ in range(3):
        for kind, enable in (("off", False), ("on", True)):
            for stmt, t in _probe(enable, stmts, native=native).items():
                best[kind][stmt] = min(best[kind].get(stmt, float("inf")), t)
    return best


def _figures(subject: float, baseline: float) -> Dict[str, float]:
    return {"subject_ns": subject * 1e9, "baseline_ns": baseline * 1e9, "ratio": subject / baseline}


def test_cpu_untaxed_empty(benchmark, table, translated):
    stmt = "torch.empty(8)"
    best = across_processes([stmt])
    figures = _figures(best["on"][stmt], best["off"][stmt])
    benchmark(torch.empty, 8)
    record(
        benchmark,
        table,
        f"{stmt} on vs off (processes) [{translated}]",
        figures,
        1.02,
        method="subprocesses, timeit",
    )


def test_cpu_is_cuda_untaxed(benchmark, table, translated):
    stmt = "x.is_cuda"
    best = across_processes([stmt])
    figures = _figures(best["on"][stmt], best["off"][stmt])
    x = torch.ones(8)
    benchmark(lambda: x.is_cuda)
    record(
        benchmark,
        table,
        f"cpu {stmt} on vs off (processes) [{translated}]",
        figures,
        1.02,
        method="subprocesses, timeit",
    )


def test_musa_is_cuda_and_device_equality_informational(benchmark, table, translated):
    # Not targets: a musa tensor's is_cuda against a CPU tensor's (both torch's C getter, ours
    # adds a device check), and a cuda/musa device comparison against a musa/musa one.
    x, m = torch.ones(8), torch.ones(8, device="cuda")
    cuda0, musa0 = torch.device("cuda", 0), torch.device("musa", 0)
    rows = {
        f"musa is_cuda vs cpu is_cuda [{translated}]": interleaved(
            lambda: m.is_cuda, lambda: x.is_cuda
        ),
        f"cuda:0 == musa:0 vs musa:0 == musa:0 [{translated}]": interleaved(
            lambda: cuda0 == musa0, lambda: musa0 == musa0
        ),
    }
    benchmark(lambda: m.is_cuda)
    for label, figures in rows.items():
        table.append(dict(figures, case=label, target=None))
        benchmark.extra_info[label] = figures["ratio"]


def test_cpu_to_dtype_informational(benchmark, table, translated):
    # Not a target: what the Tensor.to replacement (for CUDA aliasing) costs a CPU .to().
    stmt = "x.to(torch.float64)"
    best = across_processes([stmt])
    figures = _figures(best["on"][stmt], best["off"][stmt])
    x = torch.ones(8)
    benchmark(x.to, torch.float64)
    record(
        benchmark,
        table,
        f"{stmt} on vs off (processes) [{translated}]",
        figures,
        method="subprocesses, timeit",
    )


def test_python_fallback_informational(benchmark, table):
    # The fallback path, for comparison (TORCHADA_NATIVE=0 processes); no targets.
    cuda, musa = 'torch.empty(8, device="cuda")', 'torch.empty(8, device="musa")'
    cpu = ["torch.empty(8)", "x.to(torch.float64)"]
    best = across_processes(cpu + [musa], native=False)
    on = _probe(True, [cuda, musa], native=False)
    rows = {f"{cuda} vs musa [python]": _figures(on[cuda], on[musa])}
    for stmt in cpu:
        rows[f"{stmt} on vs off (processes) [python]"] = _figures(
            best["on"][stmt], best["off"][stmt]
        )
    benchmark(torch.empty, 8)
    for label, figures in rows.items():
        table.append(dict(figures, case=label, target=None))
        benchmark.extra_info[label] = figures["ratio"]
    benchmark.extra_info["ratio"] = rows["torch.empty(8) on vs off (processes) [python]"]["ratio"]
