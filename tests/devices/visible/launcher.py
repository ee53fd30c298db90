"""A launcher written for NVIDIA: it imports torchada (so its workers inherit TORCHADA_ACTIVE=1)
and starts one worker per CUDA_VISIBLE_DEVICES value given, the way argv[1] says.

    python launcher.py KIND OUT_DIR VALUE...

Each worker's report lands in OUT_DIR/KIND-<n>.json (n: the value's position); a worker that
fails leaves OUT_DIR/KIND-<n>.err with its exit status and stderr instead."""

import json
import multiprocessing
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.py")
# What a Ray-style launcher copies into the environment it writes for a worker.
KEPT = (
    "PATH",
    "HOME",
    "PYTHONPATH",
    "TMPDIR",
    "TORCHADA_CACHE_DIR",
    "TORCHADA_ACTIVE",
    "TORCHADA_SIM_DEVICES",
    "MUSA_VISIBLE_DEVICES",
)


def _command(kind, path):
    if kind == "torchrun":
        return [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "1",
            WORKER,
            path,
        ]
    return [sys.executable, WORKER, path]


def main():
    import torchada  # noqa: F401
    import torch  # noqa: F401

    assert torchada.is_enabled() and os.environ["TORCHADA_ACTIVE"] == "1"
    import worker

    kind, out = sys.argv[1], sys.argv[2]
    for n, value in enumerate(sys.argv[3:]):
        path = os.path.join(out, f"{kind}-{n}.json")
        if kind in ("spawn", "forkserver"):
            os.environ["CUDA_VISIBLE_DEVICES"] = value
            proc = multiprocessing.get_context(kind).Process(target=worker.report, args=(path,))
            proc.start()
            proc.join()
            code, err = proc.exitcode, ""
        else:
            if kind == "ray":
                env = {k: os.environ[k] for k in KEPT if k in os.environ}
            else:
                env = dict(os.environ)
            env["CUDA_VISIBLE_DEVICES"] = value
            r = subprocess.run(_command(kind, path), env=env, capture_output=True, text=True)
            code, err = r.returncode, r.stderr
        if code:
            with open(path[: -len(".json")] + ".err", "w") as f:
                json.dump({"code": code, "stderr": err}, f)


if __name__ == "__main__":
    main()
