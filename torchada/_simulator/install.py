"""Install the simulator into an environment the way the real torch_musa is installed.

``python -m torchada simulator install`` writes, into the environment's site-packages:

- ``torch_musa-<release>.dist-info/``: the distribution's metadata (the release is
  ``--release``, else ``TORCHADA_SIM_RELEASE``, else the one paired with the installed torch),
  with the entry point the real
  package registers (``[torch.backends] torch_musa = torch_musa:_autoload``), so that a plain
  ``import torch`` imports the simulated torch_musa at its end, on its own and in whatever order
  ``importlib.metadata`` yields it beside other entry points, as on a MUSA machine;
- ``torch_musa_simulator.pth``: one line putting the simulator's package directory on
  ``sys.path`` (appended, so a real torch_musa found earlier on the path would win), and one
  making the installed release the default of ``TORCHADA_SIM_RELEASE``, as an installed wheel
  is one release;
- a ``RECORD`` naming both, so ``pip uninstall torch_musa`` removes them as well as
  ``python -m torchada simulator uninstall`` does.

No ``TORCHADA_SIMULATE`` is needed afterwards; programs find ``torch_musa`` like any installed
package. Installing refuses where a real torch_musa is importable.
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
from pathlib import Path
from typing import List, Optional

from . import SITE, real_torch_musa_spec, releases

PTH = "torch_musa_simulator.pth"
ENTRY_POINTS = "[torch.backends]\ntorch_musa = torch_musa:_autoload\n"
# Marks our own installation, so uninstall never removes a real torch_musa's metadata.
INSTALLER = "torchada-simulator"

DESCRIPTION = """\
actions:
  install    make the CPU simulator of torch_musa an installed package of this environment:
             a plain `import torch` then loads it, as it loads the real torch_musa
  uninstall  remove it again (pip uninstall torch_musa does too)
  status     say whether it is installed

Installing refuses where a real torch_musa is importable.
"""

EXAMPLES = """\
Examples:
  python -m torchada simulator install
  python -m torchada simulator install --release 2.11.0.post2
  python -m torchada simulator status
  python -m torchada simulator uninstall
"""


def default_target() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def dist_info(release: str) -> str:
    """The metadata directory's name for ``release``.

    Example::

        >>> dist_info("2.9.1.post1")
        'torch_musa-2.9.1.post1.dist-info'
    """
    return f"torch_musa-{release}.dist-info"


def _ours(root: Path) -> "Optional[Path]":
    for info in sorted(root.glob("torch_musa-*.dist-info")):
        marker = info / "INSTALLER"
        if marker.is_file() and marker.read_text().strip() == INSTALLER:
            return info
    return None


def is_installed(target: "Path | str | None" = None) -> bool:
    """Whether the simulator's metadata is in ``target`` (default: site-packages).

    Example::

        >>> from torchada._simulator import install
        >>> install.is_installed("/nonexistent")
        False
    """
    return _ours(Path(target or default_target())) is not None


def install(target: "Path | str | None" = None, release: Optional[str] = None) -> Path:
    """Install the simulator as the ``torch_musa`` distribution of ``release`` (default: the
    one :func:`releases.resolve` picks) into ``target``; returns its dist-info directory. Raises
    RuntimeError where a real torch_musa is importable, or where ``target`` already holds
    another torch_musa's metadata; ValueError for a release the simulator does not model.

    Example::

        >>> from torchada._simulator import install
        >>> install.install("/tmp/site")  # doctest: +SKIP
        PosixPath('/tmp/site/torch_musa-2.7.1.dist-info')
    """
    root = Path(target or default_target())
    release = releases.resolve({releases.SWITCH: release} if release else None)
    spec = real_torch_musa_spec()
    if spec is not None:
        raise RuntimeError(
            f"a real torch_musa is importable ({spec.origin}); the simulator is never installed "
            "beside it"
        )
    foreign = [p for p in root.glob("torch_musa-*.dist-info") if p != _ours(root)]
    if foreign:
        raise RuntimeError(
            f"{foreign[0]} belongs to another torch_musa installation; left as it is"
        )
    previous = _ours(root)
    if previous is not None and previous.name != dist_info(release):
        uninstall(root)
    info = root / dist_info(release)
    info.mkdir(parents=True, exist_ok=True)
    files = {
        "METADATA": (
            "Metadata-Version: 2.1\n"
            "Name: torch_musa\n"
            f"Version: {release}\n"
            "Summary: torch_musa simulated on the CPU (installed by torchada)\n"
        ),
        "entry_points.txt": ENTRY_POINTS,
        "top_level.txt": "torch_musa\n",
        "INSTALLER": INSTALLER + "\n",
    }
    for name, text in files.items():
        (info / name).write_text(text)
    (root / PTH).write_text(
        f"{SITE}\nimport os; os.environ.setdefault({releases.SWITCH!r}, {release!r})\n"
    )
    record = [f"{info.name}/{name},," for name in [*files, "RECORD"]] + [f"{PTH},,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")
    return info


def uninstall(target: "Path | str | None" = None) -> List[Path]:
    """Remove what :func:`install` wrote into ``target``; returns the paths removed (none when
    it was not installed there).

    Example::

        >>> from torchada._simulator import install
        >>> install.uninstall("/nonexistent")
        []
    """
    root = Path(target or default_target())
    info = _ours(root)
    if info is None:
        return []
    removed = []
    for path in [*sorted(info.iterdir()), info, root / PTH]:
        if path.is_dir():
            path.rmdir()
        elif path.exists():
            path.unlink()
        else:
            continue
        removed.append(path)
    return removed


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m torchada simulator",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        # Keeps the action table's columns and the examples' lines as written.
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "action",
        metavar="ACTION",
        choices=("install", "uninstall", "status"),
        help="one of the actions above",
    )
    parser.add_argument(
        "--release",
        choices=sorted(releases.table()["releases"]),
        default=None,
        help="the torch_musa release to install (default: TORCHADA_SIM_RELEASE, else the one "
        "paired with the installed torch)",
    )
    parser.add_argument(
        "--target",
        metavar="DIR",
        default=None,
        help="the site directory to use (default: this environment's site-packages)",
    )
    args = parser.parse_args(argv)
    target = Path(args.target) if args.target else default_target()
    if args.action == "install":
        try:
            info = install(target, args.release)
        except (RuntimeError, ValueError) as exc:
            print(f"python -m torchada simulator install: {exc}", file=sys.stderr)
            return 1
        print(f"installed the torch_musa simulator: {info}")
    elif args.action == "uninstall":
        removed = uninstall(target)
        print(f"removed the torch_musa simulator from {target}" if removed else "not installed")
    else:
        print(f"installed in {target}" if is_installed(target) else "not installed")
    return 0
