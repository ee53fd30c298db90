"""A worker that never imports torchada: it reports the GPUs it sees, as JSON, to the file named
by its last argument. Started by launcher.py."""

import importlib.metadata
import json
import os
import sys


def report(path: str) -> None:
    import torch

    out = {
        "count": torch.cuda.device_count(),
        "musa": os.environ.get("MUSA_VISIBLE_DEVICES"),
        "entry_points": [e.name for e in importlib.metadata.entry_points(group="torch.backends")],
    }
    if out["count"]:
        tensor = torch.ones(2, device="cuda") + 1
        # The simulated driver's own map from this process's device index to the physical board.
        state = sys.modules["torchada._simulator.state"]
        physical = state.config.visible[tensor.device.index]
        out.update(current=torch.cuda.current_device(), physical=physical)
    with open(path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    report(sys.argv[-1])
