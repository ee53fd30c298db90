"""Loads the kernels the way sgl-kernel does: importing the extension registers its ops."""

from sgl_like import common_ops  # noqa: F401


def is_musa() -> bool:
    # SGLang's test: torchada imports, and torch reports a MUSA version.
    import torch

    try:
        import torchada  # noqa: F401
    except ImportError:
        return False
    return hasattr(torch.version, "musa") and torch.version.musa is not None
