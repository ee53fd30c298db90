"""torch.utils.cpp_extension on MUSA: CUDA extensions are ported, then built as torch_musa ones.

``CUDAExtension``/``BuildExtension`` (setup.py) and ``load``/``load_inline`` (JIT) keep their
torch signatures. Their sources go through :mod:`torchada.porting` into a build tree, never in
place: ``build/torchada_ported/<extension>/`` for setup.py builds, ``<build dir>/torchada_ported/``
for ``load()``. Build settings are translated through ``tables/cuda_build.json``: nvcc flags (the
``nvcc`` key becomes ``mcc``), architecture flags and ``TORCH_CUDA_ARCH_LIST`` (through the
porter's threshold rows), and CUDA library names (through ``tables/libraries.json``). Arguments
the caller passed are never modified.
docs/extensions.md describes what is translated and where the porter's report is.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import logging
import os
import re
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import setuptools

# torch_musa's extension module subclasses torch's BuildExtension: it is imported here, before
# torchada installs its proxies, so that it gets torch's class and not ours.
from torch_musa.utils import musa_extension as _me

from ._build import temporary_env, torch_cpp_extension
from ._fills._warn import warn_once

if TYPE_CHECKING:
    from ._tables import BuildTable
    from .porting.report import FileReport, TreeReport
# The porter itself is imported on first use: enabling torchada should not pay for it.

logger = logging.getLogger("torchada")

_torch_cpp = torch_cpp_extension()

#: Ported copies live in this directory under the build directory.
PORTED_DIR = "torchada_ported"
REPORT_NAME = "torchada-port-report"
_CUDA_SUFFIXES = (".cu", ".cuh")
_DEVICE_SUFFIXES = (".cu", ".cuh", ".mu", ".muh")
# Attribute of an Extension made by CUDAExtension: the settings porting starts from.
_STATE_ATTR = "_torchada_cuda_state"

_reports: Dict[str, TreeReport] = {}


def _table() -> BuildTable:
    from . import _tables

    return _tables.load("cuda_build")


# ------------------------------------------------------------------ architectures
_ARCH_NAME = re.compile(r"(?:sm|compute|lto)_(\d+)[a-z]?", re.IGNORECASE)
_CAPABILITY = re.compile(r"(\d+)\.(\d+)[a-z]?\Z", re.IGNORECASE)


def _cuda_arch_value(arch: str) -> int:
    """``__CUDA_ARCH__`` of an architecture: ``sm_86``/``compute_86``/``8.6``/``86`` -> 860."""
    text = arch.strip()
    named = _table().named_archs.get(text.split("+", 1)[0])
    if named is not None:
        text = named
    text = re.sub(r"\+(PTX|Tegra)\Z", "", text, flags=re.IGNORECASE)
    match = _ARCH_NAME.fullmatch(text) or re.fullmatch(r"(\d+)[a-z]?", text)
    if match:
        return int(match.group(1)) * 10
    match = _CAPABILITY.match(text)
    if match:
        return int(match.group(1)) * 100 + int(match.group(2)) * 10
    raise ValueError(f"cannot read {arch!r} as a CUDA architecture (e.g. sm_80, 8.0, Ampere)")


def musa_arch(cuda_arch: str) -> Optional[str]:
    """The MUSA architecture (``"22"`` for mp_22) with the features of a CUDA one (``"sm_86"``,
    ``"compute_90a"``, ``"8.6"``, ``"Ampere"``), after the porter's threshold rows; None when MUSA
    has none (sm_100 and newer)."""
    from .porting import load_rules

    value = _cuda_arch_value(cuda_arch)
    for tier in load_rules().arch_tiers:
        if tier.cuda_min <= value <= tier.cuda_max:
            return str(tier.musa_arch // 10)
    warn_once(
        f"cpp_extension-arch:{value}",
        f"CUDA architecture {cuda_arch} has no MUSA counterpart (the newest MUSA tier covers up "
        "to sm_99): it is left out of the MUSA architecture flags",
    )
    return None


def translate_arch_list(value: str) -> str:
    """A ``TORCH_CUDA_ARCH_LIST`` value as a ``TORCH_MUSA_ARCH_LIST`` one: ``"8.0;8.6;9.0"`` ->
    ``"22;31"`` (duplicates dropped, order kept)."""
    archs: List[str] = []
    for item in re.split(r"[;,\s]+", value.strip()):
        if not item:
            continue
        arch = musa_arch(item)
        if arch is not None and arch not in archs:
            archs.append(arch)
    return ";".join(archs)


@contextlib.contextmanager
def _musa_arch_env() -> Iterator[None]:
    """While building: ``TORCH_MUSA_ARCH_LIST`` from ``TORCH_CUDA_ARCH_LIST`` unless it is set."""
    cuda = os.environ.get("TORCH_CUDA_ARCH_LIST", "").strip()
    if not cuda or os.environ.get("TORCH_MUSA_ARCH_LIST", "").strip():
        yield
        return
    value = translate_arch_list(cuda)
    if value:
        logger.debug("TORCH_CUDA_ARCH_LIST=%s -> TORCH_MUSA_ARCH_LIST=%s", cuda, value)
    with temporary_env("TORCH_MUSA_ARCH_LIST", value or None):
        yield


# ------------------------------------------------------------------ flags and libraries
def _option(flags: List[str], i: int, names: Sequence[str]) -> Optional[Tuple[str, str, int]]:
    """``(name, value, next index)`` if ``flags[i]`` is one of ``names`` taking a value, written
    ``-opt v`` (two items), ``-opt=v`` or ``"-opt v"`` (one item)."""
    flag = flags[i]
    for name in names:
        if flag == name:
            value = flags[i + 1] if i + 1 < len(flags) else ""
            return name, value, i + 2
        for sep in ("=", " "):
            if flag.startswith(name + sep):
                return name, flag[len(name) + 1 :].strip(), i + 1
    return None


def translate_nvcc_flags(flags: Optional[Sequence[str]]) -> List[str]:
    """nvcc flags as flags for MUSA's compiler: architecture options become
    ``--offload-arch=mp_XX``, the options listed in cuda_build.json are respelled or dropped, and
    everything else is kept. Returns a new list."""
    table = _table()
    arch_options = table.arch_options
    valued = [r for r in table.nvcc_flags if r.value]
    plain = {r.nvcc: r for r in table.nvcc_flags if not r.value}
    items = [str(f) for f in (flags or ())]
    out: List[str] = []
    archs: List[str] = []
    arch_at: Optional[int] = None
    i = 0
    while i < len(items):
        found = _option(items, i, arch_options)
        if found is not None:
            _, value, i = found
            arch_at = len(out) if arch_at is None else arch_at
            # native/all/all-major name no architecture: TORCH_MUSA_ARCH_LIST (or the visible
            # devices) decides, as it does without flags.
            for number in _ARCH_NAME.findall(value):
                arch = musa_arch(f"sm_{number}")
                if arch is not None and arch not in archs:
                    archs.append(arch)
            continue
        found = _option(items, i, [r.nvcc for r in valued])
        if found is not None:
            name, value, i = found
            rule = next(r for r in valued if r.nvcc == name)
            if rule.mcc == "@value":
                out.extend(v.strip() for v in value.split(",") if v.strip())
            elif rule.mcc is not None:
                out.append(rule.mcc)
            else:
                logger.debug("nvcc option %s %s dropped: %s", name, value, rule.note)
            continue
        rule = plain.get(items[i])
        if rule is None:
            out.append(items[i])
        elif rule.mcc is not None:
            out.append(rule.mcc)
        else:
            logger.debug("nvcc option %s dropped: %s", items[i], rule.note)
        i += 1
    if arch_at is not None:
        out[arch_at:arch_at] = [f"--offload-arch=mp_{arch}" for arch in archs]
    return out


@functools.lru_cache(maxsize=1)
def _link_names() -> Dict[str, Optional[str]]:
    from . import _tables

    return _tables.load("libraries").link_names()


def _musa_library(name: str) -> Optional[str]:
    """The MUSA link name for ``name``: None where MUSA drops it, ``name`` for other libraries."""
    return _link_names().get(name, name)


def _runtime_library() -> str:
    """The MUSA runtime's link name (``musart``), which ported code calling the runtime needs."""
    return str(_musa_library("cudart"))


