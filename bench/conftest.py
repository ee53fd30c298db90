"""Benchmark plumbing: each comparison is a pytest-benchmark group with one "baseline" and one
"candidate" test (``extra_info["role"]``); at the end the ratio of their medians is printed next
to the target, and ``--history`` appends the ratios to bench/history.jsonl."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def pytest_addoption(parser):
    parser.addoption("--history", action="store_true", help="append ratios to bench/history.jsonl")


@pytest.fixture(scope="session")
def musa_sim():
    from torchada import _simulator

    return _simulator.activate()


def mark(benchmark, role: str, target: "float | None" = None, **info) -> None:
    """Tag a benchmark as the baseline or the candidate of its group."""
    benchmark.extra_info.update(role=role, **info)
    if target is not None:
        benchmark.extra_info["target"] = target


def child_env(extra: "dict | None" = None) -> dict:
    """The environment of a measured child process: none of torchada's switches leak in from this
    process (the benchmarks enable torchada here, which exports TORCHADA_ACTIVE), and bytecode is
    cached as it is for installed packages, so start-up figures do not include compiling."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHADA_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra or {})
    return env


def report_added_ms(benchmark, what: str, added: float, budget: float) -> None:
    """Record and print a start-up figure (ms added) against its budget."""
    benchmark.extra_info.update(added_ms=added, budget_ms=budget)
    benchmark.pedantic(lambda: None, rounds=1)
    verdict = "met" if added <= budget else "NOT MET"
    print(f"\n{what}: {added:.1f} ms (budget {budget} ms, {verdict})")


def child_ms(code: str, env: "dict | None" = None) -> float:
    """The number (ms) a fresh interpreter running ``code`` prints last."""
    return float(child_last_line(["-c", code], env))


def median_child_ms(code: str, env: "dict | None" = None, rounds: int = 9) -> float:
    """The median of :func:`child_ms` over ``rounds`` fresh processes: start-up costs are timed
    inside fresh processes, so that the noise of starting one and importing torch does not swamp
    a few milliseconds."""
    import statistics

    return statistics.median(child_ms(code, env) for _ in range(rounds))


def child_last_line(args, env=None, timeout: float = 600) -> str:
    """Run a fresh interpreter with ``args`` and return the last line it printed."""
    out = subprocess.run(
        [sys.executable, *args],
        check=True,
        capture_output=True,
        text=True,
        env=child_env(env),
        cwd=REPO,
        timeout=timeout,
    ).stdout
    return out.strip().splitlines()[-1]


def fresh_process_seconds(args, env=None, cwd=None) -> None:
    """Run a fresh interpreter once (the unit a pedantic benchmark times)."""
    full = child_env(env)
    subprocess.run(
        [sys.executable, *args],
        check=True,
        env=full,
        cwd=cwd or REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _ratios(session):
    groups: dict = {}
    for bench in session.benchmarks:
        role = bench.extra_info.get("role")
        if role:
            groups.setdefault(bench.group, {})[role] = bench
    rows = []
    for group, roles in sorted(groups.items()):
        base, cand = roles.get("baseline"), roles.get("candidate")
        if not (base and cand):
            continue
        ratio = cand.stats.median / base.stats.median
        target = cand.extra_info.get("target")
        verdict = "-" if target is None else ("met" if ratio <= target else "NOT MET")
        rows.append(
            {
                "group": group,
                "baseline_ns": base.stats.median * 1e9,
                "candidate_ns": cand.stats.median * 1e9,
                "ratio": ratio,
                "target": target,
                "verdict": verdict,
            }
        )
    return rows


def pytest_sessionfinish(session, exitstatus):
    bs = getattr(session.config, "_benchmarksession", None)
    if bs is None or not bs.benchmarks:
        return
    rows = _ratios(bs)
    budgets = [
        {
            "name": b.name,
            "added_ms": b.extra_info["added_ms"],
            "budget_ms": b.extra_info["budget_ms"],
        }
        for b in bs.benchmarks
        if "added_ms" in b.extra_info
    ]
    if not rows and not budgets:
        return
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    write = tr.write_line if tr else print
    write("")
    write(
        f"{'comparison':42} {'baseline':>12} {'candidate':>12} {'ratio':>7} {'target':>7}  verdict"
    )
    for r in rows:
        target = "" if r["target"] is None else f"{r['target']:.2f}"
        write(
            f"{r['group'][:42]:42} {_fmt(r['baseline_ns']):>12} {_fmt(r['candidate_ns']):>12} "
            f"{r['ratio']:7.3f} {target:>7}  {r['verdict']}"
        )
    for b in budgets:
        verdict = "met" if b["added_ms"] <= b["budget_ms"] else "NOT MET"
        write(
            f"{b['name'][:42]:42} {'':>12} {b['added_ms']:9.1f} ms {'':>7} "
            f"{b['budget_ms']:5.0f}ms  {verdict}"
        )
    if session.config.getoption("--history"):
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
        ).stdout.strip()
        entry = {
            "date": datetime.date.today().isoformat(),
            "rev": rev,
            "rows": rows,
            "budgets": budgets,
        }
        with open(os.path.join(HERE, "history.jsonl"), "a") as fh:
            fh.write(json.dumps(entry) + "\n")


def _fmt(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.0f} ns"
