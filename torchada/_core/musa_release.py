"""Which torch_musa release is installed, read from the package itself (``torch_musa.__version__``).

Releases are named as torch_musa's ``version.txt`` names them: ``2.7.1``, ``2.9.1.post1``,
``2.11.0.post2``. The wheel's ``+local`` tag (``+musa5.2.0``, ``+395c00c``) is not part of it.
"""

from __future__ import annotations

import sys
from typing import Optional

from . import tables


def release() -> Optional[str]:
    """The installed torch_musa's release, without its ``+local`` tag; None without torch_musa or
    without a version.

    Example::

        >>> release()  # doctest: +SKIP
        '2.11.0.post2'
    """
    musa = sys.modules.get("torch_musa")
    version = getattr(musa, "__version__", None) if musa is not None else None
    if not isinstance(version, str) or not version.strip():
        return None
    return version.strip().split("+", 1)[0]


def has_defect(defect: str) -> bool:
    """Whether the installed torch_musa release is listed with ``defect`` in
    ``torchada/tables/torch_musa_releases.json``.

    Example::

        >>> has_defect("mm_out_dtype")  # doctest: +SKIP
        True
    """
    known = tables.load("torch_musa_releases").defects
    if defect not in known:
        raise ValueError(f"{defect!r} is not a defect of torch_musa_releases.json: {sorted(known)}")
    return release() in known[defect]


__all__ = ["has_defect", "release"]
