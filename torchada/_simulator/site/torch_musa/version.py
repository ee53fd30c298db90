import importlib

_boards = importlib.import_module("torchada._simulator.boards")
__version__ = f"{_boards.TORCH_MUSA_VERSION}+{_boards.TORCH_MUSA_GIT}"
git_version = _boards.TORCH_MUSA_GIT * 6 + _boards.TORCH_MUSA_GIT[:5]
del _boards, importlib
