"""What torchada costs where it has nothing to do: a CPU machine, or CUDA (run it on an NVIDIA
machine too). Off MUSA, ``import torchada`` and torch's ``torch.backends`` entry point load only the
platform check: no tables, import hooks or wrapt. Each figure is the median of fresh processes,
with bytecode caches warm.

    python -m pytest bench/bench_off_musa.py --benchmark-only -s
"""

import pytest
from conftest import median_child_ms, report_added_ms

#: Budget, in ms, above ``import torch``.
OFF_MUSA_BUDGET_MS = 3


OFF_MUSA_DELTA = """
import sys, time, torch
assert "torch_musa" not in sys.modules
t = time.perf_counter()
import torchada
ms = (time.perf_counter() - t) * 1e3
assert not torchada.is_enabled()
print(ms)
"""

# What torch's entry point costs in every `import torch` off MUSA: the import time of torchada's
# own modules (and wrapt's, were they loaded), summed from their self times in -X importtime. An
# editable install's finder counts too: the package's own import is folded into its line.
ENTRY_POINT_MS = """
import subprocess, sys
err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import torch"],
                     capture_output=True, text=True, check=True).stderr
ours = ("torchada", "wrapt", "__editable___torchada")
total_us = 0
for line in err.splitlines():
    if line.startswith("import time:") and line.count("|") == 2:
        self_us, _, name = line[len("import time:"):].split("|")
        if self_us.strip().isdigit() and name.strip().startswith(ours):
            total_us += int(self_us)
print(total_us / 1e3)
"""


@pytest.mark.benchmark(group="start-up")
def test_off_musa_import_added_ms(benchmark):
    # No torch_musa, no simulation (a CPU or CUDA machine): the platform check, nothing else.
    added = median_child_ms(OFF_MUSA_DELTA, {"TORCHADA_PLATFORM": ""})
    report_added_ms(benchmark, "off MUSA: import torchada after torch", added, OFF_MUSA_BUDGET_MS)


@pytest.mark.benchmark(group="start-up")
def test_off_musa_entry_point_ms(benchmark):
    added = median_child_ms(ENTRY_POINT_MS, {})
    report_added_ms(
        benchmark, "off MUSA: torch's entry point in import torch", added, OFF_MUSA_BUDGET_MS
    )