def translate_libraries(libraries: Optional[Sequence[str]]) -> List[str]:
    """CUDA library names as MUSA ones (``cublas`` -> ``mublas``); torch's CUDA libraries are
    dropped. Returns a new list."""
    out: List[str] = []
    for lib in libraries or ():
        musa = _musa_library(str(lib))
        if musa is not None:
            out.append(musa)
    return out


def translate_ldflags(flags: Optional[Sequence[str]]) -> List[str]:
    """Linker flags with CUDA libraries (``-lcublas``, ``-l cublas``) renamed. A new list."""
    items = [str(f) for f in (flags or ())]
    out: List[str] = []
    i = 0
    while i < len(items):
        flag = items[i]
        if flag == "-l" and i + 1 < len(items):
            musa = _musa_library(items[i + 1])
            if musa is not None:
                out += ["-l", musa]
            i += 2
            continue
        if flag.startswith("-l") and not flag.startswith("-l:"):
            musa = _musa_library(flag[2:])
            if musa is not None:
                out.append("-l" + musa)
        else:
            out.append(flag)
        i += 1
    return out


def translate_compile_args(
    args: Union[None, Sequence[str], Dict[str, Sequence[str]]],
) -> Union[None, List[str], Dict[str, List[str]]]:
    """``extra_compile_args``: a list is C++ flags (copied); in a dict, ``nvcc``/``nvcc_dlink``
    become ``mcc``/``mcc_dlink`` with their flags translated. Returns a new object."""
    if args is None:
        return None
    if not isinstance(args, dict):
        return [str(f) for f in args]
    keys = _table().compile_arg_keys
    out: Dict[str, List[str]] = {}
    for key, flags in args.items():
        if key in keys:
            translated = translate_nvcc_flags(flags)
            if key == "nvcc_dlink":
                translated = translate_ldflags(translated)
            out.setdefault(keys[key], []).extend(translated)
        else:
            out.setdefault(key, []).extend(str(f) for f in flags or ())
    return out


