"""The torch_musa releases the simulator models, and which one runs (``TORCHADA_SIM_RELEASE``).

The facts that differ between releases are data (``releases.json`` beside this file); the code
of the simulated package asks :func:`facts` rather than comparing version strings.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

SWITCH = "TORCHADA_SIM_RELEASE"


@functools.lru_cache(maxsize=1)
def table() -> Dict[str, Any]:
    """The data of ``releases.json``.

    Example::

        >>> sorted(table()["releases"])
        ['2.11.0.post2', '2.7.1', '2.9.1.post1']
    """
    with open(Path(__file__).with_name("releases.json"), encoding="utf-8") as f:
        return json.load(f)


def default_for(torch_version: str) -> str:
    """The release paired with ``torch_version``: 2.9.x -> 2.9.1.post1, 2.11.x ->
    2.11.0.post2, any other torch -> 2.7.1.

    Example::

        >>> default_for("2.11.0+cu128"), default_for("2.13.0+cpu")
        ('2.11.0.post2', '2.7.1')
    """
    data = table()
    major_minor = ".".join(torch_version.split("+")[0].split(".")[:2])
    return data["by_torch"].get(major_minor, data["default"])


def resolve(
    environ: Optional[Mapping[str, str]] = None, torch_version: Optional[str] = None
) -> str:
    """The release to simulate: ``TORCHADA_SIM_RELEASE`` when set (a release it does not know is
    refused with a ValueError that lists those it does), else the one paired with the installed
    torch.

    Example::

        >>> resolve({"TORCHADA_SIM_RELEASE": "2.9.1.post1"})
        '2.9.1.post1'
    """
    from .._core.env import choice

    env = os.environ if environ is None else environ
    chosen = choice(SWITCH, env)
    if chosen is not None:
        return chosen
    if torch_version is None:
        import torch

        torch_version = torch.__version__
    return default_for(torch_version)


def facts(release: str) -> Dict[str, Any]:
    """What ``release`` is like (one entry of ``releases.json``).

    Example::

        >>> facts("2.9.1.post1")["graph_layout"]
        '2.9.1.post1'
    """
    return table()["releases"][release]


def graph_layout(release: str) -> Dict[str, int]:
    """Byte offsets of ``at::musa::MUSAGraph``'s members in ``release``.

    Example::

        >>> graph_layout("2.9.1.post1")["has_graph_exec_"]
        18
    """
    return table()["graph_layouts"][facts(release)["graph_layout"]]
