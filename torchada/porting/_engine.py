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
from typing import (
    TYPE_CHECKING,
    Callable,
    Dict,
    FrozenSet,
    Iterator,
    List,
    Mapping,
    Optional,
    Pattern,
    Sequence,
    Set,
    Tuple,
    Union,
)

from ._arch import ArchRewriter
from ._lexical import _SPACE_CHARS, _WORD_CHARS, _tokens_before
from ._ruleset import Rule, RuleError, RuleSet, load_rules
from .report import STATUS_MUSA, STATUS_PORTED, STATUS_UNCHANGED, FileReport, Finding

if TYPE_CHECKING:  # pragma: no cover
    from .project import ProjectRenames

logger = logging.getLogger("torchada.porting")

#: Hand-written MUSA sources: never rewritten, whatever the caller asks.
MUSA_SUFFIXES = (".mu", ".muh")
#: Files whose text is ported; everything else is copied unchanged.
SOURCE_SUFFIXES = frozenset(
    {
        ".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".h++",
        ".inl", ".inc", ".ipp", ".tcc", ".tpp", ".cuinc",
    }
)  # fmt: skip


# Token kinds, as ints for a cheap dispatch in the hot loop.
_K_SKIP, _K_COMMENT, _K_INCLUDE, _K_IDENT, _K_RECEIVER = range(5)

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

    __slots__ = ("pattern", "rule", "replacement", "shape", "member")

    def __init__(self, pattern: Sequence[_Elem], rule: Rule, replacement: str, shape: str) -> None:
        self.pattern = tuple(pattern)  # nearest token first
        self.rule = rule
        self.replacement = replacement
        self.shape = shape  # how the rule looks in source, for report notes
        # A member rule's receiver checks, read once from its fields (see _member_edit).
        self.member: Optional[_MemberChecks] = None
        if rule.kind == "member" and rule.extra:
            self.member = _MemberChecks(rule.extra)

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


class _MemberChecks:
    """A member rule's fields, prepared: ``drop`` (``drop_call``), ``without`` (the types and
    namespaces whose objects lack the replacement), ``bound`` (``bound_near``), and the
    using-directive pattern of ``namespaces_without`` with the state key its result is kept
    under."""

    __slots__ = ("drop", "without", "bound", "using", "using_key")

    def __init__(self, extra: Mapping[str, object]) -> None:
        self.drop: Optional[str] = extra.get("drop_call")  # type: ignore[assignment]
        namespaces = tuple(extra.get("namespaces_without", ()))  # type: ignore[arg-type]
        types = tuple(extra.get("receivers_without", ()))  # type: ignore[arg-type]
        self.without: Tuple[str, ...] = types + namespaces
        self.bound: Tuple[str, ...] = tuple(extra.get("bound_near", ()))  # type: ignore[arg-type]
        self.using = _using_pattern(namespaces) if namespaces else None
        self.using_key = "using:" + (self.using.pattern if self.using is not None else "")


class _Trigger:
    """What to do when an identifier rule key is met: context-dependent choices, then a default."""

    __slots__ = ("key", "plain", "contexts", "depth", "by_qualifier", "member")

    def __init__(self, key: str) -> None:
        self.key = key
        self.plain: Optional[Rule] = None
        self.contexts: List[_Context] = []
        self.depth = 0
        # Contexts that are exactly `<qualifier>::`, by qualifier: the common case, decided
        # without the general backward lexer.
        self.by_qualifier: Dict[str, _Context] = {}
        # The one context of a member rule with receiver checks, when it is the only one.
        self.member: Optional[_Context] = None


