"""The single-pass CUDA -> MUSA source translator.

One compiled "master" regex walks the text once and stops only at:

* comments, string / character / raw-string literals (skipped whole, so nothing inside them is
  ever mistaken for code),
* ``#include`` and ``__has_include`` operands (rewritten through the header table),
* *needles*: short CUDA-ish fragments (``cuda``, ``CUDA``, ``cu[A-Z]``, ``nccl``, ``nv_``...,
  listed in ``rules/_detect.json``). A needle hit is widened to the whole identifier, which is
  then looked up in the rule tables by exact name, so word boundaries are exact and
  ``mycudaMalloc`` / ``cudaMallocX`` never match ``cudaMalloc``.

The alternatives are grouped by their first literal character so ``re`` can use its
first-character prefilter: ordinary code is skipped in C, and Python only runs for the (rare)
stops. That is what makes the porter fast (tens of MB/s) in pure Python.

Policy: comments and string literals are left untouched (comments optionally get the plain
renames); include operands are the only strings rewritten.
"""

from __future__ import annotations

import functools
import logging
import re
from collections import Counter
from typing import Dict, FrozenSet, List, Optional, Pattern, Sequence, Tuple, Union

from ._arch import ArchRewriter
from ._lexical import _WORD_CHARS, _tokens_before
from ._ruleset import Rule, RuleError, RuleSet, load_rules
from .report import STATUS_MUSA, STATUS_PORTED, STATUS_UNCHANGED, FileReport, Finding

logger = logging.getLogger("torchada.porting")

#: Hand-written MUSA sources: never rewritten, whatever the caller asks.
MUSA_SUFFIXES = (".mu", ".muh")


# Token kinds, as ints for a cheap dispatch in the hot loop.
_K_SKIP, _K_COMMENT, _K_INCLUDE, _K_IDENT = range(4)

# After the R of a raw string: no word character before it, or exactly an encoding prefix.
_RAW_START = r"(?:(?<!\w.)|(?<=(?<!\w)[uUL].)|(?<=(?<!\w)u8.))"
_RAW_BODY = r'"(?P<rd>[^()\\\s"]{0,16})\([\s\S]*?\)(?P=rd)"'
_CHAR_BODY = r"(?:[^'\\\n]|\\[\s\S])*'"

# Starts with a literal so re can skip ahead quickly; `#` need not be first on its line (rare).
_DEFINE = re.compile(r"#[ \t]*define[ \t]+(\w+)", re.ASCII)
# What precedes a declared name (a function, kernel, variable or type): a type name, not a
# statement keyword, maybe qualified, maybe with template arguments (then pointer/reference marks
# or spaces, checked by hand first: most uses are calls, rejected at one character).
_DECLARED_AFTER = re.compile(
    r"(?<![\w.>:])(?!(?:return|else|case|throw|new|delete|goto|sizeof|co_return|co_yield)\b)"
    r"[A-Za-z_][\w:]*(?:[ \t]*<[^;(){}]*>)?\Z",
    re.ASCII,
)
# How far back a declaration's type may start.
_DECLARATION_REACH = 160
_DECLARATOR_MARKS = frozenset(" \t\r\n*&")
_TYPE_END = _WORD_CHARS | {">"}
_DECLARATOR_END = frozenset(" \t([=;{,):")


def _declares(text: str, name: str) -> bool:
    """Whether ``text`` declares ``name`` (``int name = ...``, ``T<x> name(...)``, ...)."""
    at = text.find(name)
    while at != -1:
        after = at + len(name)
        if (at == 0 or text[at - 1] not in _WORD_CHARS) and (
            after < len(text) and text[after] in _DECLARATOR_END
        ):
            end = at  # skip the spaces and * & between the type and the name
            while end and text[end - 1] in _DECLARATOR_MARKS:
                end -= 1
            if end != at and end and text[end - 1] in _TYPE_END:
                if _DECLARED_AFTER.search(text, max(0, end - _DECLARATION_REACH), end):
                    return True
        at = text.find(name, after)
    return False


