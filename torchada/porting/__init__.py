"""Source porter: rewrites CUDA C++/CUDA sources for MUSA (torch_musa / the MUSA SDK).

Pure Python; importing it does not import torch.

* :func:`port_source` ports one string (for ``load_inline(cuda_sources=...)``).
* :func:`port_tree` ports a directory (or a file) into an output directory, incrementally.
* ``python -m torchada port SRC --out DIR`` is the command-line front end (:mod:`.cli`).

Rules are data (``rules/<domain>.json``); see :func:`load_rules`. Policies:

* Comments and string literals are never rewritten (``rewrite_comments=True`` applies the plain
  renames inside comments); ``#include``/``__has_include`` operands go through the header table.
* ``CUDA_VERSION``-style macros are never renamed (MUSA's version numbers use another scale);
  every use is reported under ``attention``.
* ``__CUDA_ARCH__ <op> N`` is rewritten value-aware through the threshold rows in
  ``rules/arch.json``; bare uses only in ``defined()``/``#ifdef``/truthiness contexts.
* ``.mu``/``.muh`` files are hand-written MUSA and are never modified.
"""

from __future__ import annotations

from typing import Optional, Tuple

from ._engine import MUSA_SUFFIXES, Translator, get_translator
from ._ruleset import ArchTier, Rule, RuleError, RuleSet, load_rules
from .report import FileReport, Finding, TreeReport
from .tree import PortError, PortPathError, PortSourceNotFoundError, port_tree

__all__ = [
    "ArchTier",
    "FileReport",
    "Finding",
    "MUSA_SUFFIXES",
    "PortError",
    "PortPathError",
    "PortSourceNotFoundError",
    "Rule",
    "RuleError",
    "RuleSet",
    "Translator",
    "TreeReport",
    "load_rules",
    "port_source",
    "port_tree",
]


def port_source(
    text: str,
    *,
    filename: Optional[str] = None,
    rename_cu: bool = True,
    rewrite_comments: bool = False,
) -> Tuple[str, FileReport]:
    """Port CUDA source ``text``; returns ``(ported_text, report)``.

    ``filename`` only labels the report, except that a ``.mu``/``.muh`` name returns the text
    untouched. ``rename_cu`` rewrites quoted ``#include "x.cuh"``/``"x.cu"`` to ``.muh``/``.mu``
    (matching what :func:`port_tree` does to the files); ``rewrite_comments`` also applies the
    plain renames inside comments. Porting is idempotent: porting the result again changes
    nothing.

    Example::

        >>> from torchada.porting import port_source
        >>> text, report = port_source('#include "k.cuh"  // cudaMalloc')
        >>> text, report.translated
        ('#include "k.muh"  // cudaMalloc', {'#include "*.cuh"': 1})
        >>> port_source("cudaMalloc(p);  // cudaMalloc", rewrite_comments=True)[0]
        'musaMalloc(p);  // musaMalloc'
        >>> port_source(text)[0] == text
        True
    """
    return get_translator(rename_cu, rewrite_comments).port(text, filename=filename)