#: Rename-rule fields that make the rename depend on the file (handled off the fast path).
_CONDITIONAL_FIELDS = ("requires", "review")
# A using-directive or namespace that makes `at::`/`torch::` names visible unqualified.
_USING_NS = r"(?:using\s+namespace\s+(?:::\s*)?(?:{ns})\s*;|\bnamespace\s+(?:{ns})\b\s*[{{:])"
# Keywords that may stand where a declaration's type would.
_NOT_TYPES = frozenset(
    "return else case throw new delete goto sizeof co_return co_yield using typedef namespace "
    "struct class enum union public private protected operator".split()
)
# Keywords a parenthesis may follow without being a call.
# What may follow a declared name.
_DECLARATOR_FOLLOWS = frozenset(",)=;({[:")
# What a call ends with (before a member operator).
_CALL_END = frozenset(") \t\r\n")
# How far around a member call its receiver's declaration is looked for (and a receiver needle
# or a header of a namespace without the replacement makes its receiver suspect), in steps.
_SCOPE_BEFORE = 8_000
_SCOPE_AFTER = 4_000
_SCOPE_STEPS = (600, 2_500, _SCOPE_BEFORE)
# How far below the first include of a namespace's header its using-directive is looked for.
_USING_REACH = 20_000
# How far above a member call a variable bound to the dropped call is looked for.
_BOUND_BEFORE = 600


