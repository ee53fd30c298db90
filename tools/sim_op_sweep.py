"""Runs PyTorch's OpInfo samples on the simulated MUSA device and lists where it differs from CPU.

A fidelity check of the simulator, not part of the test suite (it takes minutes and needs
``expecttest``, which torch's test helpers import): for every OpInfo, the first samples (float32)
are moved to "musa" and run; an op that raises on musa while its CPU samples run, or whose musa
result differs from the CPU result (ops whose CPU results differ between two runs, the random
ones, are not compared), is listed, by category. Each op runs in this process, so a crash stops
the sweep: the op being run is printed first, with ``--verbose``, and ``--skip NAME`` leaves ops
out. ``--out FILE`` writes the results as JSON (docs/sim_op_sweep.json is the kept copy):

    python -m pip install expecttest
    TORCHADA_SIMULATE=1 python tools/sim_op_sweep.py --out docs/sim_op_sweep.json
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any, Dict, List, Tuple


def _to_musa(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to("musa")
    if isinstance(value, (list, tuple)):
        return type(value)(_to_musa(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_musa(v) for k, v in value.items()}
    return value


def _to_cpu(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to("cpu")
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v) for v in value)
    return value


def _differs(a: Any, b: Any) -> bool:
    import torch

    try:
        torch.testing.assert_close(a, b, equal_nan=True, check_device=False)
        return False
    except (AssertionError, TypeError, ValueError, RuntimeError):
        return True


# Ops whose musa result may differ from CPU's by design: they draw from the device generator
# (another stream of numbers than the CPU's, as on CUDA) or return uninitialised memory.
_RANDOM = (
    "rand", "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "multinomial",
    "normal", "uniform", "dropout", "rrelu", "fractional_max_pool", "multi_head_attention",
    "new_empty", "empty",
)  # fmt: skip


def category(name: str) -> str:
    """The family an OpInfo name belongs to, for the summary."""
    if any(word in name for word in _RANDOM):
        return "random or uninitialised (expected to differ, as on CUDA)"
    head = name.split(".")[0]
    if head in ("linalg", "fft", "special", "sparse", "signal"):
        return head
    if name.startswith("nn.functional."):
        return "nn.functional"
    if "sparse" in name:
        return "sparse"
    return "tensor ops"


def sweep(samples: int, skip: List[str], verbose: bool) -> Tuple[int, int, Dict[str, str]]:
    """(op count, samples run on musa, {op: what differs})."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    failures: Dict[str, str] = {}
    ran = ops = 0
    for op in op_db:
        name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        if op.name in skip or name in skip:
            continue
        if verbose:
            print(f"op {name}", file=sys.stderr, flush=True)
        try:
            cases = list(op.sample_inputs("cpu", torch.float32, requires_grad=False))[:samples]
        except Exception:  # noqa: BLE001 - no CPU samples: nothing to compare with
            continue
        ops += 1
        for case in cases:
            try:
                expected = op(case.input, *case.args, **case.kwargs)
                again = op(case.input, *case.args, **case.kwargs)
            except Exception:  # noqa: BLE001 - fails on CPU too: not the simulator's
                continue
            try:
                got = op(_to_musa(case.input), *_to_musa(case.args), **_to_musa(case.kwargs))
                ran += 1
            except Exception as err:  # noqa: BLE001 - this is what the sweep reports
                first = str(err).strip().splitlines()[0][:160] if str(err).strip() else ""
                failures[name] = f"raises {type(err).__name__}: {first}"
                break
            if not _differs(expected, again) and _differs(_to_cpu(got), expected):
                failures[name] = "differs from the CPU result"
                break
    print(f"{ops} ops, {ran} samples ran on musa; {len(failures)} ops differ from CPU there")
    return ops, ran, failures


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2, help="samples per op (default 2)")
    parser.add_argument("--skip", action="append", default=[], help="an op name to leave out")
    parser.add_argument("--verbose", action="store_true", help="print each op before it runs")
    parser.add_argument("--out", help="write the results to this JSON file")
    args = parser.parse_args(argv)
    import torch  # noqa: F401 - first: under TORCHADA_SIMULATE=1 it makes torch_musa importable

    try:
        import torch_musa  # noqa: F401
    except ImportError:
        parser.error("no torch_musa: run with TORCHADA_SIMULATE=1 (or on a MUSA machine)")
    warnings.simplefilter("ignore")
    ops, ran, failures = sweep(args.samples, args.skip, args.verbose)
    for name, why in failures.items():
        print(f"{name} | {why}")
    if args.out:
        by_category: Dict[str, List[str]] = {}
        for name in sorted(failures):
            by_category.setdefault(category(name), []).append(name)
        result = {
            "command": "TORCHADA_SIMULATE=1 python tools/sim_op_sweep.py --out " + args.out,
            "torch": torch.__version__,
            "samples_per_op": args.samples,
            "ops": ops,
            "samples_ran": ran,
            "differ": dict(sorted(failures.items())),
            "by_category": by_category,
        }
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
