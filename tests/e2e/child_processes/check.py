"""What a child process reports about itself, as one JSON line: imported by the child programs of
tests/e2e/test_child_processes.py after their own imports ran in the order under test.

- ``names``: every ``torch.cuda`` name with a fingerprint of what it is (type, module, qualified
  name), so a proxy of a proxy or a missing private name (``_CudaDeviceProperties``) shows;
- ``installs``: how many undo records torchada holds and how many of its finders are on
  ``sys.meta_path`` (a second installation doubles them);
- ``entry_points``: the order in which torch found the ``torch.backends`` entry points;
- the results of ``import torch._dynamo``, ``Module.to("cuda")`` and an AdamW step on "cuda",
  compared with the same step on the CPU.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys


def _fingerprint(obj) -> str:
    return "|".join(
        str(x)
        for x in (
            type(obj).__name__,
            getattr(obj, "__module__", ""),
            getattr(obj, "__qualname__", ""),
        )
    )


def collect() -> dict:
    import torch

    out: dict = {}
    names = {}
    # dir() of the redirected module lists its public names; the private ones CUDA code and torch
    # itself read (_CudaDeviceProperties, _lazy_init, ...) come from plain torch's torch.cuda.
    with open(os.environ["CHILD_CHECK_NAMES"]) as f:
        wanted = set(json.load(f)) | set(dir(torch.cuda))
    # Module dunders (a lazy module's own __getattr__) say how a module is built, not what it has.
    wanted = {n for n in wanted if not (n.startswith("__") and n.endswith("__"))}
    for name in sorted(wanted):
        try:
            names[name] = _fingerprint(getattr(torch.cuda, name))
        except AttributeError:
            names[name] = "missing"
        except Exception as exc:  # an unsupported name answers with its error: part of the set
            names[name] = "raises " + type(exc).__name__
    out["names"] = names
    activation = sys.modules.get("torchada._activation")
    out["enabled"] = bool(activation and activation.is_enabled())
    patching = sys.modules.get("torchada._core.patcher")
    out["installs"] = [
        len(patching._undo) if patching else 0,
        sum(type(f).__module__.startswith("torchada_hooks") for f in sys.meta_path),
    ]
    out["entry_points"] = [e.name for e in importlib.metadata.entry_points(group="torch.backends")]
    import torch._dynamo  # noqa: F401  (fails when torch.cuda lacks a name dynamo reads)

    out["dynamo"] = True
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    reference = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    reference.load_state_dict(model.state_dict())
    initial = next(reference.parameters()).detach().clone()
    model = model.to("cuda")
    out["module_device"] = str(next(model.parameters()).device)
    x = torch.randn(16, 8)
    for net, dev in ((model, "cuda"), (reference, "cpu")):
        opt = torch.optim.AdamW(net.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            net(x.to(dev)).square().mean().backward()
            opt.step()
    out["step_max_diff"] = max(
        (a.detach().cpu() - b.detach()).abs().max().item()
        for a, b in zip(model.parameters(), reference.parameters())
    )
    out["weights_moved"] = not torch.equal(next(reference.parameters()).detach(), initial)
    return out


def report(tag: str = "") -> None:
    # Workers share the parent's stdout and a report is longer than a pipe writes atomically
    # (4 KiB): write each under a lock of its own file, so that two reports never interleave.
    import fcntl

    line = "CHECK " + json.dumps({"tag": tag, **collect()}) + "\n"
    with open(os.environ["CHILD_CHECK_NAMES"] + ".lock", "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def parse(stdout: str) -> list:
    """Every report in a process's output, in order."""
    return [json.loads(line[6:]) for line in stdout.splitlines() if line.startswith("CHECK ")]
