"""Operator overrides for the MUSA backend: C++ kernels on the PrivateUse1 key.

torchada's own overrides are installed with ``TORCHADA_ENABLE_CPP_OPS=1``. To write one of your
own, follow docs/native_ops.md: a C++ file against ``op_override.h`` (in :func:`include_dir`),
built and installed with :func:`load`::

    import torchada
    from torchada import op_overrides

    ext = op_overrides.load("my_overrides", ["my_overrides.cpp"])
    print(op_overrides.installed())
"""

from __future__ import annotations

from ._ops.overrides import available, include_dir, installed, load, register, state

__all__ = ["available", "include_dir", "installed", "load", "register", "state"]
