"""torch_musa.distributed: registers the mccl backend (the simulator's lives in
torchada._simulator.mccl_backend, outside the torch_musa namespace)."""

import importlib

importlib.import_module("torchada._simulator.mccl_backend")
del importlib
