"""torch.backends.mudnn: the cuDNN analogue. Only allow_tf32 exists (no enabled/benchmark/...).

As in torch_musa 2.7.1 (``torch_musa/core/mudnn.py``) the module is replaced by a ``PropModule``
whose ``allow_tf32`` is a ``ContextProp``: like ``torch.backends.cudnn``'s flags, it refuses
writes after ``torch.backends.disable_global_flags()`` outside ``flags()``.
"""

import sys
from contextlib import contextmanager

from torch.backends import ContextProp, PropModule, __allow_nonbracketed_mutation

import torch_musa


def version():
    from torchada._simulator.boards import MUDNN_VERSION

    return int(MUDNN_VERSION)


def set_flags(_allow_tf32: bool):
    orig_flags = (torch_musa._MUSAC._get_allow_tf32(),)
    torch_musa._MUSAC._set_allow_tf32(_allow_tf32)
    return orig_flags


@contextmanager
def flags(allow_tf32=True):
    with __allow_nonbracketed_mutation():
        orig_flags = set_flags(allow_tf32)
    try:
        yield
    finally:
        with __allow_nonbracketed_mutation():
            set_flags(*orig_flags)


class MudnnModule(PropModule):
    """The module object that serves muDNN's switch as a property."""

    # Evaluated in the class body, as torch_musa does: it lists the body's own names so far.
    __all__ = list(set(vars().keys()) - {"__module__", "__qualname__"})

    allow_tf32 = ContextProp(torch_musa._MUSAC._get_allow_tf32, torch_musa._MUSAC._set_allow_tf32)


sys.modules[__name__] = MudnnModule(sys.modules[__name__], __name__)