# A rewrite decided by a handler: (start, end, replacement, report label or "").
_Edit = Tuple[int, int, str, str]
# A context element: a literal token, a set of alternatives, or None for "any identifier".
_Elem = Union[str, FrozenSet[str], None]


class _Context:
    """A rule that applies only after certain tokens (``at::``, ``x.``, ``IMPL(ns,``)."""

    __slots__ = ("pattern", "rule", "replacement", "shape")

    def __init__(self, pattern: Sequence[_Elem], rule: Rule, replacement: str, shape: str) -> None:
        self.pattern = tuple(pattern)  # nearest token first
        self.rule = rule
        self.replacement = replacement
        self.shape = shape  # how the rule looks in source, for report notes

    def matches(self, tokens: List[str]) -> bool:
        if len(tokens) < len(self.pattern):
            return False
        for want, got in zip(self.pattern, tokens):
            if want is None:
                if not (got[0] in _WORD_CHARS and not got[0].isdigit()):
                    return False
            elif isinstance(want, str):
                if got != want:
                    return False
            elif got not in want:
                return False
        return True


class _Trigger:
    """What to do when an identifier rule key is met: context-dependent choices, then a default."""

    __slots__ = ("key", "plain", "contexts", "depth", "by_qualifier")

    def __init__(self, key: str) -> None:
        self.key = key
        self.plain: Optional[Rule] = None
        self.contexts: List[_Context] = []
        self.depth = 0
        # Contexts that are exactly `<qualifier>::`, by qualifier: the common case, decided
        # without the general backward lexer.
        self.by_qualifier: Dict[str, _Context] = {}


