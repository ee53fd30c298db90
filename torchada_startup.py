"""The devices a process sees: ``CUDA_VISIBLE_DEVICES`` read onto ``MUSA_VISIBLE_DEVICES``, at
interpreter start, before anything can import torch.

torchada's ``.pth`` file (``torchada.pth`` in site-packages, installed and removed with the
package) runs :func:`start` when ``TORCHADA_ACTIVE`` is in the environment, that is in every
process started by a process torchada is active in (torchrun workers, ``multiprocessing`` spawn
and forkserver children, launcher-started workers, plain subprocesses), whether or not it imports
torchada itself. So the devices are chosen before torch_musa counts them, whichever
``torch.backends`` entry point torch runs first. Elsewhere the ``.pth`` line costs one dictionary
lookup and imports nothing.

The rule (:func:`plan`; docs/devices.md has the table of cases):

- ``CUDA_VISIBLE_DEVICES`` counts within ``MUSA_VISIBLE_DEVICES`` set by the user (a container
  or scheduler that gave the job some GPUs): ``MUSA_VISIBLE_DEVICES=2,3`` with
  ``CUDA_VISIBLE_DEVICES=1`` is physical GPU 3, as ``CUDA_VISIBLE_DEVICES`` counts within the GPUs
  a container was given on NVIDIA. ``MUSA_VISIBLE_DEVICES=all`` (or unset) means every GPU.
- It is read as CUDA reads it: comma-separated indices up to the first negative one, empty entry
  or repeated index (``""`` and ``-1`` hide every GPU). An index the user's
  ``MUSA_VISIBLE_DEVICES`` does not have, a UUID (MUSA takes indices only) or another word is an
  error naming both variables: never a silent GPU 0.
- Both set to the same value is one setting written twice (scripts and adapters that copy one
  into the other): it stands as it is.
- The value torchada writes is remembered in ``TORCHADA_MUSA_VISIBLE_FROM_CUDA``, and the user's
  ``MUSA_VISIBLE_DEVICES`` it replaced in ``TORCHADA_MUSA_VISIBLE_BASE``, so that a child whose
  launcher set another ``CUDA_VISIBLE_DEVICES`` reads it against the user's setting again, as CUDA
  reads a child's ``CUDA_VISIBLE_DEVICES`` against the physical GPUs; with
  ``CUDA_VISIBLE_DEVICES`` unset, the user's value comes back.

Torch-free and torchada-free (importing the ``torchada`` package turns torchada on): only ``os``.
"""

from __future__ import annotations

import os

# Annotations only: importing typing would add milliseconds to the start of every child process.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Dict, List, MutableMapping, Optional

CUDA = "CUDA_VISIBLE_DEVICES"
MUSA = "MUSA_VISIBLE_DEVICES"
DERIVED = "TORCHADA_MUSA_VISIBLE_FROM_CUDA"
BASE = "TORCHADA_MUSA_VISIBLE_BASE"
ACTIVE = "TORCHADA_ACTIVE"
DISABLE = "TORCHADA_DISABLE"
# torchada._core.env.ON, which cannot be imported from here (tests keep the two equal).
ON = frozenset(("1", "true", "yes", "on"))


class VisibleDevicesError(ValueError):
    """``CUDA_VISIBLE_DEVICES`` cannot be read within ``MUSA_VISIBLE_DEVICES``."""


def driver_indices(value: str) -> List[int]:
    """``MUSA_VISIBLE_DEVICES`` as the MUSA driver reads it: comma-separated device indices, up
    to the first entry that is not a new one (a negative number, a word, a repeated index).

    Example::

        >>> driver_indices("2, 3"), driver_indices("0,x,1"), driver_indices("")
        ([2, 3], [0], [])
    """
    out: "List[int]" = []
    for item in value.split(","):
        item = item.strip()
        if not (item.isascii() and item.isdigit()) or int(item) in out:
            break
        out.append(int(item))
    return out


def _error(cuda: str, musa: Optional[str], why: str, fix: str) -> VisibleDevicesError:
    where = f"{MUSA}={musa!r}" if musa is not None else f"{MUSA} unset"
    return VisibleDevicesError(
        f"{CUDA}={cuda!r} cannot choose this process's GPUs within {where}: {why}. {fix}"
    )


