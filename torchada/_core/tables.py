"""One loader and one schema for torchada's data tables (``torchada/tables/*.json``).

Every table has a declared schema: its rows are frozen records (:mod:`torchada._core.records`:
dataclasses made without generating code) whose fields say each JSON field's type and, for
enumerations, the values it may take. :func:`load` reads a table once (cached), checks every
entry against the schema and returns the typed rows. A table that does not
follow its schema raises :class:`TableError` naming the table, the entry and the field, when the
table is loaded: a misspelled kind fails as torchada reads the table, not when a program first
reaches that entry.

Rows also read like the JSON objects they came from (``row["kind"]``, ``row.get("note")``,
``"impl" in row``); a field the JSON leaves out reads as absent.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Type, TypeVar, Union

from . import records
from .records import field, record

logger = logging.getLogger("torchada")

TABLES_DIR = Path(__file__).resolve().parent.parent / "tables"


class TableError(ValueError):
    """A table does not follow its schema. ``table``, ``entry`` and ``field`` say where."""

    def __init__(
        self, table: str, entry: str, field_name: str, problem: str, source: str = ""
    ) -> None:
        self.table, self.entry, self.field, self.problem = table, entry, field_name, problem
        where = source or f"torchada/tables/{table}.json"
        if entry:
            where += f", entry {entry}"
        if field_name:
            where += f", field {field_name!r}"
        super().__init__(f"{where}: {problem}")


class _Absent:
    """A field the JSON leaves out (where None is a value of its own)."""

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"  # the one instance, also in a cached table (fields are tested with `is`)


ABSENT: Any = _Absent()


@record
class _At:
    """Where a value sits: its table, the entry (a path such as ``modules["torch.cuda"]``) and
    the field inside that entry (``names["CUDAGraph"]`` until it becomes an entry itself)."""

    table: str
    entry: str = ""
    field: str = ""
    source: str = ""  # the file, when it is not the table's own

    def error(self, problem: str) -> TableError:
        return TableError(self.table, self.entry, self.field, problem, self.source)

    def key(self, key: str) -> "_At":
        return records.replace(self, field=f"{self.field}[{json.dumps(key)}]")

    def index(self, i: int) -> "_At":
        return records.replace(self, field=f"{self.field}[{i}]")

    def child(self, name: str) -> "_At":
        return records.replace(self, field=name)

    def as_entry(self) -> "_At":
        if not self.field:
            return self
        joined = f"{self.entry}.{self.field}" if self.entry else self.field
        return _At(self.table, joined.replace(".[", "["), "", self.source)


Parser = Callable[[Any, _At], Any]


# ------------------------------------------------------------------ value parsers
def _typed(kind: type, what: str) -> Parser:
    def parse(value: Any, at: _At) -> Any:
        # JSON true/false are Python bools, which are ints too: never accept one for the other.
        if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
            raise at.error(f"must be {what}, not {json.dumps(value)}")
        return value

    return parse


_STR = _typed(str, "a string")
_BOOL = _typed(bool, "true or false")
_INT = _typed(int, "a whole number")


def _scalar(value: Any, at: _At) -> Any:
    if not isinstance(value, (bool, int, float, str)):
        raise at.error(f"must be a string, number or true/false, not {json.dumps(value)}")
    return value


def _name(value: Any, at: _At) -> str:
    if not isinstance(value, str) or not value.strip():
        raise at.error(f"must be a non-empty string, not {json.dumps(value)}")
    return value


def _optional(parse: Parser) -> Parser:
    return lambda value, at: None if value is None else parse(value, at)


def _choice(*allowed: str) -> Parser:
    def parse(value: Any, at: _At) -> str:
        if value not in allowed:
            raise at.error(
                f"{json.dumps(value)} is not one of " + ", ".join(json.dumps(a) for a in allowed)
            )
        return value

    return parse


def _regex(value: Any, at: _At) -> str:
    _STR(value, at)
    try:
        re.compile(value)
    except re.error as exc:
        raise at.error(f"is not a regular expression: {exc}") from None
    return value


def _list_of(parse: Parser, *, as_list: bool = False, length: Optional[int] = None) -> Parser:
    def parse_list(value: Any, at: _At) -> Any:
        if not isinstance(value, list):
            raise at.error(f"must be a list, not {json.dumps(value)}")
        if length is not None and len(value) != length:
            raise at.error(f"must be a list of {length}, not {json.dumps(value)}")
        items = [parse(item, at.index(i)) for i, item in enumerate(value)]
        return items if as_list else tuple(items)

    return parse_list


def _mapping_of(parse: Parser, *, as_dict: bool = False) -> Parser:
    def parse_mapping(value: Any, at: _At) -> Any:
        if not isinstance(value, dict):
            raise at.error(f"must be an object, not {json.dumps(value)}")
        out = {}
        for key, item in value.items():
            _name(key, at.key(key))
            out[key] = parse(item, at.key(key))
        return out if as_dict else MappingProxyType(out)

    return parse_mapping


# ------------------------------------------------------------------ rows
def column(parse: Parser, default: Any = records.MISSING, key: str = "") -> Any:
    """A row field read from JSON field ``key`` (default: the field's name) by ``parse``; without
    a default the JSON must have it."""
    metadata = {"parse": parse, "key": key}
    if isinstance(default, (dict, MappingProxyType)):
        frozen = MappingProxyType(dict(default))
        return field(default_factory=lambda: frozen, metadata=metadata)
    return field(default=default, metadata=metadata)


class Row:
    """A typed table row; it also reads like the JSON object it came from."""

    def _check(self, at: _At) -> "Row":
        """Rules across fields; returns the row to keep (``at`` is the row's entry)."""
        return self

    @classmethod
    def _label(cls, raw: Mapping[str, Any]) -> str:
        """A name for the row in messages, beside its position (``switches[3]``)."""
        return ""

    def __getitem__(self, key: str) -> Any:
        value = getattr(self, key, ABSENT) if key in _field_names(type(self)) else ABSENT
        if value is ABSENT:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: str) -> bool:
        value = self.get(key, ABSENT)
        return value is not None and value is not ABSENT


@functools.lru_cache(maxsize=None)
def _field_names(cls: type) -> Tuple[str, ...]:
    return tuple(f.name for f in records.fields(cls))


R = TypeVar("R", bound=Row)


def _row(cls: Type[R]) -> Parser:
    def parse(raw: Any, at: _At) -> R:
        label = cls._label(raw) if isinstance(raw, dict) else ""
        at = at.as_entry()
        if label:
            at = records.replace(at, entry=f"{at.entry} ({label})")
        if not isinstance(raw, dict):
            raise at.error(f"must be an object, not {json.dumps(raw)}")
        fields = records.fields(cls)
        keys = {f.metadata.get("key") or f.name: f for f in fields}
        for key in raw:
            if key not in keys:
                known = ", ".join(sorted(keys))
                raise at.child(key).error(f"is not a field of this table's entries ({known})")
        values = {}
        for key, f in keys.items():
            if key in raw:
                values[f.name] = f.metadata["parse"](raw[key], at.child(key))
            elif f.default is records.MISSING and f.default_factory is records.MISSING:
                raise at.child(key).error("is missing")
        return cls(**values)._check(at)

    return parse


def _only_with(row: Row, at: _At, allowed: Tuple[str, ...], why: str) -> None:
    """Fields outside ``allowed`` must be left out (``why`` names the reason)."""
    for f in records.fields(row):
        if f.name not in allowed and getattr(row, f.name) != _default_of(f):
            raise at.child(f.metadata.get("key") or f.name).error(f"is not used {why}")


def _default_of(f: records.Field) -> Any:
    if f.default_factory is not records.MISSING:
        return f.default_factory()
    return f.default


def _require(row: Row, at: _At, names: Tuple[str, ...], why: str) -> None:
    for name in names:
        if getattr(row, name) in (None, ABSENT):
            raise at.child(name).error(f"is missing ({why})")


# ------------------------------------------------------------------ module tables
#: How a registry entry resolves (torchada._cuda.redirect); "same", the default, is never written.
REDIRECT_KINDS = ("renamed", "filled", "unsupported", "original", "submodule")
_KIND_FIELDS: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {
    # kind: (fields it needs, fields it may have besides kind and note)
    "renamed": (("to",), ("to",)),
    "filled": ((), ("impl", "value", "call", "lazy")),
    "unsupported": (("why", "instead"), ("why", "instead", "absent")),
    "original": ((), ()),
    "submodule": (("module",), ("module",)),
}
_IMPORT_REF = re.compile(r"[A-Za-z_][\w.]*(?::[A-Za-z_]\w*)?\Z")


@record
class NameRule(Row):
    """What one name of a proxied module becomes (torch_cuda.json and the other module tables)."""

    kind: str = column(_choice(*REDIRECT_KINDS))
    to: Optional[str] = column(_optional(_name), None)
    impl: Optional[str] = column(_optional(_name), None)
    value: Any = column(_scalar, ABSENT)
    call: bool = column(_BOOL, False)
    lazy: bool = column(_BOOL, False)
    module: Optional[str] = column(_optional(_name), None)
    why: Optional[str] = column(_optional(_name), None)
    instead: Optional[str] = column(_optional(_name), None)
    # An unsupported name that stays undefined: torch tests for it with hasattr() and takes
    # another path when it is missing (torch._C's bindings).
    absent: bool = column(_BOOL, False)
    note: str = column(_STR, "")

    def _check(self, at: _At) -> "NameRule":
        needs, may = _KIND_FIELDS[self.kind]
        _only_with(self, at, ("kind", "note") + may, f"by kind {self.kind!r}")
        _require(self, at, needs, f"kind {self.kind!r} needs it")
        if self.kind == "filled" and (self.impl is None) == (self.value is ABSENT):
            raise at.child("impl").error("kind 'filled' takes either 'impl' or 'value'")
        if (self.call or self.lazy) and self.impl is None:
            raise at.child("call" if self.call else "lazy").error("needs 'impl'")
        for name in ("impl", "module", "to"):
            ref = getattr(self, name)
            if ref is not None and not _IMPORT_REF.match(ref):
                raise at.child(name).error(f"{ref!r} is not 'module', 'module:attr' or a name")
        if self.impl is not None and ":" not in self.impl:
            raise at.child("impl").error(f"{self.impl!r} must be 'module:attr'")
        return self


@record
class ModuleSpec(Row):
    """One proxied module: what it stands for and what its names become.

    ``target``: the MUSA module it resolves to, ``"@original"`` (torch's own module with the
    listed overrides) or None (unsupported as a whole, see ``unsupported``). ``reexports`` maps
    another module of the same table to names whose rules live there (``torch.cuda`` re-exports
    ``torch.cuda.memory``'s, as torch does); once loaded, ``names`` holds them too, and each
    applies in the re-exporting module as one of its own (a rename finds its new name on this
    module's target).
    """

    target: Optional[str] = column(_optional(_name))
    package: bool = column(_BOOL)
    names: Mapping[str, NameRule] = column(_mapping_of(_row(NameRule)), {})
    reexports: Mapping[str, Tuple[str, ...]] = column(_mapping_of(_list_of(_name)), {})
    unsupported: Optional[Tuple[str, str]] = column(_optional(_list_of(_name, length=2)), None)
    preload: Optional[Tuple[str, ...]] = column(_optional(_list_of(_name)), None)

    def _check(self, at: _At) -> "ModuleSpec":
        if (self.target is None) != (self.unsupported is not None):
            raise at.child("unsupported").error(
                "is needed exactly when 'target' is null (why, and what to use instead)"
            )
        return self


@record
class ModuleTable(Row):
    """A module table: the modules torchada stands in for, by name."""

    doc: str = column(_STR, key="_doc")
    modules: Mapping[str, ModuleSpec] = column(_mapping_of(_row(ModuleSpec)))

    def _check(self, at: _At) -> "ModuleTable":
        # Each re-exported name takes the row its home module declares: one rule, one place.
        resolved = {}
        for name, spec in self.modules.items():
            names = dict(spec.names)
            for home, exported in spec.reexports.items():
                where = at.child("modules").key(name).as_entry().child("reexports").key(home)
                source = self.modules.get(home)
                if source is None or home == name:
                    raise where.error(f"{home!r} is not another module of this table")
                for i, attr in enumerate(exported):
                    if attr not in source.names:
                        raise where.index(i).error(f"{home} declares no rule for {attr!r}")
                    if attr in names:
                        raise where.index(i).error(f"{attr!r} has a rule of its own in {name}")
                    names[attr] = source.names[attr]
            resolved[name] = records.replace(spec, names=MappingProxyType(names))
        return records.replace(self, modules=MappingProxyType(resolved))


# ------------------------------------------------------------------ switches
SWITCH_KINDS = ("flag", "choice", "int", "path", "list", "text")


@record
class Switch(Row):
    """An environment variable torchada reads (switches.json)."""

    name: str = column(_name)
    kind: str = column(_choice(*SWITCH_KINDS))
    default: str = column(_STR)
    help: str = column(_name)
    internal: bool = column(_BOOL, False)
    choices: Optional[Tuple[str, ...]] = column(_optional(_list_of(_name)), None)
    min: Optional[int] = column(_optional(_INT), None)
    max: Optional[int] = column(_optional(_INT), None)
    pattern: Optional[str] = column(_optional(_regex), None)

    @classmethod
    def _label(cls, raw: Mapping[str, Any]) -> str:
        return str(raw.get("name", ""))

    def _check(self, at: _At) -> "Switch":
        extra = {"choice": ("choices",), "int": ("min", "max"), "text": ("pattern",)}
        allowed = extra.get(self.kind, ())
        _only_with(self, at, ("name", "kind", "default", "help", "internal") + allowed,
                   f"by kind {self.kind!r}")  # fmt: skip
        if self.kind != "text":
            _require(self, at, allowed, f"kind {self.kind!r} needs it")
        if self.kind == "int" and self.min is not None and self.max is not None:
            if self.min > self.max:
                raise at.child("min").error(f"{self.min} is above max {self.max}")
        return self


@record
class SwitchTable(Row):
    doc: str = column(_STR, key="_doc")
    switches: Tuple[Switch, ...] = column(_list_of(_row(Switch)))

    def _check(self, at: _At) -> "SwitchTable":
        seen = set()
        for i, switch in enumerate(self.switches):
            if switch.name in seen:
                raise at.child("switches").index(i).error(f"{switch.name} is declared twice")
            seen.add(switch.name)
        return self


# ------------------------------------------------------------------ device parameters
@record
class DeviceParamTable(Row):
    """Which parameters of torch.cuda's functions are devices: module -> name -> parameters.

    Plain dicts and lists: the table is compared with what :func:`torchada._cuda.device_args.derive`
    computes from torch's signatures."""

    doc: str = column(_STR, key="_doc")
    modules: Dict[str, Dict[str, List[str]]] = column(
        _mapping_of(_mapping_of(_list_of(_name, as_list=True), as_dict=True), as_dict=True)
    )


# ------------------------------------------------------------------ builds
@record
class NvccFlag(Row):
    """An nvcc option MUSA's compiler spells differently or does not need (cuda_build.json)."""

    nvcc: str = column(_name)
    mcc: Optional[str] = column(_optional(_name))
    value: bool = column(_BOOL, False)
    note: str = column(_STR, "")

    @classmethod
    def _label(cls, raw: Mapping[str, Any]) -> str:
        return str(raw.get("nvcc", ""))

    def _check(self, at: _At) -> "NvccFlag":
        if self.mcc == "@value" and not self.value:
            raise at.child("mcc").error("'@value' needs \"value\": true")
        return self


@record
class BuildTable(Row):
    """How a CUDA extension's build settings become a torch_musa extension's (cuda_build.json)."""

    doc: str = column(_STR, key="_doc")
    compile_arg_keys: Mapping[str, str] = column(_mapping_of(_name))
    nvcc_flags: Tuple[NvccFlag, ...] = column(_list_of(_row(NvccFlag)))
    arch_options: Tuple[str, ...] = column(_list_of(_name))
    named_archs: Mapping[str, str] = column(_mapping_of(_name))


# ------------------------------------------------------------------ libraries
_LINK_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")  # -lnvidia-ml too


def _link_name(value: Any, at: _At) -> str:
    if not isinstance(value, str) or not _LINK_NAME.match(value):
        raise at.error(f"must be a library name as -l takes it (cudart), not {json.dumps(value)}")
    return value


@record
class Library(Row):
    """A CUDA library and its MUSA counterpart (libraries.json): the one source of library names
    for ctypes, the build-setting translation and the porter's header renames."""

    cuda: str = column(_link_name)
    musa: Optional[str] = column(_optional(_link_name))
    aliases: Tuple[str, ...] = column(_list_of(_link_name), ())
    porting: Optional[str] = column(_optional(_name), None)
    header: bool = column(_BOOL, False)
    ctypes: bool = column(_BOOL, False)
    symbols: Tuple[Tuple[str, str], ...] = column(_list_of(_list_of(_name, length=2)), ())
    forwarded: Tuple[str, ...] = column(_list_of(_name), ())
    # The functions of a CUDA-named library torchada builds itself, each implemented over the
    # MUSA library's own API (the signatures differ): ctypes loads that library for the CUDA name.
    implemented: Tuple[str, ...] = column(_list_of(_name), ())
    note: str = column(_STR, "")

    @classmethod
    def _label(cls, raw: Mapping[str, Any]) -> str:
        return str(raw.get("cuda", ""))

    def _check(self, at: _At) -> "Library":
        if self.musa is None:
            _only_with(self, at, ("cuda", "musa", "aliases", "note"), "by a library MUSA drops")
        if not self.ctypes:
            _only_with(self, at, ("cuda", "musa", "aliases", "porting", "header", "note"),
                       "unless 'ctypes' is true")  # fmt: skip
        elif not self.implemented:
            _require(self, at, ("symbols",), "ctypes maps function names by it")
        return self

    @property
    def cuda_file(self) -> str:
        """The CUDA library's file name without suffix: ``libcudart``."""
        return f"lib{self.cuda}"

    @property
    def musa_file(self) -> str:
        """The MUSA library's file name: ``libmusart.so``."""
        return f"lib{self.musa}.so"

    @property
    def file_pattern(self) -> str:
        """A regular expression for the CUDA library's file names: ``libcudart.so.12`` and
        versions, ``libcudart``."""
        return re.escape(self.cuda_file) + r"(\.so(\.\d+)*)?"


@record
class LibraryTable(Row):
    doc: str = column(_STR, key="_doc")
    libraries: Tuple[Library, ...] = column(_list_of(_row(Library)))

    def _check(self, at: _At) -> "LibraryTable":
        seen: Dict[str, str] = {}
        for i, lib in enumerate(self.libraries):
            for name in (lib.cuda,) + lib.aliases:
                if name in seen:
                    where = at.child("libraries").index(i).as_entry()
                    raise where.error(f"{name!r} is already a name of library {seen[name]!r}")
                seen[name] = lib.cuda
        return self

    def link_names(self) -> Dict[str, Optional[str]]:
        """CUDA link name (and alias) -> MUSA link name, None where MUSA drops it."""
        return {name: lib.musa for lib in self.libraries for name in (lib.cuda,) + lib.aliases}

    def musa_name(self, cuda: str) -> Optional[str]:
        """The MUSA link name of CUDA library ``cuda`` (``"cudart"`` -> ``"musart"``)."""
        names = self.link_names()
        if cuda not in names:
            raise KeyError(f"{cuda!r} is not a CUDA library in torchada/tables/libraries.json")
        return names[cuda]

    def header_renames(self) -> List[Tuple[str, str]]:
        """``(<cuda>.h, <musa>.h)`` for each library whose main header is named after it."""
        return [(f"{lib.cuda}.h", f"{lib.musa}.h") for lib in self.libraries if lib.header]


# ------------------------------------------------------------------ NVIDIA-only callers
#: The questions a CUDA program asks whose answer torchada gives for the MUSA device, and which
#: an NVIDIA-only caller gets the truth to instead: is CUDA there (torch's own answer), the
#: compute capability (MUSA's own), the process group's backend name (the one that runs).
CALLER_QUESTIONS = ("is_available", "capability", "backend_name")


@record
class NvidiaCaller(Row):
    """A function in which a CUDA question means NVIDIA's own stack (nvidia_callers.json): for
    the questions it names (default ``is_available``), it gets the truth about the device
    (``torch.cuda.is_available()`` is torch's own answer there, False on MUSA)."""

    module: str = column(_name)
    function: str = column(_name)  # its qualified name in ``module`` (``Class.method``)
    why: str = column(_name)
    # How many frames up from is_available the function may sit: 1 asks directly, 2 through
    # one helper of its library, and so on (torchada._cuda.available looks 4 frames up).
    depth: int = column(_INT, 1)
    since: str = column(_STR, "")  # the library release the row was read from
    # Which questions (CALLER_QUESTIONS) the function gets the truth to.
    questions: Tuple[str, ...] = column(_list_of(_choice(*CALLER_QUESTIONS)), ("is_available",))
    # True: the function belongs to code with its own MUSA branch (written for the published
    # torchada), which TORCHADA_MUSA_BRANCH_CALLERS=0 gives CUDA's answers like any CUDA code.
    musa_branch: bool = column(_BOOL, False)

    @classmethod
    def _label(cls, raw: Mapping[str, Any]) -> str:
        return f"{raw.get('module', '')}:{raw.get('function', '')}"

    def _check(self, at: _At) -> "NvidiaCaller":
        if not 1 <= self.depth <= 4:
            raise at.child("depth").error(f"{self.depth} is outside 1..4")
        if not self.questions:
            raise at.child("questions").error("is empty: name at least one question")
        return self


@record
class NvidiaCallerTable(Row):
    doc: str = column(_STR, key="_doc")
    callers: Tuple[NvidiaCaller, ...] = column(_list_of(_row(NvidiaCaller)))


# ------------------------------------------------------------------ compute capability
_CAPABILITY_TEXT = re.compile(r"(\d+)\.(\d+)\Z")


def _capability(value: Any, at: _At) -> Tuple[int, int]:
    match = _CAPABILITY_TEXT.match(value) if isinstance(value, str) else None
    if match is None:
        raise at.error(f'must be a capability written major.minor ("8.0"), not {json.dumps(value)}')
    return int(match.group(1)), int(match.group(2))


@record
class ArchFeatures(Row):
    """What decides an architecture's CUDA capability (cuda_capability.json)."""

    fp16: bool = column(_BOOL)
    bf16: bool = column(_BOOL)
    tf32: bool = column(_BOOL)
    fp8: bool = column(_BOOL)
    tensor_cores: str = column(_name)


@record
class ArchCapability(Row):
    """A MUSA architecture and the CUDA capability CUDA code is told (cuda_capability.json)."""

    musa: Tuple[int, int] = column(_capability)
    arch: str = column(_name)  # the compiler's name, mp_22
    name: str = column(_name)
    boards: Tuple[str, ...] = column(_list_of(_name))
    cuda: Tuple[int, int] = column(_capability)
    features: ArchFeatures = column(_row(ArchFeatures))
    exact: bool = column(_BOOL)
    note: str = column(_name)
    sources: Tuple[str, ...] = column(_list_of(_name))

    @classmethod
    def _label(cls, raw: Mapping[str, Any]) -> str:
        return str(raw.get("arch", ""))

    def _check(self, at: _At) -> "ArchCapability":
        if self.arch != "mp_%d%d" % self.musa:
            raise at.child("arch").error(f"{self.arch!r} is not the architecture of {self.musa}")
        if not self.sources:
            raise at.child("sources").error("is empty: name where the features are documented")
        return self


@record
class CapabilityTable(Row):
    doc: str = column(_STR, key="_doc")
    architectures: Tuple[ArchCapability, ...] = column(_list_of(_row(ArchCapability)))

    def _check(self, at: _At) -> "CapabilityTable":
        musa = [row.musa for row in self.architectures]
        if musa != sorted(set(musa)):
            raise at.child("architectures").error("must list each architecture once, oldest first")
        return self


# ------------------------------------------------------------------ torch_musa releases
@record
class ReleaseTable(Row):
    """Defects of torch_musa releases that torchada works around: defect -> releases that have
    it (PEP 440 release strings without the ``+local`` tag)."""

    doc: str = column(_STR, key="_doc")
    defects: Dict[str, List[str]] = column(_mapping_of(_list_of(_name, as_list=True), as_dict=True))


# ------------------------------------------------------------------ loading
#: The schema of each table, by file stem.
SCHEMAS: Dict[str, Type[Row]] = {
    "torch_cuda": ModuleTable,
    "torch_distributed": ModuleTable,
    "ctypes_modules": ModuleTable,
    "nvml_modules": ModuleTable,
    "torch_cpp_extension": ModuleTable,
    "torch_c": ModuleTable,
    "switches": SwitchTable,
    "cuda_device_params": DeviceParamTable,
    "cuda_build": BuildTable,
    "libraries": LibraryTable,
    "nvidia_callers": NvidiaCallerTable,
    "cuda_capability": CapabilityTable,
    "torch_musa_releases": ReleaseTable,
}


def _stem(name: str) -> str:
    return name[: -len(".json")] if name.endswith(".json") else name


def load(name: str) -> Any:
    """Table ``name`` (``"torch_cuda"`` or ``"torch_cuda.json"``) of ``torchada/tables``, read
    once and checked against its schema; raises :class:`TableError` where it does not follow it.

    Example::

        >>> load("torch_cuda").modules["torch.cuda"].names["CUDAGraph"].to
        'MUSAGraph'
    """
    return _load(_stem(name))


def _load(stem: str) -> Any:
    if stem not in SCHEMAS:
        return load_file(TABLES_DIR / f"{stem}.json", stem)  # raises, naming the table
    return _cached_tables((stem,) if stem in _ON_THEIR_OWN else _TOGETHER)[stem]


#: Tables read on their own: the switches are read wherever an environment variable of ours is
#: (the command line, the simulator), where the others are not needed; the NVIDIA-only callers
#: when a program first asks torch.cuda.is_available(), not at activation; the capabilities when
#: it first asks for one.
_ON_THEIR_OWN = ("switches", "nvidia_callers", "cuda_capability")
#: The rest are read together: activation reads nearly all of them, and each cached file costs
#: more to find and open than its contents cost to read.
_TOGETHER = tuple(stem for stem in SCHEMAS if stem not in _ON_THEIR_OWN)


@functools.lru_cache(maxsize=None)
def _cached_tables(stems: Tuple[str, ...]) -> Dict[str, Any]:
    from .cache import derived

    # Parsed and checked once per edit of a table (or of the schemas here), not per process.
    paths = {stem: TABLES_DIR / f"{stem}.json" for stem in stems}

    def whole(value: Any) -> bool:
        # A stored value without a table it must hold, or of another kind, is computed again.
        return (
            isinstance(value, dict)
            and set(value) == set(stems)
            and all(isinstance(value[stem], SCHEMAS[stem]) for stem in stems)
        )

    return derived(
        f"table-{stems[0]}" if len(stems) == 1 else "tables",
        [*paths.values(), Path(__file__)],
        lambda: {stem: load_file(path, stem) for stem, path in paths.items()},
        check=whole,
    )


def load_file(path: Union[str, Path], schema: str) -> Any:
    """The table in ``path`` read with the schema of table ``schema`` (a copy of a table, a table
    being written); uncached. Raises :class:`TableError` as :func:`load` does."""
    stem, path = _stem(schema), Path(path)
    own = path.resolve() == (TABLES_DIR / f"{stem}.json").resolve()
    at = _At(stem, source="" if own else f"{path} (read as table {stem})")
    cls = SCHEMAS.get(stem)
    if cls is None:
        raise at.error("has no schema in torchada._core.tables.SCHEMAS")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise at.error(f"is not valid JSON: {exc}") from None
    table = _row(cls)(raw, at)
    logger.debug("loaded table %s from %s", stem, path)
    return table