class Translator:
    """Ports source text with one rule set and one set of options. Reusable and thread-safe.

    ``ruleset`` defaults to the bundled rules (:func:`load_rules`); ``rename_cu`` and
    ``rewrite_comments`` are those of :func:`~torchada.porting.port_source`, which uses a cached
    translator over the bundled rules. Building one compiles the scanner for the rule set.

    Raises :class:`RuleError` when a rule's CUDA key is one the scanner would never stop at (and
    whatever :func:`load_rules` raises).

    Example::

        >>> from torchada.porting import Translator
        >>> translator = Translator(rename_cu=False)
        >>> translator.port("cudaStream_t stream;")[0]
        'musaStream_t stream;'
        >>> translator.port('#include "kernel.cuh"')[0]  # rename_cu=False keeps .cuh names
        '#include "kernel.cuh"'
    """

    def __init__(
        self,
        ruleset: Optional[RuleSet] = None,
        *,
        rename_cu: bool = True,
        rewrite_comments: bool = False,
    ) -> None:
        self.ruleset = ruleset if ruleset is not None else load_rules()
        self.rename_cu = rename_cu
        self.rewrite_comments = rewrite_comments
        self._triggers: Dict[str, _Trigger] = {}
        self._plain_renames: Dict[str, str] = {}
        self._build_triggers()
        # Triggers whose only job is an unconditional rename: the hot loop handles them inline.
        self._fast: Dict[str, str] = {
            k: t.plain.musa
            for k, t in self._triggers.items()
            if not t.contexts and t.plain is not None and t.plain.kind == "rename"
        }
        self._ident_patterns = _alternation(self.ruleset.identifier_patterns)
        self._header_patterns = _alternation(self.ruleset.header_patterns)
        self._looks_cuda: Dict[str, bool] = {}
        self._include_cache: Dict[str, Tuple[str, str, str]] = {}
        # The device-pass arch macro is whichever rule has kind "arch-macro" (one at most).
        arch = next((r for r in self.ruleset.rules if r.kind == "arch-macro"), None)
        self._arch_key: Optional[str] = arch.cuda if arch is not None else None
        self._arch = (
            ArchRewriter(arch.cuda, arch.musa, self.ruleset.arch_tiers)
            if arch is not None
            else None
        )
        self._needle_re = re.compile(
            "|".join(re.escape(first) + f"(?:{rest})" for first, rest in self.ruleset.needles),
            re.ASCII,
        )
        self._master, self._group_kind = self._build_master()
        self._check_reachable()

    # ------------------------------------------------------------------ construction
    def _trigger(self, key: str) -> _Trigger:
        trig = self._triggers.get(key)
        if trig is None:
            trig = self._triggers[key] = _Trigger(key)
        return trig

    def _build_triggers(self) -> None:
        for rule in self.ruleset.rules:
            kind = rule.kind
            if kind in ("rename", "version-guard") or (
                kind == "unsupported" and re.fullmatch(r"\w+", rule.cuda, re.ASCII)
            ):
                self._trigger(rule.cuda).plain = rule
                if kind == "rename":
                    self._plain_renames[rule.cuda] = rule.musa
            elif kind == "member":
                ctx = _Context([frozenset({".", "->"})], rule, rule.musa, f"x.{rule.cuda}()")
                self._trigger(rule.cuda).contexts.append(ctx)
            elif kind in ("qualified", "unsupported") and "::" in rule.cuda:
                *qualifier, last = rule.cuda.split("::")
                repl = rule.musa.rsplit("::", 1)[1] if kind == "qualified" else last
                pattern: List[_Elem] = []
                for part in reversed(qualifier):
                    pattern += ["::", part]
                self._trigger(last).contexts.append(_Context(pattern, rule, repl, rule.cuda))
            elif kind == "dispatch-key":
                macros = frozenset(rule.extra.get("macros") or ["TORCH_LIBRARY_IMPL"])
                shape = f"{min(macros, key=len)}(ns, {rule.cuda}, m)"
                ctx = _Context([",", None, "(", macros], rule, rule.musa, shape)
                self._trigger(rule.cuda).contexts.append(ctx)
        for trig in self._triggers.values():
            # Longer (more specific) contexts first, e.g. cutlass::arch:: before arch::.
            trig.contexts.sort(key=lambda c: -len(c.pattern))
            trig.depth = max((len(c.pattern) for c in trig.contexts), default=0)
            for ctx in trig.contexts:
                if len(ctx.pattern) == 2 and ctx.pattern[0] == "::":
                    trig.by_qualifier.setdefault(str(ctx.pattern[1]), ctx)

    def _build_master(self) -> Tuple[Pattern[str], Dict[str, int]]:
        # (first char, group name, pattern for the rest, kind); order matters within a first char.
        comment_kind = _K_COMMENT if self.rewrite_comments else _K_SKIP
        alts: List[Tuple[str, str, str, int]] = [
            # // comment, continued by a trailing backslash.
            ("/", "lc", r"/[^\n]*(?:(?:(?<=\\)|(?<=\\\r))\n[^\n]*)*", comment_kind),
            # /* comment */ (an unterminated one runs to the end of the text).
            ("/", "bc", r"\*(?:[^*]*\*+(?:[^/*][^*]*\*+)*/|[\s\S]*)", comment_kind),
            ('"', "s", r'[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*"', _K_SKIP),
            # Character literal, unless this quote is a C++14 digit separator (1'000, 0xFF'FF).
            ("'", "ch", r"(?:(?<![0-9A-Fa-f]')|(?![0-9A-Fa-f]))" + _CHAR_BODY, _K_SKIP),
            # Raw string R"d(...)d", also with an encoding prefix (u8R, uR, UR, LR).
            ("R", "raw", _RAW_START + _RAW_BODY, _K_SKIP),
            (
                "#",
                "inc",
                r"[ \t]*include(?:_next)?[ \t]*(?P<path>\"[^\"\n]*\"|<[^>\n]*>)",
                _K_INCLUDE,
            ),
            (
                "h",
                "hinc",
                r"(?<=(?<!\w)__h)as_include(?:_next)?[ \t]*\([ \t]*"
                r"(?P<hpath>\"[^\"\n]*\"|<[^>\n]*>)",
                _K_INCLUDE,
            ),
        ]
        alts += [
            (first, f"n{i}", rest, _K_IDENT) for i, (first, rest) in enumerate(self.ruleset.needles)
        ]
        grouped: Dict[str, List[Tuple[str, str]]] = {}
        kinds: Dict[str, int] = {}
        for first, name, rest, kind in alts:
            grouped.setdefault(first, []).append((name, rest))
            kinds[name] = kind
        parts = []
        for first, items in grouped.items():
            inner = "|".join(f"(?P<{name}>{rest})" for name, rest in items)
            parts.append(re.escape(first) + "(?:" + inner + ")")
        master = re.compile("|".join(parts), re.ASCII)
        # Dispatch on Match.lastindex (an int) rather than lastgroup (a name lookup): the outer
        # named group of each alternative closes last, so lastindex identifies it.
        by_index = [_K_SKIP] * (master.groups + 1)
        for name, index in master.groupindex.items():
            if name in kinds:
                by_index[index] = kinds[name]
        self._kind_by_index = tuple(by_index)
        self._inc_index = master.groupindex["inc"]
        # _include reads the operand as "the group right after the directive's own group".
        if (
            master.groupindex["path"] != self._inc_index + 1
            or master.groupindex["hpath"] != master.groupindex["hinc"] + 1
        ):
            raise RuntimeError("include operand groups are not numbered as expected")
        return master, kinds

    def _check_reachable(self) -> None:
        # Rules are found through the needles; a key no needle reaches would silently never apply.
        keys = list(self._triggers)
        if self._arch_key is not None:
            keys.append(self._arch_key)
        for key in keys:
            if not any(m.end() == len(key) for m in self._needle_re.finditer(key)):
                raise RuleError(f"rule key {key!r} contains no needle the scanner stops at")

    # ------------------------------------------------------------------ public
    def port(self, text: str, *, filename: Optional[str] = None) -> Tuple[str, FileReport]:
        """Translate ``text``; returns the new text and a :class:`FileReport`.

        ``filename`` labels the report; a ``.mu``/``.muh`` name returns ``text`` untouched
        (status ``musa-source``).

        Example::

            >>> from torchada.porting import Translator
            >>> text, report = Translator().port("cudaMalloc(&p, n);", filename="k.cu")
            >>> text, report.status, report.translated
            ('musaMalloc(&p, n);', 'ported', {'cudaMalloc': 1})
            >>> Translator().port("cudaMalloc(&p, n);", filename="k.mu")[1].status
            'musa-source'
        """
        report = FileReport(path=filename)
        if filename is not None and filename.lower().endswith(MUSA_SUFFIXES):
            report.status = STATUS_MUSA
            report.notes.append("hand-written MUSA source: left untouched")
            return text, report
        out = self._run(text, report)
        report.status = STATUS_PORTED if out != text else STATUS_UNCHANGED
        return out, report

    def looks_cuda(self, name: str) -> bool:
        """Whether ``name`` looks like a CUDA API name (the report's "remaining" heuristic).

        Example::

            >>> from torchada.porting import Translator
            >>> translator = Translator()
            >>> translator.looks_cuda("cudaFooBar"), translator.looks_cuda("my_helper")
            (True, False)
        """
        hit = self._looks_cuda.get(name)
        if hit is None:
            hit = self._looks_cuda[name] = self._ident_patterns.search(name) is not None
        return hit

    # ------------------------------------------------------------------ hot loop
    def _run(self, text: str, report: FileReport) -> str:
        pieces: List[str] = []
        append = pieces.append
        fast_hits: List[str] = []  # report labels of applied rewrites, counted at the end in C
        hit = fast_hits.append
        last = 0  # end of the text already copied to `pieces`
        kinds = self._kind_by_index
        fast = self._fast
        triggers = self._triggers
        word = _WORD_CHARS
        lines = _LineCounter(text)
        k_ident, k_include = _K_IDENT, _K_INCLUDE

        for m in self._master.finditer(text):
            kind = kinds[m.lastindex]  # type: ignore[index]
            if not kind:  # _K_SKIP
                continue
            start, end = m.span()
            if kind == k_ident:
                # Needles may sit mid-identifier (getCurrentCUDAStream): widen to the whole name.
                # Every other token ends in a non-word character, so this never crosses one.
                if start and text[start - 1] in word:
                    start -= 1
                    while start and text[start - 1] in word:
                        start -= 1
                name = text[start:end]
                new = fast.get(name)
                if new is not None:
                    hit(name)
                    append(text[last:start])
                    append(new)
                    last = end
                    continue
                trig = triggers.get(name)
                if trig is not None:
                    result = self._apply_trigger(trig, text, start, end, report, lines)
                elif name == self._arch_key:
                    result = self._arch.edit(text, start, end)  # type: ignore[union-attr]
                    if result is None:
                        _add(report.attention, name, lines.line(start), self._arch.note)
                else:
                    if not name[0].isdigit() and self.looks_cuda(name):
                        _add(report.remaining, name, lines.line(start), "")
                    continue
            elif kind == k_include:
                result = self._include(m, text, report, lines)
            else:  # _K_COMMENT
                result = self._port_comment(m.group(), start, report.translated)
            if result is not None:
                s, e, new, label = result
                if s < last:  # never rewrite text that was already emitted
                    continue
                if label:
                    hit(label)
                append(text[last:s])
                append(new)
                last = e
        if report.remaining:
            # Macros the file defines itself (NCCL_CHECK, HAS_CUDA12...) are project names.
            for name in _DEFINE.findall(text):
                report.remaining.pop(name, None)
        # So are the functions, kernels and variables it declares (lltm_cuda_forward); names
        # with a rule that did not apply here (is_cuda, namespace cuda) stay reported.
        for name in [n for n in report.remaining if n not in self._triggers]:
            if _declares(text, name):
                del report.remaining[name]
        if fast_hits:
            translated = report.translated
            for name, n in Counter(fast_hits).items():
                translated[name] = translated.get(name, 0) + n
        if not pieces:
            return text
        append(text[last:])
        return "".join(pieces)

    def _port_comment(
        self, comment: str, offset: int, translated: Dict[str, int]
    ) -> Optional[_Edit]:
        """Apply the plain renames inside a comment (only with ``rewrite_comments``)."""
        pieces: List[str] = []
        last = 0
        for m in self._needle_re.finditer(comment):
            start, end = m.span()
            while start > last and comment[start - 1] in _WORD_CHARS:
                start -= 1
            name = comment[start:end]
            new = self._plain_renames.get(name)
            if new is not None:
                _count(translated, name)
                pieces.append(comment[last:start])
                pieces.append(new)
                last = end
        if not pieces:
            return None
        pieces.append(comment[last:])
        return (offset, offset + len(comment), "".join(pieces), "")

    # ------------------------------------------------------------------ handlers
    def _apply_trigger(
        self,
        trig: _Trigger,
        text: str,
        start: int,
        end: int,
        report: FileReport,
        lines: "_LineCounter",
    ) -> Optional[_Edit]:
        if trig.contexts:
            found = None
            if trig.by_qualifier:
                found = _simple_qualifier(text, start, trig)
            if found is None:
                tokens = _tokens_before(text, start, trig.depth)
                found = next((c for c in trig.contexts if c.matches(tokens)), None)
            if found is not None:
                rule = found.rule
                if rule.rewrites:
                    return (start, end, found.replacement, rule.cuda)
                _add(report.attention, rule.cuda, lines.line(start), rule.note)
                return None
        rule = trig.plain
        if rule is None:
            needs = ", ".join(sorted({c.shape for c in trig.contexts}))
            _add(report.remaining, trig.key, lines.line(start), f"rule applies only as {needs}")
            return None
        if rule.kind == "rename":
            return (start, end, rule.musa, rule.cuda)
        _add(report.attention, rule.cuda, lines.line(start), rule.note)
        return None

    def _include(
        self, m: "re.Match[str]", text: str, report: FileReport, lines: "_LineCounter"
    ) -> Optional[_Edit]:
        index = m.lastindex
        start = m.start()
        if index == self._inc_index:
            # `#include` must be the first thing on its line; otherwise it is not a directive.
            if start and text[start - 1] != "\n":
                line_start = text.rfind("\n", 0, start) + 1
                if text[line_start:start].strip(" \t\f\v\r\ufeff"):
                    return None
        ps, pe = m.span(index + 1)  # type: ignore[operator]  # the operand group comes next
        spelled = text[ps:pe]
        decision = self._include_cache.get(spelled)
        if decision is None:
            decision = self._include_cache[spelled] = self._decide_include(spelled)
        action, value, note = decision
        if action == "rewrite":
            return (ps, pe, value, note)
        if action == "attention":
            _add(report.attention, spelled, lines.line(ps), note)
        elif action == "remaining":
            _add(report.remaining, spelled, lines.line(ps), note)
        return None

    def _decide_include(self, spelled: str) -> Tuple[str, str, str]:
        """(action, new spelling, rule key or note) for an include operand like ``<x.h>``."""
        opener, inner, closer = spelled[0], spelled[1:-1], spelled[-1]
        rule = self.ruleset.headers.get(inner)
        if rule is not None:
            if rule.kind == "header":
                return ("rewrite", opener + rule.musa + closer, rule.cuda)
            return ("attention", spelled, rule.note)
        if self.rename_cu and opener == '"':
            # Quoted includes name project files, which port_tree renames .cu/.cuh -> .mu/.muh.
            for old, new in ((".cuh", ".muh"), (".cu", ".mu")):
                if inner.endswith(old):
                    spelled_new = opener + inner[: -len(old)] + new + closer
                    return ("rewrite", spelled_new, f'#include "*{old}"')
        if self._header_patterns.search(inner):
            return ("remaining", spelled, "header without a MUSA mapping")
        return ("keep", spelled, "")