class _RunState:
    """What one port of one text has learnt so far: the features its includes provide, and
    facts about the text computed once, when a rule first asks."""

    __slots__ = ("text", "provided", "facts", "sites", "header_sites")

    def __init__(self, text: str) -> None:
        self.text = text
        self.provided: Set[str] = set()
        self.facts: Dict[str, object] = {}
        # Where the scan met a receiver needle, and an include of a header whose namespace's
        # types member rewrites must not reach (the stable ABI's), in text order.
        self.sites: List[int] = []
        self.header_sites: List[int] = []

    def fact(self, key: str, compute: Callable[[], object]) -> object:
        value = self.facts.get(key, self)
        if value is self:
            value = self.facts[key] = compute()
        return value


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
            if not t.contexts
            and t.plain is not None
            and t.plain.kind == "rename"
            and not any(f in t.plain.extra for f in _CONDITIONAL_FIELDS)
        }
        self._ident_patterns = _alternation(self.ruleset.identifier_patterns)
        self._header_patterns = _alternation(self.ruleset.header_patterns)
        self._looks_cuda: Dict[str, bool] = {}
        # Include operand -> (action, new spelling, note, what the included header provides,
        # whether it is a header of a namespace that member rewrites must not reach).
        self._include_cache: Dict[str, Tuple[str, str, str, Optional[FrozenSet[str]], bool]] = {}
        self._receiver_namespaces = tuple(
            sorted(
                {
                    word
                    for rule in self.ruleset.rules
                    if rule.kind == "member"
                    for word in rule.extra.get("namespaces_without", ())
                }
            )
        )
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
            if len(trig.contexts) == 1 and trig.contexts[0].member is not None:
                trig.member = trig.contexts[0]

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
        alts += [
            (first, f"r{i}", rest, _K_RECEIVER)
            for i, (first, rest) in enumerate(self.ruleset.receiver_needles)
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
    def port(
        self,
        text: str,
        *,
        filename: Optional[str] = None,
        project: Optional["ProjectRenames"] = None,
    ) -> Tuple[str, FileReport]:
        """Translate ``text``; returns the new text and a :class:`FileReport`.

        ``filename`` labels the report; a ``.mu``/``.muh`` name returns ``text`` untouched
        (status ``musa-source``). ``project`` (from
        :func:`~torchada.porting.project.collect_project_names`) also renames the project's own
        CUDA-named identifiers and the quoted includes of its renamed files; ``filename`` is then
        the file's path in that tree.

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
        out = self._run(text, report, project, filename)
        report.status = STATUS_PORTED if out != text else STATUS_UNCHANGED
        return out, report

    def rule_names(self) -> FrozenSet[str]:
        """The identifiers some rule acts on (rule keys and their last ``::`` components).

        Example::

            >>> from torchada.porting import Translator
            >>> names = Translator().rule_names()
            >>> "cudaMalloc" in names, "is_cuda" in names, "my_kernel" in names
            (True, True, False)
        """
        names = set(self._triggers)
        if self._arch_key is not None:
            names.add(self._arch_key)
        return frozenset(names)

    def cuda_names(self, text: str) -> Iterator[str]:
        """The CUDA-looking identifiers of ``text``'s code (not its comments, strings or include
        operands), in order, repeats included: what the scanner stops at.

        Example::

            >>> from torchada.porting import Translator
            >>> list(Translator().cuda_names('cudaFree(p); /* cudaMalloc */ puts("cuda");'))
            ['cudaFree']
        """
        kinds = self._kind_by_index
        for m in self._master.finditer(text):
            if kinds[m.lastindex] != _K_IDENT:  # type: ignore[index]
                continue
            start, end = m.span()
            while start and text[start - 1] in _WORD_CHARS:
                start -= 1
            if not text[start].isdigit():
                yield text[start:end]

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
    def _run(
        self,
        text: str,
        report: FileReport,
        project: Optional["ProjectRenames"] = None,
        path: Optional[str] = None,
    ) -> str:
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
        state = _RunState(text)
        own_names = project.names if project is not None and project.names else None

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
                    result = self._apply_trigger(trig, text, start, end, report, lines, state)
                elif name == self._arch_key:
                    result = self._arch.edit(text, start, end)  # type: ignore[union-attr]
                    if result is None:
                        _add(report.attention, name, lines.line(start), self._arch.note)
                elif own_names is not None and name in own_names:
                    result = (start, end, own_names[name], name)
                else:
                    if not name[0].isdigit() and self.looks_cuda(name):
                        _add(report.remaining, name, lines.line(start), "")
                    continue
            elif kind == k_include:
                result = self._include(m, text, report, lines, state, project, path)
            elif kind == _K_RECEIVER:
                state.sites.append(start)
                continue
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
        state: _RunState,
    ) -> Optional[_Edit]:
        if trig.member is not None and start and text[start - 1] == ".":
            # A member rule's usual shape, x.name(): no need for the backward lexer.
            return _member_edit(trig.member, text, start, end, report, lines, state)
        if trig.contexts:
            found = None
            if trig.by_qualifier:
                found = _simple_qualifier(text, start, trig)
            if found is None:
                tokens = _tokens_before(text, start, trig.depth)
                found = next((c for c in trig.contexts if c.matches(tokens)), None)
            if found is not None:
                rule = found.rule
                if found.member is not None:
                    return _member_edit(found, text, start, end, report, lines, state)
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
            if rule.extra:
                return _conditional_rename(rule, text, start, end, report, lines, state)
            return (start, end, rule.musa, rule.cuda)
        _add(report.attention, rule.cuda, lines.line(start), rule.note)
        return None

    def _include(
        self,
        m: "re.Match[str]",
        text: str,
        report: FileReport,
        lines: "_LineCounter",
        state: _RunState,
        project: Optional["ProjectRenames"] = None,
        path: Optional[str] = None,
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
        if project is not None and project.paths:
            moved = project.include(spelled, path)
            if moved is not None:
                # The project's own file under its new name; .cu/.cuh as port_tree names them.
                final = self._decide_include(moved)
                return (ps, pe, final[1] if final[0] == "rewrite" else moved, spelled)
        decision = self._include_cache.get(spelled)
        if decision is None:
            decided = self._decide_include(spelled)
            features = self.ruleset.header_features.get(decided[1][1:-1])
            # A header of a namespace whose types member rewrites must not reach.
            risky = any(word in spelled for word in self._receiver_namespaces)
            decision = self._include_cache[spelled] = decided + (features, risky)
        action, value, note, features, risky = decision
        if index == self._inc_index:  # an #include, not a __has_include test
            if features:
                state.provided.update(features)
            if risky:
                state.header_sites.append(ps)
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


def _conditional_rename(
    rule: Rule,
    text: str,
    start: int,
    end: int,
    report: FileReport,
    lines: "_LineCounter",
    state: _RunState,
) -> _Edit:
    """A rename whose output depends on the file: on what its includes provide (``requires``;
    with a ``fallback``, the spelling that compiles either way), on the qualifier the name is
    written with (``qualifiers``: where the new name is declared), or that a human should look
    over (``review``)."""
    extra = rule.extra
    new = rule.musa
    feature = extra.get("requires")
    if feature is not None:
        ok = feature in state.provided
        fallback = extra.get("fallback")
        if fallback is None:
            if not ok:
                _add(report.attention, rule.cuda, lines.line(start), rule.note)
        else:
            qualifiers = extra.get("qualifiers")
            if ok and qualifiers:
                ok = _qualified_by(text, start, tuple(qualifiers), rule.cuda, state)
            if not ok:
                new = fallback
    if extra.get("review"):
        _add(report.attention, rule.cuda, lines.line(start), rule.note)
    return (start, end, new, rule.cuda)


def _qualified_by(
    text: str, start: int, qualifiers: Tuple[str, ...], name: str, state: _RunState
) -> bool:
    """Whether ``name`` at ``start`` is written ``q::name`` with ``q`` in ``qualifiers``, or bare
    in a file that makes those namespaces visible (``using namespace at;``, ``namespace at {``,
    ``using at::name;``)."""
    i = start
    while i and text[i - 1] in " \t":
        i -= 1
    if i >= 2 and text[i - 2 : i] == "::":
        i -= 2
        while i and text[i - 1] in " \t":
            i -= 1
        j = i
        while j and text[j - 1] in _WORD_CHARS:
            j -= 1
        return text[j:i] in qualifiers
    alts = "|".join(re.escape(q) for q in qualifiers)

    def visible() -> bool:
        using = re.compile(
            _USING_NS.format(ns=alts) + rf"|using\s+(?:::\s*)?(?:{alts})\s*::\s*{name}\b"
        )
        return using.search(text) is not None

    return bool(state.fact("visible:" + name, visible))


def _member_edit(
    ctx: _Context,
    text: str,
    start: int,
    end: int,
    report: FileReport,
    lines: "_LineCounter",
    state: _RunState,
) -> Optional[_Edit]:
    """A member rewrite checked against what its receiver can be (the rule's fields).

    ``drop_call``: ``x.<call>().name()`` is rewritten ``x.<new>()``, the call dropped (for
    ``is_cuda``: ``Tensor::type()`` returns a DeprecatedTypeProperties, which has ``is_cuda`` and
    no ``is_privateuseone``, and means the same as the tensor's own). ``receivers_without`` and
    ``namespaces_without``: the types, and the namespaces whose types, have the member but not
    its replacement. Where nothing makes the receiver suspect (see :func:`_risk_near`) it can
    only be one that has both; otherwise its declaration decides, and a receiver of such a type,
    or one whose declaration is not to be found, is left alone and reported."""
    rule = ctx.rule
    checks: _MemberChecks = ctx.member  # type: ignore[assignment]
    if start and text[start - 1] == ".":  # the usual x.name(): no spaces to skip
        op: Optional[int] = start - 1
    else:
        op = _member_operator(text, start)
        if op is None:
            return None
    drop = checks.drop
    if drop and op and text[op - 1] in _CALL_END:
        call = _call_before(text, op)
        if call is not None and call[1] == drop and _member_operator(text, call[0]) is not None:
            removed = text[call[0] : start]
            new = "\n" * removed.count("\n") + ctx.replacement
            return (call[0], end, new, f"x.{drop}().{rule.cuda}()")
    if checks.without and _risk_near(text, start, checks, state):
        verdict = _receiver_verdict(text, op, _receiver_root(text, op), checks.without, drop, state)
        if verdict != "good":
            why = (
                "its receiver is declared as a type without the replacement"
                if verdict == "bad"
                else "a type without the replacement is used nearby and this receiver's "
                "declaration is not in the file"
            )
            _add(report.attention, rule.cuda, lines.line(start), f"{rule.note}; left: {why}")
            return None
    return (start, end, ctx.replacement, rule.cuda)


def _risk_near(text: str, start: int, checks: _MemberChecks, state: _RunState) -> bool:
    """Whether a receiver of the member used at ``start`` may lack the replacement: the scan met
    a receiver needle (a type without the replacement) not far above; or a ``bound_near`` word
    is just above (``auto t = x.type();``); or the file includes a header of a namespace
    without it (the stable ABI's) not far above, or imports that namespace. Positions the one
    scan already found, a bounded str.find per word, and one using-directive search per file in
    files that include such headers: the check runs at every use, and most files name none."""
    sites = state.sites
    if sites and sites[-1] >= start - _SCOPE_BEFORE:
        return True
    lo = start - _BOUND_BEFORE if start > _BOUND_BEFORE else 0
    for word in checks.bound:
        if text.find(word, lo, start) != -1:
            return True
    headers = state.header_sites
    if not headers or checks.using is None:
        return False
    if headers[-1] >= start - _SCOPE_BEFORE:
        return True
    imports = state.facts.get(checks.using_key)
    if imports is None:
        # A using-directive for the namespace follows its headers' includes closely.
        hi = min(len(text), headers[0] + _USING_REACH)
        found = checks.using.search(text, headers[0], hi) is not None
        imports = state.facts[checks.using_key] = found
    return bool(imports)


@functools.lru_cache(maxsize=None)
def _using_pattern(without: Tuple[str, ...]) -> Pattern[str]:
    alts = "|".join(re.escape(w) for w in without)
    return re.compile(rf"using\s+namespace\s+(?:\w+\s*::\s*)*(?:{alts})\s*;")


def _member_operator(text: str, name_start: int) -> Optional[int]:
    """Where the ``.`` or ``->`` right before a member name starts, or None."""
    i = name_start
    while i and text[i - 1] in _SPACE_CHARS:
        i -= 1
    if i and text[i - 1] == ".":
        return i - 1
    if i >= 2 and text[i - 2 : i] == "->":
        return i - 2
    return None


def _call_before(text: str, pos: int) -> Optional[Tuple[int, str]]:
    """(start, name) of an argument-less call ``name()`` ending right before ``pos``."""
    i = pos
    while i and text[i - 1] in _SPACE_CHARS:
        i -= 1
    if not i or text[i - 1] != ")":
        return None
    i -= 1
    while i and text[i - 1] in _SPACE_CHARS:
        i -= 1
    if not i or text[i - 1] != "(":
        return None
    i -= 1
    while i and text[i - 1] in _SPACE_CHARS:
        i -= 1
    j = i
    while j and text[j - 1] in _WORD_CHARS:
        j -= 1
    return (j, text[j:i]) if j < i else None


def _receiver_root(text: str, op: int) -> Optional[str]:
    """The first name of the receiver chain ending at ``op`` (``a`` in ``a.b(x)[i]->``), past
    calls, subscripts and ``this->``; None for any other shape."""
    i = op
    root = None
    while True:
        while i and text[i - 1] in _SPACE_CHARS:
            i -= 1
        if i and text[i - 1] in ")]":
            i = _matching_open(text, i - 1)
            if i is None:
                return root
            continue
        j = i
        while j and text[j - 1] in _WORD_CHARS:
            j -= 1
        if j == i:
            return root
        if text[j:i] != "this":
            root = text[j:i]
        i = j
        while i and text[i - 1] in _SPACE_CHARS:
            i -= 1
        if i and text[i - 1] == ".":
            i -= 1
        elif i >= 2 and text[i - 2 : i] in ("->", "::"):
            i -= 2
        else:
            return root


def _matching_open(text: str, close: int) -> Optional[int]:
    """The index of the bracket that ``text[close]`` closes, on the same statement."""
    pairs = {")": "(", "]": "["}
    depth = 0
    i = close
    while i >= 0:
        c = text[i]
        if c in pairs:
            depth += 1
        elif c in "([":
            depth -= 1
            if depth == 0:
                return i
        elif c in ";{}":
            return None
        i -= 1
    return None


def _receiver_verdict(
    text: str,
    at: int,
    root: Optional[str],
    without: Tuple[str, ...],
    drop: Optional[str],
    state: _RunState,
) -> str:
    """ "good", "bad" or "unknown" for a receiver used at ``at`` whose chain starts at ``root``:
    what its declaration in scope says (the last one before the use, else, for a class member
    declared further down, the first one after it). Uses come in text order, so each name's
    declaration and verdict are remembered, and only the text since the name's last use is
    searched for a newer declaration."""
    if root is None:
        return "unknown"
    key = "decl:" + root
    memo = state.facts.get(key)
    uses = _name_uses(root)
    if isinstance(memo, tuple) and at - memo[0] <= _SCOPE_BEFORE:
        last_pos, verdict, searched = memo
        for m in uses.finditer(text, searched, at):  # a newer declaration shadows the last
            found = _declaration_at(text, m.start(), len(root))
            if found is not None:
                last_pos, verdict = m.start(), _type_verdict(text, found, without, drop, state)
        state.facts[key] = (last_pos, verdict, at)
        return verdict
    found = None
    hi = at
    for reach in _SCOPE_STEPS:  # nearest first: a parameter is usually a few lines up
        lo = max(0, at - reach)
        for m in reversed(list(uses.finditer(text, lo, hi))):
            found = _declaration_at(text, m.start(), len(root))
            if found is not None:
                verdict = _type_verdict(text, found, without, drop, state)
                state.facts[key] = (m.start(), verdict, at)
                return verdict
        if not lo:
            break
        hi = lo + len(root) + _DECLARATION_REACH  # a match may straddle lo
    for m in uses.finditer(text, at, min(len(text), at + _SCOPE_AFTER)):  # a later member
        found = _declaration_at(text, m.start(), len(root))
        if found is not None:
            return _type_verdict(text, found, without, drop, state)
    return "unknown"


@functools.lru_cache(maxsize=1024)
def _name_uses(name: str) -> Pattern[str]:
    """Where ``name`` may be declared: followed by what may follow a declarator. Starts with the
    name's letters, so that re skips ahead to candidates."""
    return re.compile(re.escape(name) + r"(?![\w])[ \t]*[,)=;({\[:]")


def _type_verdict(
    text: str,
    found: Tuple[str, int, str],
    without: Tuple[str, ...],
    drop: Optional[str],
    state: _RunState,
) -> str:
    type_name, end, follows = found
    if any(word in type_name for word in without):
        return "bad"
    if type_name in ("Tensor", "Device"):
        # Unqualified: the stable ABI's own when the file uses one of those namespaces.
        using = _using_pattern(without)
        if state.fact("using:" + using.pattern, lambda: using.search(text) is not None):
            return "bad"
    if type_name == "auto" and drop and follows == "=":
        tail = text[end - 1 : text.find(";", end) + 1]
        if re.search(rf"\.\s*{re.escape(drop)}\s*\(\s*\)\s*;\Z", tail):
            return "bad"
    return "good"


def _declaration_at(text: str, start: int, size: int) -> Optional[Tuple[str, int, str]]:
    """(type, end, what follows the name) when the name of ``size`` characters at ``start`` is
    declared there: a whole word, followed by what may follow a declarator, with a type (maybe
    qualified, maybe with template arguments) right before it, past ``const``, ``&`` and ``*``.
    Read by hand: a regex searched over the text before every candidate costs a scan each."""
    name_end = start + size
    if name_end < len(text) and text[name_end] in _WORD_CHARS:
        return None
    after = name_end
    while after < len(text) and text[after] in " \t":
        after += 1
    if after >= len(text) or text[after] not in _DECLARATOR_FOLLOWS:
        return None
    follows = text[after]
    i = start
    if i and text[i - 1] in _WORD_CHARS:
        return None  # the end of a longer name
    while True:
        while i and text[i - 1] in _DECLARATOR_MARKS:
            i -= 1
        if text.endswith("const", 0, i) and (i == 5 or text[i - 6] not in _WORD_CHARS):
            i -= 5
            continue
        break
    end = i
    if i and text[i - 1] == ">":  # template arguments, balanced
        depth = 0
        while i > max(0, end - _DECLARATION_REACH):
            c = text[i - 1]
            i -= 1
            if c == ">":
                depth += 1
            elif c == "<":
                depth -= 1
                if depth == 0:
                    break
            elif c in ";(){}":
                return None
        else:
            return None
        while i and text[i - 1] in " \t":
            i -= 1
    start = i
    while True:
        j = start
        while j and text[j - 1] in _WORD_CHARS:
            j -= 1
        if j == start:
            return None
        start = j
        k = start
        while k and text[k - 1] in " \t":
            k -= 1
        if k >= 2 and text[k - 2 : k] == "::":
            start = k - 2
            while start and text[start - 1] in " \t":
                start -= 1
            continue
        break
    if start and text[start - 1] in ".>":
        return None  # a member or a pointer access, not a type
    type_name = " ".join(text[start:end].split())
    first = type_name.split("::", 1)[0].strip()
    if not first or first in _NOT_TYPES or first[0].isdigit():
        return None
    return (type_name, after + 1, follows)


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
