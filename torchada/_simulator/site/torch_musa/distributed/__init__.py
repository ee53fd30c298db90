"""Distributed support of the simulator: the mccl backend (see distributed/mccl_backend)."""

try:
    from . import mccl_backend as _mccl_backend  # noqa: F401
except ImportError:  # pragma: no cover - the backend module is optional while being built
    pass