def _simple_qualifier(text: str, start: int, trig: _Trigger) -> Optional[_Context]:
    """Fast path for ``qual::name`` (spaces allowed): the context of ``name``, if decided here.

    Returns None when the text before is not that simple shape, or names another qualifier that
    a longer context (``cutlass::arch::``) might still match; the caller then uses the lexer.
    """
    i = start
    while i and text[i - 1] in " \t":
        i -= 1
    if i < 3 or text[i - 1] != ":" or text[i - 2] != ":":
        return None
    j = i - 2
    while j and text[j - 1] in " \t":
        j -= 1
    k = j
    while k and text[k - 1] in _WORD_CHARS:
        k -= 1
    ctx = trig.by_qualifier.get(text[k:j])
    if ctx is None or len(ctx.pattern) < trig.depth:
        return None  # a deeper context may apply: let the general path decide
    return ctx


def _alternation(patterns: Sequence[str]) -> Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns) or r"(?!)", re.ASCII)


def _count(table: Dict[str, int], key: str) -> None:
    table[key] = table.get(key, 0) + 1


def _add(table: Dict[str, Finding], name: str, line: int, note: str) -> None:
    finding = table.get(name)
    if finding is None:
        table[name] = Finding(name, 1, line, note)
    else:
        finding.count += 1


class _LineCounter:
    """1-based line of a position; positions mostly come in increasing order, so count forward."""

    __slots__ = ("text", "pos", "line_no")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line_no = 1

    def line(self, pos: int) -> int:
        if pos >= self.pos:
            self.line_no += self.text.count("\n", self.pos, pos)
        else:
            self.line_no = self.text.count("\n", 0, pos) + 1
        self.pos = pos
        return self.line_no


@functools.lru_cache(maxsize=8)
def get_translator(rename_cu: bool = True, rewrite_comments: bool = False) -> Translator:
    """A cached :class:`Translator` over the bundled rules."""
    return Translator(load_rules(), rename_cu=rename_cu, rewrite_comments=rewrite_comments)
