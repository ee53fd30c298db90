"""Reads the simulator's environment switches once, with clear errors for bad values."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

from .._core.env import choice, whole_number
from . import releases
from .boards import BOARDS, DEFAULT_BOARD


@dataclass(frozen=True)
class SimConfig:
    board: str
    physical_devices: int
    visible: tuple  # physical indices visible to this process, in order
    release: str = releases.table()["default"]  # the torch_musa release simulated

    @property
    def device_count(self) -> int:
        return len(self.visible)

    @property
    def spec(self) -> dict:
        return BOARDS[self.board]

    @property
    def facts(self) -> dict:
        return releases.facts(self.release)


def _parse_visible(value: str, physical: int) -> tuple:
    # Like CUDA_VISIBLE_DEVICES: the list stops at the first invalid entry. The driver says
    # nothing, and "no GPUs are available" comes much later: say here which entry hid the rest.
    out: list = []
    for item in value.split(","):
        item = item.strip()
        digits = item[1:] if item.startswith("-") else item
        valid = digits.isascii() and digits.isdigit()
        idx = int(item) if valid else -1
        if idx < 0 or idx >= physical or idx in out:
            warnings.warn(
                f"MUSA_VISIBLE_DEVICES={value!r}: reading stops at {item!r}, which is not a "
                f"device index from 0 to {physical - 1} seen once, so {len(out)} of {physical} "
                "simulated devices are visible; use comma-separated indices such as '0,1'",
                UserWarning,
                stacklevel=2,
            )
            break
        out.append(idx)
    return tuple(out)


def read_config(environ: "os._Environ | dict | None" = None) -> SimConfig:
    env = os.environ if environ is None else environ
    board = (
        choice("TORCHADA_SIM_BOARD", env, lambda v: v.strip().upper().replace("MTT", "").strip())
        or DEFAULT_BOARD
    )
    physical = whole_number("TORCHADA_SIM_DEVICES", env)
    # Read by the simulated libmusart (musaGraphInstantiate); a bad value is refused here.
    whole_number("TORCHADA_SIM_GRAPH_EXEC_LIMIT", env)
    visible_env = env.get("MUSA_VISIBLE_DEVICES")
    visible = (
        tuple(range(physical)) if visible_env is None else _parse_visible(visible_env, physical)
    )
    return SimConfig(
        board=board, physical_devices=physical, visible=visible, release=releases.resolve(env)
    )
