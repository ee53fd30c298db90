"""``__CUDA_ARCH__`` in CUDA sources, rewritten as tests on the MUSA arch macro.

Comparisons with an integer literal (either order), ``defined()`` and truthiness tests are
rewritten through the rules' arch threshold table (``rules/arch.json``); the name in ``#define`` and
``#undef`` is renamed (its value is left as written); any other use is left for the porter's
report to flag. Used by the translator (``_engine``) for the one rule of kind
"arch-macro".
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from ._lexical import _HWS, _SPACE_CHARS, _WORD_CHARS, _WS, _tokens_before
from ._ruleset import ArchTier

# A rewrite: (start, end, replacement, report label).
Edit = Tuple[int, int, str, str]

NOTE = (
    "{} used in a way the threshold table cannot rewrite safely "
    "(not a plain comparison with an integer literal, nor a defined()/truthiness test)"
)

# `__CUDA_ARCH__ <op> <integer>`, matched right after the macro name.
_ARCH_FWD = re.compile(
    rf"(?P<ws1>{_WS})(?P<op>[<>]=?|[=!]=)(?P<ws2>{_WS})(?P<num>\d+)[uUlL]*(?![\w.])", re.ASCII
)
# What may follow a rewritten comparison / bare use: end of the expression or a looser operator.
# (Equality after either operator kind associates safely: (a < b) == c, (a == b) == c.)
# Block comments are skipped so that what follows them is what gets checked.
_SKIP_BLOCK = rf"{_HWS}(?:/\*[^*]*\*+(?:[^/*][^*]*\*+)*/{_HWS})*"
_ARCH_POST = re.compile(rf"{_SKIP_BLOCK}(?:\r?\n|\Z|[),?:;}}\]&|^]|==|!=|//)", re.ASCII)
_ARCH_TRUTH_POST = re.compile(rf"{_SKIP_BLOCK}(?:&&|\|\||\r?\n|\Z|//)", re.ASCII)
_ARCH_DEFINED_POST = re.compile(rf"{_SKIP_BLOCK}(?:\)|&&|\|\||\r?\n|\Z|//)", re.ASCII)
_NUMBER = re.compile(r"\d+[uUlL]*\Z", re.ASCII)
# Single-character tokens that bind looser than a comparison when they precede it.
_ARCH_PRE_CHARS = frozenset("(,?:;{}[&|^=")
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}


class ArchRewriter:
    """Rewrites uses of the CUDA arch macro ``key`` as tests on the MUSA macro ``musa``."""

    def __init__(self, key: str, musa: str, tiers: Tuple[ArchTier, ...]) -> None:
        self.key, self.musa, self.tiers = key, musa, tiers
        self.note = NOTE.format(key)
        self._cache: Dict[tuple, Tuple[str, str]] = {}

    def edit(self, text: str, start: int, name_end: int) -> Optional[Edit]:
        """The rewrite of the use of the macro at ``start`` (its name ends at ``name_end``), or
        None when it cannot be rewritten safely (the caller reports it for attention)."""
        key = self.key
        fwd = _ARCH_FWD.match(text, name_end)
        if fwd is not None:
            ws1, op, ws2, num = fwd.groups()
            end = fwd.end()
            if _arch_pre_ok(text, start, op) and _ARCH_POST.match(text, end):
                new, label = self._rewrite(op, int(num), ws1, ws2, None)
                return (start, end, new, label)
            return None
        rev = _reversed_comparison(text, start)
        if rev is not None:
            num_start, number, op, ws1, ws2 = rev  # op as written: <number> <op> <macro>
            fwd_op = _FLIP[op]
            if _arch_pre_ok(text, num_start, fwd_op) and _ARCH_POST.match(text, name_end):
                new, label = self._rewrite(fwd_op, number, ws1, ws2, True)
                return (num_start, name_end, new, label)
            return None
        before = _tokens_before(text, start, 2)
        defined = (
            (before[:1] == ["defined"] or before[:2] == ["(", "defined"])
            and _ARCH_DEFINED_POST.match(text, name_end)
        ) or (
            len(before) == 2
            and before[0] in ("ifdef", "ifndef", "undef")
            and before[1] == "#"
            and _ARCH_TRUTH_POST.match(text, name_end)
        )
        truthy = (
            (len(before) == 2 and before[0] in ("if", "elif") and before[1] == "#")
            or before[:2] in (["&", "&"], ["|", "|"])
            or (before[:1] == ["!"])
        ) and _ARCH_TRUTH_POST.match(text, name_end)
        # `#define`/`#undef` of the macro itself (a stand-in for editors' indexers): the name only.
        named = len(before) == 2 and before[0] in ("define", "undef") and before[1] == "#"
        if defined or truthy or named:
            return (start, name_end, self.musa, key)  # type: ignore[return-value]
        return None

    def _rewrite(
        self, op: str, number: int, ws1: str, ws2: str, reverse: Optional[bool]
    ) -> Tuple[str, str]:
        """(replacement, report label) for ``macro op number``, memoised (few distinct ones)."""
        cache_key = (op, number, ws1, ws2, reverse)
        hit = self._cache.get(cache_key)
        if hit is None:
            tiers, musa = self.tiers, self.musa
            if reverse:
                cond = _arch_condition(tiers, op, number, musa, "", "")
                new = _reverse_condition(cond, musa, ws1, ws2)
            else:
                new = _arch_condition(tiers, op, number, musa, ws1, ws2)
            hit = self._cache[cache_key] = (new, f"{self.key} {op} {number}")
        return hit


def _arch_pre_ok(text: str, start: int, op: str) -> bool:
    """Whether what precedes a ``__CUDA_ARCH__`` comparison binds looser than the comparison."""
    i = start
    while i and text[i - 1] in " \t":
        i -= 1
    if i and text[i - 1] in "(,?;{}[&|^":  # the usual `#if X && __CUDA_ARCH__ ...` shapes
        return True
    if i >= 3 and text[i - 2 : i] == "if":  # `#if` / `#elif`
        j = i - 4 if text[i - 4 : i - 2] == "el" else i - 2
        while j and text[j - 1] in " \t":
            j -= 1
        if j and text[j - 1] == "#":
            return True
    tokens = _tokens_before(text, start, 2)
    if not tokens:
        return True
    first = tokens[0]
    if first in ("return",) or (first in ("if", "elif") and tokens[1:2] == ["#"]):
        return True
    if first not in _ARCH_PRE_CHARS:
        return False
    if first == "=":
        # Plain assignment is fine; `==`/`!=` only ahead of a relational comparison, since
        # relational binds tighter (a == X < N); `<=`/`>=` never.
        prev = tokens[1] if len(tokens) > 1 else ""
        if prev in ("=", "!"):
            return op not in ("==", "!=")
        return prev not in ("<", ">")
    return True


def _reversed_comparison(text: str, start: int) -> Optional[Tuple[int, int, str, str, str]]:
    """Parse ``<number> <op>`` right before ``start``; returns (start, number, op, ws1, ws2)."""
    i = start
    while i > 0 and (text[i - 1] in _SPACE_CHARS or text[i - 1] == "\\"):
        i -= 1
    if i < 1:
        return None
    c = text[i - 1]
    if c == "=" and i >= 2 and text[i - 2] in "<>=!":
        op, i = text[i - 2 : i], i - 2
    elif c in "<>" and not (i >= 2 and text[i - 2] in "<>-"):
        op, i = c, i - 1
    else:
        return None
    if op in ("<", ">") and i >= 1 and text[i - 1] in "<>":
        return None
    op_start = i
    while i > 0 and (text[i - 1] in _SPACE_CHARS or text[i - 1] == "\\"):
        i -= 1
    num_end = i
    while i > 0 and text[i - 1] in _WORD_CHARS:
        i -= 1
    if i == num_end or not _NUMBER.match(text, i, num_end) or (i > 0 and text[i - 1] == "."):
        return None
    return (
        i,
        int(re.match(r"\d+", text[i:num_end]).group()),  # type: ignore[union-attr]
        op,
        text[num_end:op_start],
        text[op_start + len(op) : start],
    )


def _arch_condition(
    tiers: Tuple[ArchTier, ...], op: str, number: int, musa: str, ws1: str, ws2: str
) -> str:
    """Rewrite ``__CUDA_ARCH__ <op> <number>`` as an equivalent test on the MUSA arch macro.

    A MUSA tier "has" CUDA arch N's features when N <= tier.cuda_max. Results that hold on no
    (or every) MUSA arch become 0 (or 1) only where that also matches the host pass, on which
    __CUDA_ARCH__ is undefined and compares as 0.
    """
    keep = ws1 + ws2 if "\n" in ws1 + ws2 else ""
    if op in (">", "<="):
        number += 1
        op = ">=" if op == ">" else "<"
    if op in (">=", "<"):
        having = [t for t in tiers if number <= t.cuda_max]
        if not having:
            return ("0" if op == ">=" else "1") + keep
        return f"{musa}{ws1}{op}{ws2}{having[0].musa_arch}"
    tier = next((t for t in tiers if t.cuda_min <= number <= t.cuda_max), None)
    if tier is None:
        return ("0" if op == "==" else "1") + keep
    return f"{musa}{ws1}{op}{ws2}{tier.musa_arch}"


def _reverse_condition(forward: str, musa: str, ws1: str, ws2: str) -> str:
    """Write a forward condition back in the ``N op MACRO`` order the source used."""
    m = re.match(rf"{re.escape(musa)}(?P<op>[<>]=?|[=!]=)(?P<n>\d+)\Z", forward)
    if m is None:  # a constant
        return forward
    return f"{m.group('n')}{ws1}{_FLIP[m.group('op')]}{ws2}{musa}"
