"""torch.backends.mudnn: the cuDNN analogue. Only allow_tf32 exists (no enabled/benchmark/...)."""

import sys
import types
from contextlib import contextmanager

import torch_musa


def version():
    from torchada._simulator.boards import MUDNN_VERSION

    return int(MUDNN_VERSION)


def set_flags(_allow_tf32):
    orig = (torch_musa._MUSAC._get_allow_tf32(),)
    if _allow_tf32 is not None:
        torch_musa._MUSAC._set_allow_tf32(_allow_tf32)
    return orig


@contextmanager
def flags(allow_tf32=True):
    orig = set_flags(allow_tf32)
    try:
        yield
    finally:
        set_flags(*orig)


class MudnnModule(types.ModuleType):
    @property
    def allow_tf32(self):
        return torch_musa._MUSAC._get_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, value):
        if not isinstance(value, bool):
            raise TypeError("allow_tf32 must be a bool")
        torch_musa._MUSAC._set_allow_tf32(value)


sys.modules[__name__].__class__ = MudnnModule
