"""Loading and validating the porting rule tables.

The tables live in ``rules/<domain>.json`` next to this module; the code here only knows the rule
*kinds*, never individual names. Files whose name starts with ``_`` hold heuristics, not rules.
The header renames of CUDA libraries whose main header is named after them (``<cuda>.h`` ->
``<musa>.h``) come from torchada's one library table, ``torchada/tables/libraries.json``, into the
``headers`` domain: the library names are written once, for ctypes, builds and the porter.

Optional fields of a rule (the engine reads them; they stay in :attr:`Rule.extra`):

* ``rename``: ``requires`` (a feature a MUSA header provides, ``rules/_provides.json``), with
  ``fallback`` the name written where no included header provides it and ``qualifiers`` the
  namespaces under which ``musa`` is declared (``kCUDA``: ``at::kMUSA``, else ``kPrivateUse1``);
  ``requires`` without ``fallback`` reports the missing include; ``review`` reports a rewrite
  that needs something from a human (a declaration torch_musa lacks).
* ``version-guard``: none: a version macro is never renamed, not even where it is a whole value
  (``return CUDA_VERSION;``), since MUSA's own version (50200 for SDK 5.2) would pass every CUDA
  12 guard the value later meets.
* ``member``: ``drop_call``, ``receivers_without``, ``namespaces_without``, ``bound_near``:
  what its receiver may be (see the engine's member rewrite).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

logger = logging.getLogger("torchada.porting")

RULES_DIR = Path(__file__).resolve().parent / "rules"
#: The domain that takes the header renames derived from the library table.
LIBRARY_HEADER_DOMAIN = "headers"

#: Kinds that rewrite text when they apply.
REWRITING_KINDS = frozenset(
    {"rename", "member", "qualified", "dispatch-key", "header", "arch-macro"}
)
#: Kinds that never rewrite; every occurrence is reported for a human to decide.
REPORTING_KINDS = frozenset({"unsupported", "version-guard"})
#: Data-only rows consumed by a rewriting rule of another kind (the arch threshold table).
TABLE_KINDS = frozenset({"arch-threshold"})
KINDS = REWRITING_KINDS | REPORTING_KINDS | TABLE_KINDS

_IDENT = re.compile(r"[A-Za-z_]\w*\Z", re.ASCII)
_QUALIFIED = re.compile(r"[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+\Z", re.ASCII)


class RuleError(ValueError):
    """A rule table is malformed.

    Raised by :func:`load_rules` (bad JSON, a rule lacking a field or of an unknown kind, a CUDA
    key defined twice, overlapping arch tiers, a bad detection pattern) and by
    :class:`~torchada.porting.Translator` for a rule key its scanner would never stop at. A
    ValueError.

    Example::

        >>> from torchada.porting import RuleError, load_rules
        >>> try:
        ...     load_rules("no/such/dir")
        ... except RuleError as err:
        ...     print(err)
        no rule tables found in no/such/dir
    """


@dataclass(frozen=True)
class Rule:
    """One CUDA -> MUSA mapping.

    ``cuda`` is the CUDA spelling (identifier, ``ns::name``, header path, or a table label for
    ``arch-threshold`` rows), ``musa`` its replacement, ``kind`` how it is applied. ``domain``
    names the table it came from, ``note`` is shown in reports, ``extra`` holds the row's other
    fields.

    Example::

        >>> from torchada.porting import load_rules
        >>> rule = load_rules().by_key["cudaMalloc"]
        >>> rule.musa, rule.kind, rule.domain
        ('musaMalloc', 'rename', 'runtime')
    """

    cuda: str
    musa: str
    kind: str
    domain: str
    note: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def rewrites(self) -> bool:
        """Whether the rule rewrites text; rules of the reporting kinds (``unsupported``,
        ``version-guard``) and table rows only report or feed another rule.

        Example::

            >>> from torchada.porting import load_rules
            >>> rules = load_rules()
            >>> rules.by_key["cudaMalloc"].rewrites, rules.by_key["CUDA_VERSION"].rewrites
            (True, False)
        """
        return self.kind in REWRITING_KINDS


@dataclass(frozen=True)
class ArchTier:
    """A MUSA architecture and the range of CUDA ``__CUDA_ARCH__`` values whose features it has.

    Built from the ``arch-threshold`` rows of the rule tables; :attr:`RuleSet.arch_tiers` holds
    them sorted by ``cuda_min``. ``label`` is the row's CUDA spelling.

    Example::

        >>> from torchada.porting import load_rules
        >>> tier = next(t for t in load_rules().arch_tiers if t.cuda_min <= 800 <= t.cuda_max)
        >>> tier.musa_arch, tier.label
        (220, 'sm_80..sm_89')
    """

    musa_arch: int
    cuda_min: int
    cuda_max: int
    label: str


@dataclass
class RuleSet:
    """All rules, indexed the ways the engine needs them.

    ``by_key`` maps a CUDA spelling to its rule, ``domains`` a table's domain to its rules,
    ``headers`` the header keys to theirs; ``arch_tiers``, the detection patterns and the needles
    come from the tables as well, and ``digest`` is a hash of all the table files. ``len()`` is
    the number of rules. Made by :func:`load_rules`.

    Example::

        >>> from torchada.porting import load_rules
        >>> rules = load_rules()
        >>> rules.by_key["cudaStream_t"].musa
        'musaStream_t'
        >>> "cuda_runtime.h" in rules.headers
        True
    """

    rules: Tuple[Rule, ...]
    by_key: Dict[str, Rule]
    domains: Dict[str, Tuple[Rule, ...]]
    headers: Dict[str, Rule]
    arch_tiers: Tuple[ArchTier, ...]
    identifier_patterns: Tuple[str, ...]
    header_patterns: Tuple[str, ...]
    needles: Tuple[Tuple[str, str], ...]
    digest: str
    #: What a MUSA header makes available to the code after it (``rules/_provides.json``): header
    #: path -> feature names that rules list under ``requires``.
    header_features: Dict[str, FrozenSet[str]] = field(default_factory=dict)
    #: Where the scanner notes names that make a member rewrite check its receiver
    #: (``rules/_detect.json``'s ``receiver_needles``; same shape as ``needles``).
    receiver_needles: Tuple[Tuple[str, str], ...] = ()

    def __len__(self) -> int:
        return len(self.rules)

    def count_by_domain(self) -> Dict[str, int]:
        """The number of rules in each domain, ordered by domain name.

        Example::

            >>> from torchada.porting import load_rules
            >>> counts = load_rules().count_by_domain()
            >>> counts["runtime"] > 0, sum(counts.values()) == len(load_rules())
            (True, True)
        """
        return {name: len(rules) for name, rules in sorted(self.domains.items())}


def _parse_rule(raw: Mapping[str, Any], domain: str, where: str) -> Rule:
    try:
        cuda, musa, kind = raw["cuda"], raw["musa"], raw["kind"]
    except KeyError as exc:
        raise RuleError(f"{where}: rule {raw!r} lacks field {exc}") from None
    if kind not in KINDS:
        raise RuleError(f"{where}: rule {cuda!r} has unknown kind {kind!r}")
    if not isinstance(cuda, str) or not isinstance(musa, str) or not cuda:
        raise RuleError(f"{where}: rule {raw!r} needs non-empty string 'cuda' and 'musa'")
    if kind in ("rename", "member", "dispatch-key", "arch-macro", "version-guard"):
        # A rename may name a qualified replacement (a legacy name whose successor lives in a
        # namespace); everything else maps identifier to identifier.
        target_ok = _IDENT.match(musa) or (kind == "rename" and _QUALIFIED.match(musa))
        if not _IDENT.match(cuda) or not target_ok:
            raise RuleError(f"{where}: {kind} rule {cuda!r} -> {musa!r} must map identifiers")
    fallback = raw.get("fallback")
    if fallback is not None and not (isinstance(fallback, str) and _IDENT.match(fallback)):
        raise RuleError(f"{where}: rule {cuda!r} has a fallback that is not an identifier")
    if (fallback is not None or "qualifiers" in raw) and "requires" not in raw:
        raise RuleError(f"{where}: rule {cuda!r} has a fallback but no 'requires'")
    if kind == "qualified":
        if not _QUALIFIED.match(cuda) or not _QUALIFIED.match(musa):
            raise RuleError(f"{where}: qualified rule {cuda!r} must look like ns::name")
        if cuda.rsplit("::", 1)[0] != musa.rsplit("::", 1)[0]:
            # Only the last component is replaced, so the qualifiers must agree.
            raise RuleError(f"{where}: qualified rule {cuda!r} -> {musa!r} changes the qualifier")
    if kind == "unsupported" and not (_IDENT.match(cuda) or _QUALIFIED.match(cuda)):
        if "/" not in cuda and "." not in cuda:
            raise RuleError(f"{where}: unsupported rule {cuda!r} is neither a name nor a header")
    extra = {k: v for k, v in raw.items() if k not in ("cuda", "musa", "kind", "note")}
    return Rule(cuda, musa, kind, domain, str(raw.get("note", "")), extra)


def load_rules(rules_dir: Optional[Path] = None) -> RuleSet:
    """Load every ``*.json`` rule table from ``rules_dir`` (default: the bundled tables).

    The bundled tables are loaded once per process and the same :class:`RuleSet` is returned
    after that. Tables whose file name starts with ``_`` hold detection heuristics, not rules.

    Raises :class:`RuleError` on malformed data or a CUDA key defined twice, or when
    ``rules_dir`` holds no table.

    Example::

        >>> from torchada.porting import load_rules
        >>> rules = load_rules()
        >>> rules.by_key["ncclAllReduce"].musa
        'mcclAllReduce'
        >>> load_rules() is rules
        True
    """
    if rules_dir is None:
        return _load_default()
    return _load(Path(rules_dir))


@functools.lru_cache(maxsize=1)
def _load_default() -> RuleSet:
    return _load(RULES_DIR)


def _load(rules_dir: Path) -> RuleSet:
    files = sorted(rules_dir.glob("*.json"))
    if not files:
        raise RuleError(f"no rule tables found in {rules_dir}")
    hasher = hashlib.sha256()
    rules: List[Rule] = []
    by_key: Dict[str, Rule] = {}
    domains: Dict[str, Tuple[Rule, ...]] = {}
    ident_patterns: Tuple[str, ...] = ()
    header_patterns: Tuple[str, ...] = ()
    needles: Tuple[Tuple[str, str], ...] = ()
    receiver_needles: Tuple[Tuple[str, str], ...] = ()
    header_features: Dict[str, set] = {}
    for path in files:
        raw_bytes = path.read_bytes()
        hasher.update(path.name.encode() + b"\0" + raw_bytes + b"\0")
        try:
            data = json.loads(raw_bytes.decode("utf-8"))
        except ValueError as exc:
            raise RuleError(f"{path}: not valid JSON: {exc}") from None
        if path.name.startswith("_"):
            ident_patterns += tuple(data.get("identifier_patterns", ()))
            header_patterns += tuple(data.get("header_patterns", ()))
            for needle in data.get("needles", ()):
                first, rest = needle
                if len(first) != 1:
                    raise RuleError(f"{path.name}: needle {needle!r} must start with one character")
                needles += ((first, rest),)
            for needle in data.get("receiver_needles", ()):
                first, rest = needle
                if len(first) != 1:
                    raise RuleError(f"{path.name}: needle {needle!r} must start with one character")
                receiver_needles += ((first, rest),)
            for feature, headers in data.get("provides", {}).items():
                for header in headers:
                    header_features.setdefault(header, set()).add(feature)
            continue
        domain = data.get("domain") or path.stem
        parsed = []
        for i, raw in enumerate(data.get("rules", ())):
            rule = _parse_rule(raw, domain, f"{path.name}[{i}]")
            previous = by_key.get(rule.cuda)
            if previous is not None:
                raise RuleError(
                    f"key {rule.cuda!r} is defined in domain {previous.domain!r} and again in "
                    f"{domain!r} ({path.name})"
                )
            by_key[rule.cuda] = rule
            parsed.append(rule)
        domains[domain] = tuple(parsed)
        rules.extend(parsed)
    derived = _library_header_rules(hasher)
    for rule in derived:
        previous = by_key.get(rule.cuda)
        if previous is not None:
            raise RuleError(
                f"key {rule.cuda!r} is defined in domain {previous.domain!r} and derived from "
                "torchada/tables/libraries.json"
            )
        by_key[rule.cuda] = rule
    domains[LIBRARY_HEADER_DOMAIN] = domains.get(LIBRARY_HEADER_DOMAIN, ()) + tuple(derived)
    rules.extend(derived)
    all_needles = needles + receiver_needles
    for pattern in ident_patterns + header_patterns + tuple(f + r for f, r in all_needles):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise RuleError(f"bad detection pattern {pattern!r}: {exc}") from None
    tiers = sorted(
        (
            ArchTier(
                int(r.extra["musa_arch"]),
                int(r.extra["cuda_min"]),
                int(r.extra["cuda_max"]),
                r.cuda,
            )
            for r in rules
            if r.kind == "arch-threshold"
        ),
        key=lambda t: t.cuda_min,
    )
    for lower, upper in zip(tiers, tiers[1:]):
        # The threshold rewrite assumes ordered, non-overlapping tiers with ascending MUSA archs.
        if lower.cuda_max >= upper.cuda_min or lower.musa_arch >= upper.musa_arch:
            raise RuleError(
                f"arch tiers {lower.label!r} and {upper.label!r} overlap or are unordered"
            )
    known = {feature for features in header_features.values() for feature in features}
    for rule in rules:
        feature = rule.extra.get("requires")
        if feature is not None and feature not in known:
            raise RuleError(f"rule {rule.cuda!r} requires {feature!r}, which no header provides")
    headers = {r.cuda: r for r in rules if r.kind == "header" or _is_header_key(r)}
    ruleset = RuleSet(
        rules=tuple(rules),
        by_key=by_key,
        domains=domains,
        headers=headers,
        arch_tiers=tuple(tiers),
        identifier_patterns=ident_patterns,
        header_patterns=header_patterns,
        needles=needles,
        digest=hasher.hexdigest(),
        header_features={h: frozenset(f) for h, f in header_features.items()},
        receiver_needles=receiver_needles,
    )
    logger.debug("loaded %d porting rules from %s", len(ruleset), rules_dir)
    return ruleset


def _library_header_rules(hasher: Any) -> List[Rule]:
    """Header rules for the libraries whose main header is named after them (``nccl.h`` ->
    ``mccl.h``), from the library table; they count in the digest like a rule file."""
    from .._core.tables import load

    renames = load("libraries").header_renames()
    hasher.update(b"libraries.json\0" + json.dumps(renames).encode() + b"\0")
    raws = ({"cuda": cuda, "musa": musa, "kind": "header"} for cuda, musa in renames)
    return [_parse_rule(raw, LIBRARY_HEADER_DOMAIN, "tables/libraries.json") for raw in raws]


def _is_header_key(rule: Rule) -> bool:
    # Unsupported headers share the "unsupported" kind with names; tell them apart by shape.
    return rule.kind == "unsupported" and not (
        _IDENT.match(rule.cuda) or _QUALIFIED.match(rule.cuda)
    )
