from torchada._simulator.boards import TORCH_MUSA_GIT, TORCH_MUSA_VERSION

__version__ = f"{TORCH_MUSA_VERSION}+{TORCH_MUSA_GIT}"
git_version = TORCH_MUSA_GIT * 6 + TORCH_MUSA_GIT[:5]
