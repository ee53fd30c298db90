"""Side by side on the simulator: raw torch_musa, the published adapter (0.1.103) and ours.

    .venv/bin/python bench/compare_published.py [--cache DIR] [--plot bench/overhead.png]

Each column runs in a fresh process. Every operation is timed with timeit (best of 7 repeats of a
loop, in ns per operation). Prints a table with ratios against raw MUSA, writes
bench/results/compare.json, and draws the overhead plot shown in the README. Not part of the tests.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from conftest import child_env  # noqa: E402  (bench/conftest.py: the measured children's env)

# name -> (setup, statement with "{dev}" standing for the device word)
OPERATIONS = {
    "device_count()": ("", "torch.{mod}.device_count()"),
    "current_device()": ("", "torch.{mod}.current_device()"),
    "Stream (attr)": ("", "torch.{mod}.Stream"),
    "Event (attr)": ("", "torch.{mod}.Event"),
    "torch.device('{dev}')": ("", "torch.device('{dev}')"),
    "torch.device('{dev}:0')": ("", "torch.device('{dev}:0')"),
    "torch.empty(8, device='{dev}')": ("", "torch.empty(8, device='{dev}')"),
    "x.{dev}()": ("x = torch.ones(8)", "x.{to}"),
    "torch.empty(8) on CPU": ("", "torch.empty(8)"),
    "cpu_tensor.is_cuda": ("x = torch.ones(8)", "x.is_cuda"),
    "backends.cuda.is_built()": ("", "torch.backends.cuda.is_built()"),
}

MEASURE = r"""
import json, sys, timeit, warnings
warnings.simplefilter("ignore")
{activate}
import torch
torch.ones(1, device="musa")  # initialise the device outside the timings
ops = json.loads(sys.argv[1])
mod, dev, to = {mod!r}, {dev!r}, {to!r}
out = {{}}
for name, (setup, stmt) in ops.items():
    stmt = stmt.format(mod=mod, dev=dev, to=to)
    try:
        t = timeit.Timer(stmt, setup=setup, globals={{"torch": torch}})
        n, _ = t.autorange()
        best = min(t.repeat(repeat=7, number=n)) / n
        out[name] = best * 1e9
    except Exception as e:
        out[name] = "error: %s" % (str(e).splitlines()[0][:80],)
print("RESULT " + json.dumps(out))
"""

COLUMNS = {
    "raw MUSA": dict(activate="import torch", mod="musa", dev="musa", to="to('musa')"),
    "published 0.1.103": dict(
        activate="sys.path.insert(0, {bench!r}); import published.harness as h; "
        "h.activate_published(h.fetch(__import__('pathlib').Path({cache!r})))",
        mod="cuda",
        dev="cuda",
        to="cuda()",
    ),
    "torchada (ours)": dict(activate="import torch, torchada", mod="cuda", dev="cuda", to="cuda()"),
}


def run_column(name: str, cache: str) -> dict:
    spec = dict(COLUMNS[name])
    spec["activate"] = spec["activate"].format(bench=str(HERE), cache=cache)
    code = MEASURE.format(**spec)
    env = child_env({"TORCHADA_SIMULATE": "1"})
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(OPERATIONS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{name} failed:\n{proc.stderr[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "torchada" / "published"))
    parser.add_argument("--plot", default=str(HERE / "overhead.png"))
    args = parser.parse_args()
    results = {name: run_column(name, args.cache) for name in COLUMNS}
    raw = results["raw MUSA"]
    header = (
        f"{'operation':34}"
        + "".join(f"{c:>20}" for c in COLUMNS)
        + f"{'pub/raw':>9}{'ours/raw':>9}"
    )
    print(header)
    rows = []
    for op in OPERATIONS:
        cells = [results[c][op] for c in COLUMNS]
        line = f"{op.format(dev='cuda'):34}"
        for v in cells:
            line += f"{v:>17.0f} ns" if isinstance(v, float) else f"{'error':>20}"
        ratios = []
        for c in ("published 0.1.103", "torchada (ours)"):
            v, b = results[c][op], raw[op]
            ratios.append(v / b if isinstance(v, float) and isinstance(b, float) else None)
            line += f"{ratios[-1]:9.2f}" if ratios[-1] is not None else f"{'-':>9}"
        print(line)
        rows.append(
            {
                "operation": op,
                **{c: results[c][op] for c in COLUMNS},
                "published_ratio": ratios[0],
                "ours_ratio": ratios[1],
            }
        )
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "compare.json").write_text(json.dumps(rows, indent=1) + "\n")
    try:
        _plot(rows, args.plot)
        print(f"plot: {args.plot}")
    except ImportError:
        print("matplotlib is not installed: `pip install -e .[bench]` to draw the plot")
    return 0


def _plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r["published_ratio"] and r["ours_ratio"]]
    labels = [r["operation"].format(dev="cuda") for r in rows]
    y = range(len(rows))
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.2))
    ax.barh(
        [i + 0.2 for i in y],
        [r["published_ratio"] for r in rows],
        height=0.4,
        label="published 0.1.103",
    )
    ax.barh([i - 0.2 for i in y], [r["ours_ratio"] for r in rows], height=0.4, label="torchada")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_yticks(list(y), labels)
    ax.set_xlabel("time relative to raw torch_musa (1.0 = no overhead)")
    ax.set_title("Per-operation overhead on the simulated MUSA device")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
