"""torch_musa.core.musa: the legacy storage classes (torch.musa.FloatStorage, ...)."""

import importlib

import torch  # noqa: F401

import torch_musa  # noqa: F401

_legacy = importlib.import_module("torchada._simulator.legacy_types")
globals().update({n: getattr(_legacy, n) for n in _legacy.__all__ if n.endswith("Storage")})
del _legacy, importlib