def cuda_indices(cuda: str, musa: Optional[str] = None) -> List[int]:
    """The indices ``CUDA_VISIBLE_DEVICES`` names, read as CUDA reads them: up to the first
    negative or empty entry or repeated index. ``musa`` (the user's ``MUSA_VISIBLE_DEVICES``) is
    only named in the error raised for a UUID or a word.

    Example::

        >>> cuda_indices("1,0"), cuda_indices("-1"), cuda_indices("0,-1,1")
        ([1, 0], [], [0])
    """
    out: "List[int]" = []
    for item in cuda.split(","):
        item = item.strip()
        if item.isascii() and item.isdigit():
            if int(item) in out:
                break
            out.append(int(item))
            continue
        if not item or (item[0] == "-" and item[1:].isascii() and item[1:].isdigit()):
            break
        uuid = item.upper().startswith(("GPU-", "MIG-"))
        why = (
            f"{item!r} is a UUID, and MUSA chooses GPUs by index only"
            if uuid
            else f"{item!r} is not a device index"
        )
        raise _error(cuda, musa, why, f"Set {CUDA} to comma-separated indices such as '0,1'.")
    return out


def _physical(cuda: str, base: Optional[str]) -> str:
    """The ``MUSA_VISIBLE_DEVICES`` that gives the GPUs ``cuda`` names within ``base``."""
    chosen = cuda_indices(cuda, base)
    if base is None or base.strip().lower() == "all":
        return ",".join(map(str, chosen)) if chosen else cuda.strip() or "-1"
    given = driver_indices(base)
    if chosen and not given:
        raise _error(
            cuda,
            base,
            f"{MUSA} gives this process no GPU (the driver reads indices, such as '0,1')",
            f"Set {MUSA} to the job's GPUs, such as '0,1', or to 'all', or unset it.",
        )
    for index in chosen:
        if index >= len(given):
            count = f"{len(given)} GPUs (0 to {len(given) - 1})"
            if len(given) == 1:
                count = "1 GPU (GPU 0)"
            raise _error(
                cuda,
                base,
                f"it names GPU {index}, and {MUSA} gives this process {count}",
                f"{CUDA} counts within {MUSA}: set it to indices below {len(given)}, or unset "
                f"{MUSA} (or set it to 'all') so that it counts every GPU.",
            )
    return ",".join(str(given[i]) for i in chosen) if chosen else "-1"


def plan(environ: Optional[MutableMapping[str, str]] = None) -> Dict[str, Optional[str]]:
    """The changes the rule makes to ``environ`` (default ``os.environ``): variable -> new value,
    None to unset it; empty when it stands as it is. Raises :class:`VisibleDevicesError` (a
    ValueError) for a ``CUDA_VISIBLE_DEVICES`` that cannot be read within the user's
    ``MUSA_VISIBLE_DEVICES``.

    Example::

        >>> env = {"MUSA_VISIBLE_DEVICES": "2,3", "CUDA_VISIBLE_DEVICES": "1"}
        >>> plan(env)["MUSA_VISIBLE_DEVICES"]
        '3'
    """
    env = os.environ if environ is None else environ
    cuda, musa, derived = env.get(CUDA), env.get(MUSA), env.get(DERIVED)
    ours = musa is not None and musa == derived
    base = env.get(BASE) if ours else musa
    if cuda is None:
        # CUDA_VISIBLE_DEVICES was unset after torchada derived from it: the user's value is back.
        return {MUSA: base, DERIVED: None, BASE: None} if ours else {}
    if not ours and musa is not None and musa.strip() == cuda.strip():
        return {}
    target = _physical(cuda, base)
    if target == musa:
        return {}
    return {MUSA: target, DERIVED: target, BASE: base}


def apply(changes: Dict[str, Optional[str]], environ: MutableMapping[str, str]) -> None:
    """Make the changes :func:`plan` gave in ``environ``.

    Example::

        >>> env = {"CUDA_VISIBLE_DEVICES": "1", "MUSA_VISIBLE_DEVICES": "2,3"}
        >>> apply(plan(env), env); env["MUSA_VISIBLE_DEVICES"], env["TORCHADA_MUSA_VISIBLE_BASE"]
        ('3', '2,3')
    """
    for name, value in changes.items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value


def _on(name: str, environ: MutableMapping[str, str]) -> bool:
    return environ.get(name, "").strip().lower() in ON


def start(environ: Optional[MutableMapping[str, str]] = None) -> None:
    """Run by torchada's ``.pth`` line at interpreter start: choose the devices when torchada is
    active (``TORCHADA_ACTIVE`` on, ``TORCHADA_DISABLE`` off). A setting that cannot be read is
    left as it is: torchada's activation in this process raises the error (at ``import torch`` or
    ``import torchada``), with its traceback where the user looks.

    Example::

        >>> env = {"TORCHADA_ACTIVE": "1", "CUDA_VISIBLE_DEVICES": "1"}
        >>> start(env); env["MUSA_VISIBLE_DEVICES"]
        '1'
    """
    env = os.environ if environ is None else environ
    if not _on(ACTIVE, env) or _on(DISABLE, env):
        return
    try:
        changes = plan(env)
    except VisibleDevicesError:
        return
    apply(changes, env)


__all__ = (
    "VisibleDevicesError",
    "apply",
    "cuda_indices",
    "driver_indices",
    "plan",
    "start",
)