_LIST_KWARGS = (
    "include_dirs", "library_dirs", "runtime_library_dirs", "define_macros", "undef_macros",
    "extra_objects", "depends", "export_symbols", "swig_opts",
)  # fmt: skip


def _translate_extension_kwargs(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(kwargs)
    for key in _LIST_KWARGS:
        if out.get(key) is not None:
            out[key] = list(out[key])
    if out.get("libraries") is not None:
        out["libraries"] = translate_libraries(out["libraries"])
    if "extra_compile_args" in out:
        out["extra_compile_args"] = translate_compile_args(out["extra_compile_args"])
    if out.get("extra_link_args") is not None:
        out["extra_link_args"] = translate_ldflags(out["extra_link_args"])
    # torch's device-link options: what torch would add to nvcc_dlink goes to mcc_dlink.
    dlink = out.pop("dlink", False)
    dlink_libraries = list(out.pop("dlink_libraries", None) or [])
    if dlink or dlink_libraries:
        args = out.get("extra_compile_args")
        args = {"cxx": list(args)} if isinstance(args, list) else dict(args or {})
        dlink_flags = list(args.get("mcc_dlink", []))
        dlink_flags += [f"-l{lib}" for lib in translate_libraries(dlink_libraries)]
        args["mcc_dlink"] = dlink_flags
        out["extra_compile_args"] = args
    return out


# ------------------------------------------------------------------ porting a build
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\r\n]+)[>"]', re.MULTILINE)
# Ported code that calls the MUSA runtime needs libmusart at link time.
_RUNTIME_USE = re.compile(
    r"\b(?:musa[A-Z]\w*\s*\(|C10_MUSA_CHECK|AT_MUSA_CHECK|C10_MUSA_KERNEL_LAUNCH_CHECK"
    r"|C10_MUSA_IGNORE_ERROR)"
)


@dataclass
class _Ported:
    sources: List[str]
    include_dirs: List[str]
    report: TreeReport
    texts: List[str] = field(default_factory=list)  # ported inline sources

    def needs_runtime(self, out: Path) -> bool:
        if any(_RUNTIME_USE.search(t) for t in self.texts):
            return True
        for file_report in self.report.files:
            if file_report.output_path and not file_report.output_path.startswith("<"):
                try:
                    text = (out / file_report.output_path).read_text("utf-8", errors="replace")
                except OSError:
                    continue
                if _RUNTIME_USE.search(text):
                    return True
        return False


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _system_dirs() -> List[str]:
    """Directories whose headers are never ported: torch's, torch_musa's, Python's, toolkits."""
    dirs = set(_torch_cpp.include_paths()) | set(_me.include_paths(musa=True))
    paths = sysconfig.get_paths()
    dirs.update(paths.get(key, "") for key in ("include", "platinclude", "stdlib", "purelib"))
    dirs.update({sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/opt"})
    dirs.update(h for h in (_me.MUSA_HOME, _me.MUDNN_HOME, _torch_cpp.CUDA_HOME) if h)
    return sorted(os.path.abspath(d) for d in dirs if d)


def _collect(
    sources: Sequence[str],
    include_dirs: Sequence[str],
    base_root: Optional[str],
    texts: Sequence[str],
    out: str,
) -> Tuple[List[str], List[str]]:
    """The files to port (the sources, then every project file they include) and the project's
    include directories (those inside ``base_root`` or outside every system directory). Files in
    ``out`` are ported copies already: never ported again."""
    system = _system_dirs()

    def is_system(path: str) -> bool:
        if base_root is not None and _inside(path, base_root):
            return False
        return any(_inside(path, s) for s in system)

    project_dirs = [d for d in include_dirs if not is_system(d)]
    files: Dict[str, None] = dict.fromkeys(sources)
    queue = list(sources)

    def scan(text: str, here: Optional[str]) -> None:
        for delimiter, target in _INCLUDE.findall(text):
            target = target.strip()
            bases = ([here] if delimiter == '"' and here else []) + project_dirs
            for base in bases:
                candidate = os.path.normpath(os.path.join(base, target))
                if os.path.isfile(candidate):
                    if candidate not in files and not (
                        is_system(candidate) or _inside(candidate, out)
                    ):
                        files[candidate] = None
                        queue.append(candidate)
                    break

    for text in texts:
        scan(text, None)
    while queue:
        path = queue.pop()
        try:
            text = Path(path).read_text("utf-8", errors="replace")
        except OSError:
            continue
        scan(text, os.path.dirname(path))
    return list(files), project_dirs


def _port_build(
    name: str,
    sources: Sequence[str],
    include_dirs: Sequence[str],
    out: Path,
    base_root: Optional[str],
    texts: Sequence[str] = (),
) -> _Ported:
    """Port ``sources`` and the project headers they reach into ``out``, mirroring their layout
    below the common root, so relative includes still resolve. Incremental: unchanged files are
    neither ported nor written again."""
    from .porting import TreeReport, port_tree

    sources = [os.path.abspath(s) for s in sources]
    for source in sources:
        if os.path.isdir(source):
            # What torch's own build raises opening it; porting it would walk the whole directory.
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), source)
    include_dirs = [os.path.abspath(d) for d in include_dirs]
    files, project_dirs = _collect(sources, include_dirs, base_root, texts, str(out.resolve()))
    anchors = [os.path.dirname(f) for f in files] + project_dirs
    if base_root is not None:
        anchors.append(base_root)
    root = os.path.commonpath(anchors) if anchors else str(out)
    report = TreeReport(source=root, output=str(out))
    dest: Dict[str, str] = {}
    for path in files:
        rel_dir = os.path.relpath(os.path.dirname(path), root)
        tree = port_tree(path, out / rel_dir, rename_cu=True)
        for file_report in tree.files:
            file_report.path = os.path.normpath(os.path.join(rel_dir, file_report.path or ""))
            file_report.output_path = os.path.normpath(
                os.path.join(rel_dir, file_report.output_path or "")
            )
            report.files.append(file_report)
            dest[path] = str(out / file_report.output_path)
        report.written.extend(os.path.normpath(os.path.join(rel_dir, w)) for w in tree.written)
        report.notes.extend(tree.notes)
    mapped_dirs = []
    for directory in include_dirs:
        if directory in project_dirs:
            target = out / os.path.relpath(directory, root)
            target.mkdir(parents=True, exist_ok=True)
            mapped_dirs.append(str(target))
        else:
            mapped_dirs.append(directory)
    return _Ported([dest[s] for s in sources], mapped_dirs, report)


def _port_texts(texts: Sequence[str], label: str) -> Tuple[List[str], List[FileReport]]:
    from .porting import port_source

    ported, reports = [], []
    for i, text in enumerate(texts):
        new, file_report = port_source(text, filename=f"{label}[{i}]")
        file_report.path = file_report.output_path = f"<{label}[{i}]>"
        ported.append(new)
        reports.append(file_report)
    return ported, reports


def _publish(
    name: str, report: TreeReport, out: Path, verbose: bool, announce: bool = False
) -> None:
    """Keep the report (port_report(name)), write it beside the ported copies, and say what
    needs a look: the table with ``verbose``, one line with ``announce`` (setup.py builds)."""
    _reports[name] = report
    out.mkdir(parents=True, exist_ok=True)
    for suffix, text in ((".json", report.to_json()), (".txt", report.format_table() + "\n")):
        path = out / (REPORT_NAME + suffix)
        try:
            if path.read_text("utf-8") == text:
                continue
        except OSError:
            pass
        path.write_text(text, "utf-8")
    totals = report.totals()
    line = (
        f"torchada: ported extension {name}: {totals['files']} files, {totals['written']} "
        f"written, into {out} (report: {out / (REPORT_NAME + '.txt')})"
    )
    if verbose:
        print(report.format_table(), file=sys.stderr)
    elif announce:
        print(line)
    else:
        logger.info(line)
    remaining = report.remaining()
    if remaining:
        names = ", ".join(sorted(remaining)[:8]) + (", ..." if len(remaining) > 8 else "")
        warn_once(
            f"cpp_extension-remaining:{name}",
            f"extension {name}: the porter has no rule for CUDA names it found ({names}); the "
            f"build may fail there. The report is {out / (REPORT_NAME + '.txt')}",
        )


def port_report(name: str) -> Optional[TreeReport]:
    """The porter's report of the latest build of extension ``name`` in this process."""
    return _reports.get(name)


def _musa_library_dir() -> Optional[str]:
    from ._ctypes import musa_library_dir

    return musa_library_dir()


def _links_musa_library(libraries: Sequence[str]) -> bool:
    musa = {m for m in _link_names().values() if m}
    return any(lib in musa for lib in libraries)


def _torch_musa_header_dirs() -> List[str]:
    """torch_musa's own include directories (those beyond torch's)."""
    torch_dirs = set(_torch_cpp.include_paths())
    return [p for p in _me.include_paths() if p not in torch_dirs]


# ------------------------------------------------------------------ setup.py
@dataclass
class _ExtensionState:
    sources: List[str]
    include_dirs: List[str]
    libraries: List[str]
    library_dirs: List[str]
    runtime_library_dirs: List[str]


def _remember(ext: setuptools.Extension, sources: Sequence[str]) -> None:
    state = _ExtensionState(
        sources=list(sources),
        include_dirs=list(ext.include_dirs or []),
        libraries=list(ext.libraries or []),
        library_dirs=list(ext.library_dirs or []),
        runtime_library_dirs=list(ext.runtime_library_dirs or []),
    )
    setattr(ext, _STATE_ATTR, state)


def CUDAExtension(name: str, sources: Sequence[str], *args: Any, **kwargs: Any) -> Any:
    """torch's ``CUDAExtension`` on MUSA: a torch_musa ``MUSAExtension`` with the build settings
    translated. The sources are ported when :class:`BuildExtension` builds it."""
    sources = [str(s) for s in sources]
    kwargs = _translate_extension_kwargs(kwargs)
    # torch_musa takes device code from .mu files only: the CUDA sources join after porting.
    host = [s for s in sources if os.path.splitext(s)[1] not in _DEVICE_SUFFIXES]
    with _musa_arch_env():
        ext = _me.MUSAExtension(name, host, *args, **kwargs)
    ext.sources = list(sources)
    _remember(ext, sources)
    return ext


def _is_cuda_extension(ext: Any) -> bool:
    if hasattr(ext, _STATE_ATTR):
        return True
    if any(os.path.splitext(str(s))[1] in _CUDA_SUFFIXES for s in ext.sources or ()):
        return True
    args = ext.extra_compile_args
    return isinstance(args, dict) and any(k in _table().compile_arg_keys for k in args)


def _setup_path(path: str) -> str:
    # setup() sources are relative to setup.py's directory where they can be.
    here = os.getcwd()
    return os.path.relpath(path, here) if _inside(path, here) else path


class BuildExtension(_me.BuildExtension):
    """torch's ``BuildExtension`` on MUSA: torch_musa's, porting each CUDA extension first.

    Ported copies go to ``<build base>/torchada_ported/<extension name>/`` (``build/...`` by
    default), with the report beside them; include directories inside the project point at their
    ported copies. Extensions without CUDA sources or nvcc flags (``CppExtension``) are built as
    they are.
    """

    def build_extensions(self) -> None:
        build_base = Path(self.get_finalized_command("build").build_base).resolve()
        for ext in self.extensions:
            if _is_cuda_extension(ext):
                self._port_extension(ext, build_base / PORTED_DIR / ext.name)
        with _musa_arch_env():
            super().build_extensions()

    def _port_extension(self, ext: Any, out: Path) -> None:
        if not hasattr(ext, _STATE_ATTR):
            # A plain setuptools.Extension with CUDA sources: translate its settings (new objects
            # on the extension; the lists and dicts it was given stay as they were).
            ext.extra_compile_args = translate_compile_args(ext.extra_compile_args)
            ext.libraries = translate_libraries(ext.libraries)
            ext.extra_link_args = translate_ldflags(ext.extra_link_args)
            _remember(ext, ext.sources)
        state: _ExtensionState = getattr(ext, _STATE_ATTR)
        ported = _port_build(ext.name, state.sources, state.include_dirs, out, os.getcwd())
        _publish(ext.name, ported.report, out, verbose=False, announce=bool(self.verbose))
        ext.sources = [_setup_path(p) for p in ported.sources]
        ext.include_dirs = ported.include_dirs
        ext.libraries = list(state.libraries)
        ext.library_dirs = list(state.library_dirs)
        ext.runtime_library_dirs = list(state.runtime_library_dirs)
        runtime = _runtime_library()
        if ported.needs_runtime(out) and runtime not in ext.libraries:
            ext.libraries.append(runtime)
        if _links_musa_library(ext.libraries):
            # Where the MUSA libraries are (the simulator's own build of them, or $MUSA_HOME/lib).
            lib_dir = _musa_library_dir()
            if lib_dir and lib_dir not in ext.library_dirs:
                ext.library_dirs.append(lib_dir)
            if lib_dir and lib_dir not in ext.runtime_library_dirs:
                ext.runtime_library_dirs.append(lib_dir)


# ------------------------------------------------------------------ JIT
def _bind(func: Any, *args: Any, **kwargs: Any) -> Dict[str, Any]:
    # The installed torch's signature: a program written for it passes arguments its way.
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _default_build_directory(name: str, verbose: bool) -> str:
    get = getattr(_me, "_get_build_directory", None) or _torch_cpp._get_build_directory
    return get(name, verbose)


def _musa_ldflags(ported: _Ported, out: Path, ldflags: List[str]) -> List[str]:
    """``ldflags`` plus libmusart when the ported code calls the runtime, and the directory of the
    MUSA libraries when any is linked."""
    flags = list(ldflags)
    runtime = "-l" + _runtime_library()
    if ported.needs_runtime(out) and runtime not in flags:
        flags.append(runtime)
    libraries = [f[2:] for f in flags if f.startswith("-l")]
    libraries += [b for a, b in zip(flags, flags[1:]) if a == "-l"]
    lib_dir = _musa_library_dir() if _links_musa_library(libraries) else None
    if lib_dir:
        flags[:0] = [f"-L{lib_dir}", f"-Wl,-rpath,{lib_dir}"]
    return flags


def _optional_list(value: Optional[Sequence[str]]) -> Optional[List[str]]:
    return None if value is None else [str(v) for v in value]


def _as_texts(value: Union[None, str, Sequence[str]]) -> List[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _musa_load_kwargs(
    a: Dict[str, Any], ported: Any, out: Path, build_directory: str, verbose: bool
) -> Dict[str, Any]:
    """The arguments ``load`` and ``load_inline`` both hand to torch_musa, from torch's ones."""
    cuda_cflags = a["extra_cuda_cflags"]
    return {
        "extra_cflags": _optional_list(a["extra_cflags"]),
        "extra_musa_cflags": None if cuda_cflags is None else translate_nvcc_flags(cuda_cflags),
        "extra_ldflags": _musa_ldflags(ported, out, translate_ldflags(a["extra_ldflags"])),
        "extra_include_paths": ported.include_dirs + _torch_musa_header_dirs(),
        "build_directory": build_directory,
        "verbose": verbose,
        "with_musa": a["with_cuda"],
        "is_python_module": a["is_python_module"],
        "keep_intermediates": a["keep_intermediates"],
    }


def load(name: str, sources: Union[str, Sequence[str]], *args: Any, **kwargs: Any) -> Any:
    """torch's ``load`` on MUSA: ports the sources into ``<build directory>/torchada_ported/``,
    then builds them with torch_musa's ``load`` (``extra_cuda_cflags`` translated into
    ``extra_musa_cflags``, ``with_cuda`` into ``with_musa``). Takes torch's arguments."""
    a = _bind(_torch_cpp.load, name, sources, *args, **kwargs)
    paths = [os.path.abspath(s) for s in _as_texts(a["sources"])]
    verbose = bool(a["verbose"])
    build_directory = a["build_directory"] or _default_build_directory(name, verbose)
    out = Path(build_directory) / PORTED_DIR
    base_root = os.path.commonpath([os.path.dirname(p) for p in paths]) if paths else None
    ported = _port_build(name, paths, a["extra_include_paths"] or [], out, base_root)
    _publish(name, ported.report, out, verbose)
    extra = {}
    for key in ("extra_sycl_cflags", "with_sycl"):
        if a.get(key) is not None:
            extra[key] = a[key]
    with _musa_arch_env():
        return _me.load(
            name,
            ported.sources,
            is_standalone=a["is_standalone"],
            **_musa_load_kwargs(a, ported, out, build_directory, verbose),
            **extra,
        )


def load_inline(
    name: str, cpp_sources: Union[str, Sequence[str]], *args: Any, **kwargs: Any
) -> Any:
    """torch's ``load_inline`` on MUSA: ports ``cpp_sources`` and ``cuda_sources`` (which become
    torch_musa's ``musa_sources``), and project headers reached through ``extra_include_paths``,
    then builds with torch_musa's ``load_inline``. Takes torch's arguments."""
    a = _bind(_torch_cpp.load_inline, name, cpp_sources, *args, **kwargs)
    if a.get("sycl_sources"):
        raise ValueError(f"load_inline(name={name!r}): sycl_sources cannot be built for MUSA")
    if a.get("no_implicit_headers"):
        logger.debug("load_inline(name=%r): torch_musa always adds torch/extension.h", name)
    verbose = bool(a["verbose"])
    build_directory = a["build_directory"] or _default_build_directory(name, verbose)
    out = Path(build_directory) / PORTED_DIR
    cpp, cpp_reports = _port_texts(_as_texts(a["cpp_sources"]), "cpp_sources")
    cuda, cuda_reports = _port_texts(_as_texts(a["cuda_sources"]), "cuda_sources")
    include_dirs = a["extra_include_paths"] or []
    ported = _port_build(name, [], include_dirs, out, None, texts=cpp + cuda)
    ported.texts = cpp + cuda
    ported.report.files[:0] = cpp_reports + cuda_reports
    _publish(name, ported.report, out, verbose)
    with _musa_arch_env():
        return _me.load_inline(
            name,
            cpp,
            musa_sources=cuda or None,
            functions=a["functions"],
            with_pytorch_error_handling=a["with_pytorch_error_handling"],
            use_pch=a.get("use_pch", False),
            **_musa_load_kwargs(a, ported, out, build_directory, verbose),
        )


# ------------------------------------------------------------------ paths
def _device_is_musa(
    function: str, device_type: Union[str, bool], cuda: Optional[bool]
) -> Optional[bool]:
    """True/False for a MUSA/host build, None for another device type (torch answers)."""
    if cuda is not None:
        if device_type not in ("cpu", False):
            raise TypeError(f"{function}() got both device_type and cuda")
        return bool(cuda)
    if isinstance(device_type, bool):  # torch < 2.6: include_paths(cuda: bool = False)
        return device_type
    if device_type == "cpu":
        return False
    if device_type in ("cuda", "musa"):
        return True
    return None


def include_paths(
    device_type: Union[str, bool] = "cpu",
    torch_include_dirs: bool = True,
    *,
    cuda: Optional[bool] = None,
) -> List[str]:
    """torch_musa's include directories. Takes torch's signature (``device_type="cpu"``;
    ``"cuda"`` means MUSA's) and the older one (``cuda: bool``, also positional)."""
    musa = _device_is_musa("include_paths", device_type, cuda)
    if musa is None:
        # torch_include_dirs only when given: torch before 2.7 does not take it.
        extra = {} if torch_include_dirs else {"torch_include_dirs": False}
        return _torch_cpp.include_paths(device_type, **extra)
    paths = _me.include_paths(musa=musa)
    if not torch_include_dirs:
        torch_dirs = set(_torch_cpp.include_paths())
        paths = [p for p in paths if p not in torch_dirs]
    return paths


def library_paths(
    device_type: Union[str, bool] = "cpu",
    torch_include_dirs: bool = True,
    cross_target_platform: Optional[str] = None,
    *,
    cuda: Optional[bool] = None,
) -> List[str]:
    """torch_musa's library directories, with the signatures of :func:`include_paths`."""
    musa = _device_is_musa("library_paths", device_type, cuda)
    if musa is None:
        extra: Dict[str, Any] = {} if torch_include_dirs else {"torch_include_dirs": False}
        if cross_target_platform is not None:
            extra["cross_target_platform"] = cross_target_platform
        return _torch_cpp.library_paths(device_type, **extra)
    if cross_target_platform is not None:
        raise ValueError(
            f"library_paths(): cross_target_platform={cross_target_platform!r} is not supported "
            "for MUSA extensions"
        )
    paths = _me.library_paths(musa=musa)
    if not torch_include_dirs:
        torch_dirs = set(_torch_cpp.library_paths())
        paths = [p for p in paths if p not in torch_dirs]
    return paths
