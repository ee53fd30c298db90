"""Loads the published adapter (MooreThreads' torchada wheel, which uses our package name) on our
simulator, in a process of its own.

Our simulated torch_musa is activated first; then our ``torchada`` package is moved aside in
``sys.modules`` so that ``import torchada`` finds the published one on ``sys.path``. The simulator
has imported all it needs by then.

    python bench/published/harness.py WHEEL_DIR [script.py]
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import zipfile
from pathlib import Path

VERSION = "0.1.103"


def fetch(cache: Path) -> Path:
    """Download (once) and unpack the published wheel; returns the directory to put on sys.path."""
    site = cache / f"torchada-{VERSION}" / "site"
    if (site / "torchada" / "__init__.py").exists():
        return site
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "-q",
            f"torchada=={VERSION}",
            "-d",
            str(cache),
        ],
        check=True,
    )
    wheel = next(cache.glob(f"torchada-{VERSION}-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    return site


def activate_published(site: Path) -> None:
    os.environ["TORCHADA_SIMULATE"] = "1"
    import torch  # noqa: F401  (the entry point activates our simulator)
    import torch_musa  # noqa: F401

    for name in [n for n in sys.modules if n == "torchada" or n.startswith("torchada.")]:
        sys.modules[f"_ours_{name}"] = sys.modules.pop(name)
    sys.path.insert(0, str(site))
    import torchada

    assert getattr(torchada, "__version__", "") == VERSION, torchada.__file__


def main(argv: list) -> None:
    site = fetch(Path(argv[0]))
    activate_published(site)
    if len(argv) > 1:
        sys.argv = argv[1:]
        runpy.run_path(argv[1], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
