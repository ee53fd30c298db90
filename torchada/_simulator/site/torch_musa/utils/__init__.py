"""torch_musa.utils: only BuildExtension and MUSAExtension are re-exported."""

from . import musa_extension  # noqa: F401
from .musa_extension import BuildExtension, MUSAExtension  # noqa: F401

__all__ = ["BuildExtension", "MUSAExtension"]
