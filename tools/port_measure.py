"""Measures the source porter against a hand port: how many of the humans' CUDA -> MUSA renames
it makes exactly, and how many tokens it changes that the humans kept.

    python tools/port_measure.py UPSTREAM PORT [UPSTREAM PORT ...] [--rename-project]
        [--json OUT] [--details N]

UPSTREAM is a CUDA source tree (the commit the port branched from), PORT the same tree as the
humans ported it; both are plain directories (for example ``git archive <commit> csrc | tar -x``).
Each C/C++/CUDA source under UPSTREAM is matched with its counterpart under PORT (same path, or
the path with ``.cu``/``.cuh`` -> ``.mu``/``.muh`` and ``cuda`` -> ``musa`` in its folder and file
names); sources without one are listed and left out. UPSTREAM is ported with ``port_tree`` into a
scratch folder (``--rename-project`` turns on the opt-in renaming of the project's own names).

Both sides are compared as token streams (comments dropped; an ``#include`` operand is one token;
strings are tokens but never count as renames):

* upstream vs hand port, aligned with difflib. A token the humans replaced one for one (inside a
  changed block of equal length, or matched inside a longer block after CUDA/MUSA spellings are
  folded together, or a name replaced by a qualified name such as ``THCCeilDiv`` ->
  ``at::ceil_div``) is a **rename** when the upstream token is CUDA-named (``cuda``/``CUDA``/
  ``Cuda`` inside, or a ``cu*``, ``CU*``, ``nccl``, ``nv_``, ``THC``... prefix). Tokens in spans
  the humans rewrote into a different shape (``x.device().is_cuda()`` -> ``at::musa::is_musa(x)``)
  are **restructured**, not renames; they are counted apart.
* upstream vs the porter's output, aligned the same way. A rename is **exact** when the porter
  wrote the humans' token, **equivalent** when it wrote a spelling listed in ``EQUIVALENT``
  (another name or header path of the same torch_musa entity), **missed** when it left the
  upstream token, **different** otherwise. A **false rewrite** is a token the humans kept that the
  porter changed.

Renames are split into API renames (names the project does not define itself) and project renames
(names the upstream tree defines, or tests in ``#if`` without defining: ``WITH_CUDA``); the latter
are what ``--rename-project`` is for. Identifier renames and ``#include`` renames are reported
apart, since header spellings follow torch_musa's own usage (see docs/porting_measure.md).
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from torchada.porting import port_tree  # noqa: E402
from torchada.porting.project import collect_project_names, project_path  # noqa: E402
from torchada.porting.tree import SOURCE_SUFFIXES  # noqa: E402

# One C/C++ token; comments and whitespace are dropped by the tokenizer below.
_TOKEN = re.compile(
    r"""
    (?P<ws>(?:[ \t\r\n\f\v]|\\\r?\n)+)
  | (?P<lc>//[^\n]*(?:(?<=\\)\n[^\n]*)*)
  | (?P<bc>/\*[\s\S]*?(?:\*/|\Z))
  | (?P<inc>\#[ \t]*include(?:_next)?[ \t]*(?P<path>"[^"\n]*"|<[^>\n]*>))
  | (?P<raw>(?:u8|[uUL])?R"(?P<d>[^()\\\s"]{0,16})\([\s\S]*?\)(?P=d)")
  | (?P<str>(?:u8|[uUL])?"(?:[^"\\\n]|\\.)*")
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.']|(?<=')\w)*)
  | (?P<chr>(?:u8|[uUL])?'(?:[^'\\\n]|\\.)*')
  | (?P<id>[A-Za-z_]\w*)
  | (?P<op>::|->|\#\#|[-+*/%&|^!=<>]=?|.)
    """,
    re.VERBOSE,
)
_CUDA_NAMED = re.compile(
    r"cuda|CUDA|Cuda|^cu[A-Z]|^CU[a-z_]|^CU[A-Z]+_|^__CUDA|^nccl|^NCCL|^__nv_|^nv_|^NV_"
    r"|^__NV_|^__NVCC__|^THC|^cublas|^CUBLAS|^curand|^CURAND|^cufft|^CUFFT|^cusparse"
    r"|^CUSPARSE|^cusolver|^CUSOLVER|^cudnn|^CUDNN|^nvtx|^NVTX|^nvrtc|^NVRTC|^cupti",
)
_CUDA_HEADER = re.compile(
    r"cuda|CUDA|Cuda|(?:^|/)cu[A-Z]|cublas|curand|cufft|cusparse|cusolver|cudnn|nccl|nvToolsExt"
    r"|nvtx|nvrtc|(?:^|/)THC|\.cuh$"
)
# Folding for the second alignment pass: MUSA spellings back onto the CUDA ones they replace.
_FOLD = (
    ("privateuseone", "cuda"),
    ("privateuse1", "cuda"),
    ("musa", "cuda"),
    ("mccl", "nccl"),
    ("__mt_", "__nv_"),
    ("mt_", "nv_"),
)
_FOLD_PREFIX = re.compile(r"^(_*)mu")

#: Spellings that name the same torch_musa entity as the humans' (human spelling: ours).
EQUIVALENT: Dict[str, Tuple[str, ...]] = {
    # torch_musa installs its ATen-level headers under both names; its own sources use the
    # torch_musa/csrc one (see docs/porting_measure.md).
    "ATen/musa/MUSAContext.h": ("torch_musa/csrc/aten/musa/MUSAContext.h",),
    "ATen/musa/Exceptions.h": ("torch_musa/csrc/aten/musa/Exceptions.h",),
    "c10/musa/MUSAGuard.h": ("torch_musa/csrc/core/MUSAGuard.h",),
    "c10/musa/MUSAStream.h": ("torch_musa/csrc/core/MUSAStream.h",),
    # A Tensor's own device test; torch_musa's helper takes the tensor as an argument.
    "at::musa::is_musa": ("is_privateuseone",),
    # THC's atomics header is a shim over ATen's; torch_musa generates both.
    "THC/THCAtomics.muh": ("ATen/musa/Atomic.muh",),
    # torch_musa's ATen check is its c10 check (torch_musa/csrc/aten/musa/Exceptions.h).
    "C10_MUSA_CHECK": ("AT_MUSA_CHECK",),
    # at::kMUSA is DeviceType::PrivateUse1 (torch_musa/csrc/aten/utils/Utils.h).
    "kMUSA": ("kPrivateUse1",),
}


@dataclass(frozen=True)
class Tok:
    kind: str  # id, inc, str, num, op
    text: str  # for inc: the operand without its delimiters


def tokenize(text: str) -> List[Tok]:
    out: List[Tok] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind in ("ws", "lc", "bc"):
            continue
        if kind == "inc":
            out.append(Tok("inc", m.group("path")[1:-1]))
        elif kind in ("raw", "str", "chr"):
            out.append(Tok("str", m.group()))
        elif kind == "path" or kind == "d":  # pragma: no cover - inner groups never end a match
            continue
        else:
            out.append(Tok(kind or "op", m.group()))
    return out


def _fold(tok: Tok) -> str:
    text = tok.text.lower()
    for old, new in _FOLD:
        text = text.replace(old, new)
    return _FOLD_PREFIX.sub(r"\1cu", text)


def is_cuda_named(tok: Tok) -> bool:
    if tok.kind == "id":
        return _CUDA_NAMED.search(tok.text) is not None
    if tok.kind == "inc":
        return _CUDA_HEADER.search(tok.text) is not None
    return False


# Per upstream token: ("kept" | "sub" | "gone", the token it became or None).
Mapping = List[Tuple[str, Optional[Tok]]]


def align(a: Sequence[Tok], b: Sequence[Tok]) -> Mapping:
    """What became of each token of ``a`` in ``b``."""
    out: Mapping = [("gone", None)] * len(a)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for k in range(i2 - i1):
                out[i1 + k] = ("kept", b[j1 + k])
        elif op == "replace":
            _pair(a, b, i1, i2, j1, j2, out, fold=True)
    return out


def _pair(
    a: Sequence[Tok], b: Sequence[Tok], i1: int, i2: int, j1: int, j2: int, out: Mapping, fold: bool
) -> None:
    if i2 - i1 == j2 - j1:
        for k in range(i2 - i1):
            out[i1 + k] = ("sub", b[j1 + k]) if a[i1 + k] != b[j1 + k] else ("kept", b[j1 + k])
        return
    qualified = _qualified(b[j1:j2])
    if i2 - i1 == 1 and a[i1].kind == "id" and qualified is not None:
        out[i1] = ("sub", Tok("id", qualified))  # THCCeilDiv -> at::ceil_div
        return
    if not fold:
        return
    fa = [_fold(t) for t in a[i1:i2]]
    fb = [_fold(t) for t in b[j1:j2]]
    sub = difflib.SequenceMatcher(None, fa, fb, autojunk=False)
    for op, s1, s2, t1, t2 in sub.get_opcodes():
        if op == "equal":
            for k in range(s2 - s1):
                ta, tb = a[i1 + s1 + k], b[j1 + t1 + k]
                out[i1 + s1 + k] = ("sub", tb) if ta != tb else ("kept", tb)
        elif op == "replace":
            _pair(a, b, i1 + s1, i1 + s2, j1 + t1, j1 + t2, out, fold=False)


def _qualified(toks: Sequence[Tok]) -> Optional[str]:
    """``ns :: name`` spelled as tokens, joined; None for anything else."""
    if len(toks) < 3 or len(toks) % 2 == 0:
        return None
    for k, tok in enumerate(toks):
        if (k % 2 == 0 and tok.kind != "id") or (k % 2 == 1 and tok.text != "::"):
            return None
    return "".join(t.text for t in toks)


@dataclass
class Tally:
    renames: int = 0
    exact: int = 0
    equivalent: int = 0
    missed: int = 0
    different: int = 0
    miss_examples: Counter = field(default_factory=Counter)

    def add(self, verdict: str, example: Tuple[str, str, str]) -> None:
        self.renames += 1
        setattr(self, verdict, getattr(self, verdict) + 1)
        if verdict != "exact":
            self.miss_examples[example] += 1

    def as_dict(self, details: int) -> Dict[str, object]:
        data: Dict[str, object] = {
            "renames": self.renames,
            "exact": self.exact,
            "equivalent": self.equivalent,
            "missed": self.missed,
            "different": self.different,
            "exact_pct": _pct(self.exact, self.renames),
            "exact_or_equivalent_pct": _pct(self.exact + self.equivalent, self.renames),
        }
        if details:
            data["not_exact"] = [
                {"upstream": u, "human": h, "porter": p, "count": n}
                for (u, h, p), n in self.miss_examples.most_common(details)
            ]
        return data


#: Kinds of false rewrite: a token the humans kept and the porter changed.
FALSE_KINDS = {
    "other": "a token the humans kept",
    "arch-value": (
        "the number in a __CUDA_ARCH__ comparison (the porter maps it onto MUSA's arch scale; "
        "the humans kept CUDA's)"
    ),
    "stale-include": (
        "an #include of a file the humans renamed in the same port (their include names a file "
        "their port no longer has)"
    ),
}


@dataclass
class PairResult:
    name: str
    files: int = 0
    unmatched: List[str] = field(default_factory=list)
    api: Tally = field(default_factory=Tally)
    project: Tally = field(default_factory=Tally)
    headers: Tally = field(default_factory=Tally)
    false_rewrites: Counter = field(default_factory=Counter)  # (kind, upstream, porter) -> n
    restructured: int = 0
    restructured_changed: int = 0

    def false_by_kind(self) -> Dict[str, int]:
        out = {kind: 0 for kind in FALSE_KINDS}
        for (kind, _, _), n in self.false_rewrites.items():
            out[kind] += n
        return out

    def as_dict(self, details: int) -> Dict[str, object]:
        return {
            "pair": self.name,
            "files": self.files,
            "unmatched": self.unmatched,
            "api_renames": self.api.as_dict(details),
            "project_renames": self.project.as_dict(details),
            "header_renames": self.headers.as_dict(details),
            "false_rewrites": sum(self.false_rewrites.values()),
            "false_rewrites_by_kind": self.false_by_kind(),
            "false_rewrite_examples": [
                {"kind": k, "upstream": u, "porter": p, "count": n}
                for (k, u, p), n in self.false_rewrites.most_common(details or 20)
            ],
            "restructured_by_humans": self.restructured,
            "restructured_porter_changed": self.restructured_changed,
        }


def _pct(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 1) if whole else 100.0


def _equivalent(ours: str, human: str) -> bool:
    return ours in EQUIVALENT.get(human, ())


def _sources(root: Path) -> Iterable[str]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix.lower() in SOURCE_SUFFIXES | {".cu", ".cuh"}:
            yield path.relative_to(root).as_posix()


def _counterpart(port: Path, rel: str) -> Optional[Path]:
    candidates = [rel, project_path(rel, rename_files=False)]
    candidates.append(project_path(rel, rename_files=True))
    for cand in candidates:
        for name in (cand, re.sub(r"\.cu(h?)$", r".mu\1", cand)):
            if (port / name).is_file():
                return port / name
    return None


def measure_pair(upstream: Path, port: Path, *, rename_project: bool, name: str) -> PairResult:
    result = PairResult(name)
    project_names = set(collect_project_names(upstream).names)
    with tempfile.TemporaryDirectory(prefix="port-measure-") as scratch:
        out = Path(scratch) / "out"
        report = port_tree(upstream, out, rename_project=rename_project)
        ported = {r.path: r.output_path for r in report.files if r.path}
        for rel in _sources(upstream):
            hand = _counterpart(port, rel)
            if hand is None:
                result.unmatched.append(rel)
                continue
            ours_rel = ported.get(rel)
            if ours_rel is None:
                result.unmatched.append(rel)
                continue
            result.files += 1
            up_toks = tokenize(_read(upstream / rel))
            hand_map = align(up_toks, tokenize(_read(hand)))
            ours_map = align(up_toks, tokenize(_read(out / ours_rel)))
            context = _Context(upstream, port, rel)
            _score(result, up_toks, hand_map, ours_map, project_names, context)
    return result


@dataclass
class _Context:
    upstream: Path
    port: Path
    rel: str  # the upstream file being scored

    def stale_include(self, operand: str) -> bool:
        """Whether ``operand``, kept by the humans, names an upstream file their port renamed."""
        base = (self.upstream / self.rel).parent
        target = (base / operand).resolve()
        if not target.is_file():
            return False
        rel = target.relative_to(self.upstream.resolve()).as_posix()
        hand = _counterpart(self.port, rel)
        return hand is not None and not (self.port / rel).is_file()


def _false_kind(up: Sequence[Tok], i: int, context: _Context) -> str:
    tok = up[i]
    if tok.kind == "num":
        near = [t.text for t in up[max(0, i - 2) : i + 3]]
        if "__CUDA_ARCH__" in near:
            return "arch-value"
    if tok.kind == "inc" and context.stale_include(tok.text):
        return "stale-include"
    return "other"


def _score(
    result: PairResult,
    up: Sequence[Tok],
    hand: Mapping,
    ours: Mapping,
    project_names: set,
    context: _Context,
) -> None:
    for i, (tok, (h_state, h_tok), (o_state, o_tok)) in enumerate(zip(up, hand, ours)):
        ours_text = o_tok.text if o_tok is not None else "<rewritten>"
        changed_by_us = o_state != "kept"
        if h_state == "kept":
            if changed_by_us:
                kind = _false_kind(up, i, context)
                result.false_rewrites[(kind, tok.text, ours_text)] += 1
            continue
        if h_state == "gone":
            if is_cuda_named(tok):
                result.restructured += 1
                result.restructured_changed += changed_by_us
            continue
        assert h_tok is not None
        if tok.kind == "str" or not is_cuda_named(tok) or h_tok.text == tok.text:
            continue
        if tok.kind == "inc":
            tally = result.headers
        elif tok.text in project_names:
            tally = result.project
        else:
            tally = result.api
        if o_tok is not None and o_tok.text == h_tok.text:
            verdict = "exact"
        elif o_tok is not None and _equivalent(o_tok.text, h_tok.text):
            verdict = "equivalent"
        elif not changed_by_us:
            verdict = "missed"
        else:
            verdict = "different"
        tally.add(verdict, (tok.text, h_tok.text, ours_text))


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def _format(result: PairResult) -> str:
    lines = [f"== {result.name}: {result.files} files compared"]
    for label, tally in (
        ("API renames", result.api),
        ("project renames", result.project),
        ("#include renames", result.headers),
    ):
        lines.append(
            f"  {label:17s} {tally.renames:5d}  exact {tally.exact:5d} "
            f"({_pct(tally.exact, tally.renames):5.1f}%)  equivalent {tally.equivalent:4d}  "
            f"missed {tally.missed:4d}  different {tally.different:4d}"
        )
    by_kind = result.false_by_kind()
    lines.append(
        f"  false rewrites    {sum(by_kind.values()):5d}  ("
        + ", ".join(f"{kind} {n}" for kind, n in by_kind.items())
        + ")"
    )
    lines.append(
        f"  restructured by the humans (not renames): {result.restructured} CUDA-named tokens, "
        f"{result.restructured_changed} of them changed by the porter"
    )
    if result.unmatched:
        lines.append(f"  no counterpart in the port: {len(result.unmatched)} files")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", metavar="UPSTREAM PORT", help="pairs of directories")
    parser.add_argument(
        "--rename-project", action="store_true", help="port with the project-name renaming on"
    )
    parser.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    parser.add_argument(
        "--label", action="append", default=[], help="a name for each pair, in order (repeatable)"
    )
    parser.add_argument(
        "--details", type=int, default=0, metavar="N", help="list the N commonest misses"
    )
    args = parser.parse_args(argv)
    if len(args.trees) % 2:
        parser.error("give the trees in pairs: UPSTREAM PORT [UPSTREAM PORT ...]")
    results = []
    for n, (up, hand) in enumerate(zip(args.trees[::2], args.trees[1::2])):
        name = args.label[n] if n < len(args.label) else f"{up} -> {hand}"
        result = measure_pair(Path(up), Path(hand), rename_project=args.rename_project, name=name)
        results.append(result)
        print(_format(result))
        if args.details:
            print(json.dumps(result.as_dict(args.details), indent=1))
    if args.json:
        Path(args.json).write_text(
            json.dumps([r.as_dict(args.details) for r in results], indent=1) + "\n", "utf-8"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
