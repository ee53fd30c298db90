"""How a CUDA extension's build settings become a torch_musa extension's.

nvcc flags become flags for MUSA's compiler (mcc) and the ``nvcc``/``nvcc_dlink`` keys of
``extra_compile_args`` become ``mcc``/``mcc_dlink`` (``tables/cuda_build.json``); architecture
options and ``TORCH_CUDA_ARCH_LIST`` go through the porter's threshold rows; CUDA library names,
in ``libraries=[...]`` and ``-l`` flags, become MUSA ones through the one library table
(``tables/libraries.json``). Every function returns new objects: the caller's are never modified.
Nothing here imports torch_musa.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .._core.warn import warn_once
from .._native.build import temporary_env

if TYPE_CHECKING:
    from .._core.tables import BuildTable

logger = logging.getLogger("torchada")


def _table() -> BuildTable:
    from .._core import tables as _tables

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
    from ..porting import load_rules

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
def musa_arch_env() -> Iterator[None]:
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
    from .._core import tables as _tables

    return _tables.load("libraries").link_names()


def _musa_library(name: str) -> Optional[str]:
    """The MUSA link name for ``name``: None where MUSA drops it, ``name`` for other libraries."""
    return _link_names().get(name, name)


def runtime_library() -> str:
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


def translate_extension_kwargs(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """``CUDAExtension``'s keyword arguments for ``MUSAExtension``: libraries, compile and link
    flags translated, torch's ``dlink``/``dlink_libraries`` as an ``mcc_dlink`` entry. Lists are
    copied."""
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


def links_musa_library(libraries: Sequence[str]) -> bool:
    """Whether any of ``libraries`` (link names) is a MUSA library of the table."""
    musa = {m for m in _link_names().values() if m}
    return any(lib in musa for lib in libraries)


def has_nvcc_args(args: Any) -> bool:
    """Whether ``extra_compile_args`` is a dict with an nvcc key (``nvcc``, ``nvcc_dlink``)."""
    return isinstance(args, dict) and any(k in _table().compile_arg_keys for k in args)
