"""Simulated Moore Threads boards (data). Chosen with TORCHADA_SIM_BOARD; S4000 by default."""

from __future__ import annotations

GiB = 1 << 30

# name, (major, minor), total memory in bytes, multiprocessors. Capabilities and memory sizes are
# the published ones; the S80/S3000/S4000 multiprocessor counts are not published: our choice.
BOARDS: dict[str, dict] = {
    "S80": {"name": "MTT S80", "capability": (2, 1), "total_memory": 16 * GiB, "sm_count": 32},
    "S3000": {"name": "MTT S3000", "capability": (2, 1), "total_memory": 32 * GiB, "sm_count": 32},
    "S4000": {"name": "MTT S4000", "capability": (2, 2), "total_memory": 48 * GiB, "sm_count": 48},
    "S5000": {
        "name": "MTT S5000",
        "capability": (3, 1),
        "total_memory": int(79.91 * GiB),
        "sm_count": 56,
    },
}

DEFAULT_BOARD = "S4000"

# The MUSA SDK version the simulated driver reports (torch.version.musa; MUSA_VERSION of SDK 5.1.0).
MUSA_VERSION = "50100"
MUDNN_VERSION = 2900
MCCL_VERSION = (2, 11, 4)
TORCH_MUSA_GIT = "0000000"  # the simulator is no real build: an all-zero sha says so
