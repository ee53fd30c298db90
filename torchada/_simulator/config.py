"""Reads the simulator's environment switches once, with clear errors for bad values."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .boards import BOARDS, DEFAULT_BOARD, DEFAULT_DEVICE_COUNT, MAX_DEVICES


@dataclass(frozen=True)
class SimConfig:
    board: str
    physical_devices: int
    visible: tuple  # physical indices visible to this process, in order

    @property
    def device_count(self) -> int:
        return len(self.visible)

    @property
    def spec(self) -> dict:
        return BOARDS[self.board]


def _parse_visible(value: str, physical: int) -> tuple:
    # Like CUDA_VISIBLE_DEVICES: the list stops at the first invalid entry.
    out: list = []
    for item in value.split(","):
        item = item.strip()
        if not item.lstrip("-").isdigit():
            break
        idx = int(item)
        if idx < 0 or idx >= physical or idx in out:
            break
        out.append(idx)
    return tuple(out)


def read_config(environ: "os._Environ | dict | None" = None) -> SimConfig:
    env = os.environ if environ is None else environ
    board = env.get("TORCHADA_SIM_BOARD", DEFAULT_BOARD).strip().upper().replace("MTT", "").strip()
    if board not in BOARDS:
        raise ValueError(
            f"TORCHADA_SIM_BOARD={env.get('TORCHADA_SIM_BOARD')!r} is not a simulated board; "
            f"use one of {', '.join(BOARDS)}"
        )
    raw = env.get("TORCHADA_SIM_DEVICES", str(DEFAULT_DEVICE_COUNT)).strip()
    if not raw.isdigit() or int(raw) > MAX_DEVICES:
        raise ValueError(
            f"TORCHADA_SIM_DEVICES={raw!r} must be a whole number from 0 to {MAX_DEVICES}"
        )
    physical = int(raw)
    visible_env = env.get("MUSA_VISIBLE_DEVICES")
    visible = (
        tuple(range(physical)) if visible_env is None else _parse_visible(visible_env, physical)
    )
    return SimConfig(board=board, physical_devices=physical, visible=visible)
