"""Runs PyTorch's OpInfo samples on the simulated MUSA device and lists what fails there only.

A fidelity check of the simulator, not part of the test suite (it takes minutes and needs
``expecttest``, which torch's test helpers import): for every OpInfo, the first samples (float32)
are moved to "musa" and run; an op that raises on musa while its CPU samples run is listed.
Each op runs in this process, so a crash stops the sweep: the op being run is printed first, with
``--verbose``, and ``--skip NAME`` leaves ops out.

    python -m pip install expecttest
    TORCHADA_SIMULATE=1 python tools/sim_op_sweep.py [--samples 2] [--skip NAME ...] [--verbose]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any, Dict, List


def _to_musa(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to("musa")
    if isinstance(value, (list, tuple)):
        return type(value)(_to_musa(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_musa(v) for k, v in value.items()}
    return value


def sweep(samples: int, skip: List[str], verbose: bool) -> Dict[str, str]:
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    failures: Dict[str, str] = {}
    ran = 0
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
        for case in cases:
            try:
                op(case.input, *case.args, **case.kwargs)
            except Exception:  # noqa: BLE001 - fails on CPU too: not the simulator's
                continue
            try:
                op(_to_musa(case.input), *_to_musa(case.args), **_to_musa(case.kwargs))
                ran += 1
            except Exception as err:  # noqa: BLE001 - this is what the sweep reports
                first = str(err).strip().splitlines()[0][:160] if str(err).strip() else ""
                failures[name] = f"{type(err).__name__}: {first}"
                break
    print(f"{ran} samples ran on musa; {len(failures)} ops failed there only")
    return failures


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2, help="samples per op (default 2)")
    parser.add_argument("--skip", action="append", default=[], help="an op name to leave out")
    parser.add_argument("--verbose", action="store_true", help="print each op before it runs")
    args = parser.parse_args(argv)
    import torch  # noqa: F401 - first: under TORCHADA_SIMULATE=1 it makes torch_musa importable

    try:
        import torch_musa  # noqa: F401
    except ImportError:
        parser.error("no torch_musa: run with TORCHADA_SIMULATE=1 (or on a MUSA machine)")
    warnings.simplefilter("ignore")
    for name, why in sweep(args.samples, args.skip, args.verbose).items():
        print(f"{name} | {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
