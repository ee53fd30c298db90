"""Opt-in renaming of a project's own CUDA-named identifiers, files and folders.

Hand ports rename what the project itself calls CUDA along with the API: ``WITH_CUDA``,
``CHECK_CUDA``, ``ind2ptr_cuda``, a ``cuda/`` folder, ``convert_cuda.cu``. The rule tables cannot
know those names, so :func:`collect_project_names` finds them in the whole tree and
:func:`~torchada.porting.port_tree` (``rename_project=True``, ``--rename-project``) applies one
mapping to every file, so that declarations, uses and ``#include`` operands stay consistent.
Never the default: the build scripts and Python code that name these things must follow.

A name is the project's when it is not a rule key and the tree defines it: a ``#define``, or a
declaration (``Tensor ind2ptr_cuda(...)``, ``struct foo_cuda``), or, for build switches shaped like
``WITH_CUDA``/``USE_CUDA``, an ``#if``/``#ifdef`` test with no definition in the tree (the build
defines it). ``cuda``/``CUDA``/``Cuda`` become ``musa``/``MUSA``/``Musa`` where they stand as a word
part (``ind2ptr_cuda``, ``cudaErrChk``, ``kernelCUDA``; never ``barracuda``). A new name that is
already used in the tree, two names that would merge, and names that hand-written ``.mu``/``.muh``
files use (those are never rewritten) are left alone and noted; path renames are all-or-nothing,
so that relative includes keep resolving.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Set, Tuple, Union

from ._engine import MUSA_SUFFIXES, SOURCE_SUFFIXES, _declares, get_translator

__all__ = ["ProjectRenames", "collect_project_names", "musa_spelling", "project_path"]

# The word-part spellings and their MUSA forms. Lower case needs a non-letter (or an upper case
# letter) on both sides; the capitalised forms need no upper case letter before them.
_PARTS = (
    (re.compile(r"(?<![a-z])cuda(?![a-z])"), "musa"),
    (re.compile(r"(?<![A-Z])CUDA"), "MUSA"),
    (re.compile(r"(?<![A-Z])Cuda(?![a-z])"), "Musa"),
)
# Build switches a project tests but leaves to its build to define.
_SWITCH = re.compile(r"(?:[A-Z0-9]+_)?(?:WITH|USE|ENABLE|HAVE|BUILD)_\w*CUDA\w*\Z")
# Prefixes of torch's own macros, which are never the project's.
_TORCH_PREFIXES = ("TORCH_", "C10_", "AT_", "CAFFE2_")
_CONDITIONAL = re.compile(
    r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|elifdef|elifndef)\b([^\n]*)", re.MULTILINE
)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z_]\w*")


def musa_spelling(name: str) -> Optional[str]:
    """``name`` with its CUDA word parts spelled MUSA, or None when it has none.

    Example::

        >>> from torchada.porting.project import musa_spelling
        >>> [musa_spelling(n) for n in ("ind2ptr_cuda", "WITH_CUDA", "cudaErrChk", "barracuda")]
        ['ind2ptr_musa', 'WITH_MUSA', 'musaErrChk', None]
    """
    new = name
    for pattern, musa in _PARTS:
        new = pattern.sub(musa, new)
    return new if new != name else None


def project_path(rel: str, *, rename_files: bool = True) -> str:
    """``rel`` (a POSIX path) with its folder names, and with ``rename_files`` its file name's
    stem, spelled MUSA where they are CUDA-named (``csrc/cuda/convert_cuda.cu`` ->
    ``csrc/musa/convert_musa.cu``). Suffixes are left for ``rename_cu``.

    Example::

        >>> from torchada.porting.project import project_path
        >>> project_path("csrc/cuda/convert_cuda.cu")
        'csrc/musa/convert_musa.cu'
        >>> project_path("csrc/cuda/convert_cuda.cu", rename_files=False)
        'csrc/musa/convert_cuda.cu'
    """
    parts = rel.split("/")
    out = []
    for i, part in enumerate(parts):
        if part in (".", ".."):
            out.append(part)
            continue
        if i == len(parts) - 1:
            if not rename_files:
                out.append(part)
                continue
            stem, dot, suffix = part.partition(".")
            out.append((musa_spelling(stem) or stem) + dot + suffix)
        else:
            out.append(musa_spelling(part) or part)
    return "/".join(out)


@dataclass
class ProjectRenames:
    """One tree's renaming: identifiers (``names``), source paths (``paths``, relative POSIX
    paths, before the ``.cu`` -> ``.mu`` rename), and ``notes`` on what was left alone and what
    the build must follow. Made by :func:`collect_project_names`.

    Example::

        >>> from torchada.porting.project import ProjectRenames
        >>> renames = ProjectRenames({"WITH_CUDA": "WITH_MUSA"}, {"cuda/k.cu": "musa/k.cu"})
        >>> renames.include('"cuda/k.cu"', "main.cpp")
        '"musa/k.cu"'
        >>> renames.include("<cuda/std/atomic>", "main.cpp") is None
        True
    """

    names: Dict[str, str] = field(default_factory=dict)
    paths: Dict[str, str] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    _by_suffix: Dict[str, List[str]] = field(default_factory=dict, repr=False, compare=False)

    def digest(self) -> str:
        """A hash of the mapping, for the incremental manifest."""
        payload = json.dumps([sorted(self.names.items()), sorted(self.paths.items())])
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def include(self, spelled: str, including: Optional[str]) -> Optional[str]:
        """The new spelling of the quoted include ``spelled`` (delimiters included) written in
        the file ``including`` (a path relative to the tree), when it names a renamed file of the
        tree; None otherwise."""
        if not self.paths or not spelled.startswith('"'):
            return None
        operand = spelled[1:-1]
        target = self._resolve(operand, including)
        if target is None or target not in self.paths:
            return None
        # Components map one for one, so the operand's are renamed as the target's path was.
        return '"' + project_path(operand, rename_files=True) + '"'

    def _resolve(self, operand: str, including: Optional[str]) -> Optional[str]:
        if including is not None:
            near = posixpath.normpath(posixpath.join(posixpath.dirname(including), operand))
            if near in self.paths:
                return near
        if operand in self.paths:
            return operand
        if not self._by_suffix:
            for rel in self.paths:
                self._by_suffix.setdefault(rel.rsplit("/", 1)[-1], []).append(rel)
        clean = posixpath.normpath(operand)
        found = [
            rel
            for rel in self._by_suffix.get(clean.rsplit("/", 1)[-1], ())
            if rel == clean or rel.endswith("/" + clean)
        ]
        return found[0] if len(found) == 1 else None


def collect_project_names(
    root: Union[str, Path], files: Optional[Iterable[str]] = None
) -> ProjectRenames:
    """Find the CUDA-named identifiers and paths the tree under ``root`` defines, and their MUSA
    spellings. ``files`` are the relative POSIX paths to read (default: every C/C++/CUDA source
    under ``root``).

    Example::

        >>> import pathlib, tempfile
        >>> from torchada.porting.project import collect_project_names
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (root / "ops.cpp").write_text(
        ...     "#ifdef WITH_CUDA\\nTensor scale_cuda(Tensor x);\\n#endif\\n"
        ...     "Tensor scale(Tensor x) { return scale_cuda(x); }\\n")
        >>> sorted(collect_project_names(root).names.items())
        [('WITH_CUDA', 'WITH_MUSA'), ('scale_cuda', 'scale_musa')]
    """
    root = Path(root)
    rels = sorted(files) if files is not None else _walk(root)
    translator = get_translator()
    rule_keys = set(translator.rule_names())
    texts: Dict[str, str] = {}
    for rel in rels:
        try:
            texts[rel] = (root / rel).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    defined: Set[str] = set()
    switches: Set[str] = set()
    all_words: Set[str] = set()
    musa_words: Set[str] = set()
    for rel, text in texts.items():
        words = set(_WORD.findall(text))
        all_words |= words
        if rel.lower().endswith(MUSA_SUFFIXES):
            musa_words |= words
            continue
        macros = set(_DEFINE.findall(text))
        for name in translator.cuda_names(text):
            if name in rule_keys or musa_spelling(name) is None:
                continue
            if name in macros or _declares(text, name):
                defined.add(name)
        for line in _CONDITIONAL.findall(text):
            switches.update(w for w in _WORD.findall(line) if _SWITCH.match(w))
    everywhere_defined = {m for text in texts.values() for m in _DEFINE.findall(text)}
    candidates = defined | {
        s for s in switches if s not in everywhere_defined and not s.startswith(_TORCH_PREFIXES)
    }
    renames = ProjectRenames()
    targets: Dict[str, List[str]] = {}
    for name in sorted(candidates - rule_keys):
        new = musa_spelling(name)
        if new is not None:
            targets.setdefault(new, []).append(name)
    for new, olds in sorted(targets.items()):
        if len(olds) > 1:
            renames.notes.append(f"not renamed: {', '.join(olds)} would all become {new}")
        elif new in all_words:
            renames.notes.append(f"not renamed: {olds[0]} -> {new}: {new} is already used")
        elif olds[0] in musa_words:
            renames.notes.append(
                f"not renamed: {olds[0]} is used in a hand-written MUSA source (never rewritten)"
            )
        else:
            renames.names[olds[0]] = new
    builds = sorted(n for n in renames.names if n in switches and n not in everywhere_defined)
    if builds:
        pairs = ", ".join(f"{n} -> {renames.names[n]}" for n in builds)
        renames.notes.append(f"build switches renamed (define the new names in the build): {pairs}")
    modules = sorted(n for n in renames.names if n.startswith("PyInit_"))
    if modules:
        renames.notes.append(
            "module init functions renamed (the extension modules' names must follow): "
            + ", ".join(modules)
        )
    renames.paths = _path_renames(rels, renames.notes)
    return renames


def _walk(root: Path) -> List[str]:
    suffixes = SOURCE_SUFFIXES | frozenset(MUSA_SUFFIXES)
    out = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix.lower() in suffixes:
            out.append(path.relative_to(root).as_posix())
    return out


def _path_renames(rels: List[str], notes: List[str]) -> Dict[str, str]:
    moves = {rel: project_path(rel) for rel in rels}
    moves = {old: new for old, new in moves.items() if old != new}
    if not moves:
        return {}
    existing = set(rels)
    clashes = _clashes(moves, existing)
    if clashes:
        notes.append(
            "files and folders not renamed (the new paths would clash): "
            + ", ".join(f"{a} -> {b}" for a, b in clashes[:5])
        )
        return {}
    notes.append(
        f"{len(moves)} files renamed to MUSA names (update the build's source lists): "
        + ", ".join(f"{a} -> {b}" for a, b in sorted(moves.items())[:5])
        + (" ..." if len(moves) > 5 else "")
    )
    return moves


def _clashes(moves: Mapping[str, str], existing: Set[str]) -> List[Tuple[str, str]]:
    seen: Dict[str, str] = {}
    out = []
    for old, new in sorted(moves.items()):
        folded = _stem_key(new)
        if (new in existing and new not in moves) or folded in seen:
            out.append((old, new))
        seen[folded] = old
    unmoved = {_stem_key(rel) for rel in existing if rel not in moves}
    out += [(old, new) for old, new in moves.items() if _stem_key(new) in unmoved]
    return out


def _stem_key(rel: str) -> str:
    # k.cu and k.mu land on one output once .cu becomes .mu.
    for old, new in ((".cuh", ".muh"), (".cu", ".mu")):
        if rel.endswith(old):
            return rel[: -len(old)] + new
    return rel
