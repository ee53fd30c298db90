"""A parent process for tests/e2e/test_child_processes.py: optionally turns torchada on (as a
program, a pytest or Jupyter session that did `import torchada` would), then runs each command
given as a JSON list on the command line as its child, two at a time, and prints what each
child printed, as one JSON line."""

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

if sys.argv[1] == "--import-torchada":
    import os

    import torchada

    assert torchada.is_enabled(), "the parent did not turn torchada on"
    assert os.environ.get("TORCHADA_ACTIVE") == "1"
commands = json.loads(sys.argv[2])


def run(argv):
    r = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=400)
    return {"argv": argv, "rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr[-4000:]}


with ThreadPoolExecutor(2) as pool:
    print("RESULTS " + json.dumps(list(pool.map(run, commands))), flush=True)
