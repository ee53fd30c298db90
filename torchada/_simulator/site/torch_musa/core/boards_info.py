# Re-exports the simulated SDK's version facts for the modules of this package.
from torchada._simulator.boards import MCCL_VERSION, MUDNN_VERSION, MUSA_VERSION  # noqa: F401
