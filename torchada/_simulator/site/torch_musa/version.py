import importlib

_boards = importlib.import_module("torchada._simulator.boards")
_state = importlib.import_module("torchada._simulator.state")
# The release simulated, with the build's git sha as a local part (as setup.py writes it).
__version__ = f"{_state.config.release}+{_boards.TORCH_MUSA_GIT}"
git_version = _boards.TORCH_MUSA_GIT * 6 + _boards.TORCH_MUSA_GIT[:5]
del _boards, _state, importlib
