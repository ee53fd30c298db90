"""SGLang's platform test, in its own words: torchada imports, and torch reports a MUSA version."""

from functools import lru_cache

import torch


@lru_cache(maxsize=1)
def is_musa() -> bool:
    try:
        import torchada  # noqa: F401
    except ImportError:
        return False
    return hasattr(torch.version, "musa") and torch.version.musa is not None
