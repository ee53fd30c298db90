"""torch.utils.cpp_extension on MUSA: CUDA extensions are ported, then built as torch_musa ones.

``CUDAExtension``/``BuildExtension`` (setup.py) and ``load``/``load_inline`` (JIT) keep their torch
signatures. Their sources go through :mod:`torchada.porting` into a build tree, never in place
(:mod:`torchada._extensions.build_porting`): ``build/torchada_ported/<extension>/`` for setup.py
builds, ``<build dir>/torchada_ported/`` for ``load()``. Their build settings are translated by
:mod:`torchada._extensions.build_settings`: nvcc flags (the ``nvcc`` key becomes ``mcc``),
architecture flags and ``TORCH_CUDA_ARCH_LIST``, and CUDA library names. Arguments the caller passed
are never modified. docs/extensions.md describes what is translated and where the porter's report
is.
"""

from __future__ import annotations

import inspect
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import setuptools

# torch_musa's extension module subclasses torch's BuildExtension: it is imported here, before
# torchada installs its proxies, so that it gets torch's class and not ours.
from torch_musa.utils import musa_extension as _me

from .._native.build import torch_cpp_extension
from . import stable_kit
from .build_porting import (
    PORTED_DIR,
    PortedBuild,
    inside,
    port_build,
    port_report,
    port_texts,
    publish,
)
from .build_settings import (
    has_nvcc_args,
    links_musa_library,
    musa_arch_env,
    runtime_library,
    translate_compile_args,
    translate_extension_kwargs,
    translate_ldflags,
    translate_libraries,
    translate_nvcc_flags,
)

__all__ = [
    "CUDAExtension", "BuildExtension", "load", "load_inline", "include_paths", "library_paths",
    "port_report",
]  # fmt: skip

logger = logging.getLogger("torchada")

_torch_cpp = torch_cpp_extension()

_CUDA_SUFFIXES = (".cu", ".cuh")
_DEVICE_SUFFIXES = (".cu", ".cuh", ".mu", ".muh")
# Attribute of an Extension made by CUDAExtension: the settings porting starts from.
_STATE_ATTR = "_torchada_cuda_state"


def _musa_library_dir() -> Optional[str]:
    from .._libraries.ctypes_bindings import musa_library_dir

    return musa_library_dir()


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
    kwargs = translate_extension_kwargs(kwargs)
    # torch_musa takes device code from .mu files only: the CUDA sources join after porting.
    host = [s for s in sources if os.path.splitext(s)[1] not in _DEVICE_SUFFIXES]
    with musa_arch_env():
        ext = _me.MUSAExtension(name, host, *args, **kwargs)
    ext.sources = list(sources)
    _remember(ext, sources)
    return ext


def _is_cuda_extension(ext: Any) -> bool:
    if hasattr(ext, _STATE_ATTR):
        return True
    if any(os.path.splitext(str(s))[1] in _CUDA_SUFFIXES for s in ext.sources or ()):
        return True
    return has_nvcc_args(ext.extra_compile_args)


def _setup_path(path: str) -> str:
    # setup() sources are relative to setup.py's directory where they can be.
    here = os.getcwd()
    return os.path.relpath(path, here) if inside(path, here) else path


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
        with musa_arch_env():
            super().build_extensions()

    def _port_directory(self, directory: Union[str, "os.PathLike[str]"]) -> str:
        # The published adapter's private helper, which projects call directly (Mooncake's JIT
        # loader, on an instance made by object.__new__): kept with its meaning, a directory
        # ported for a build, but never in place. The ported copy is ``<directory>_musa`` (the
        # name torch_musa's own porting gives it), made or brought up to date; its path is
        # returned and the porter's report is written into it.
        from ..porting import port_tree

        src = os.path.abspath(os.fspath(directory)).rstrip(os.sep)
        if not os.path.isdir(src):
            raise NotADirectoryError(
                f"BuildExtension._port_directory({os.fspath(directory)!r}): not a directory. "
                "Pass the directory of CUDA sources to port; to build, pass the sources to "
                "torch.utils.cpp_extension.load() or CUDAExtension, which port them themselves."
            )
        out = src + "_musa"
        report = port_tree(src, out)
        publish(os.path.basename(src), report, Path(out), verbose=False)
        return out

    def _port_extension(self, ext: Any, out: Path) -> None:
        if not hasattr(ext, _STATE_ATTR):
            # A plain setuptools.Extension with CUDA sources: translate its settings (new objects
            # on the extension; the lists and dicts it was given stay as they were).
            ext.extra_compile_args = translate_compile_args(ext.extra_compile_args)
            ext.libraries = translate_libraries(ext.libraries)
            ext.extra_link_args = translate_ldflags(ext.extra_link_args)
            _remember(ext, ext.sources)
        state: _ExtensionState = getattr(ext, _STATE_ATTR)
        ported = port_build(ext.name, state.sources, state.include_dirs, out, os.getcwd())
        publish(ext.name, ported.report, out, verbose=False, announce=bool(self.verbose))
        ext.sources = [_setup_path(p) for p in ported.sources]
        ext.include_dirs = ported.include_dirs
        ext.libraries = list(state.libraries)
        ext.library_dirs = list(state.library_dirs)
        ext.runtime_library_dirs = list(state.runtime_library_dirs)
        runtime = runtime_library()
        if ported.needs_runtime(out) and runtime not in ext.libraries:
            ext.libraries.append(runtime)
        if links_musa_library(ext.libraries):
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


def _musa_ldflags(ported: PortedBuild, out: Path, ldflags: List[str]) -> List[str]:
    """``ldflags`` plus libmusart when the ported code calls the runtime, and the directory of the
    MUSA libraries when any is linked."""
    flags = list(ldflags)
    runtime = "-l" + runtime_library()
    if ported.needs_runtime(out) and runtime not in flags:
        flags.append(runtime)
    libraries = [f[2:] for f in flags if f.startswith("-l")]
    libraries += [b for a, b in zip(flags, flags[1:]) if a == "-l"]
    lib_dir = _musa_library_dir() if links_musa_library(libraries) else None
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
    ported = port_build(name, paths, a["extra_include_paths"] or [], out, base_root)
    publish(name, ported.report, out, verbose)
    extra = {}
    for key in ("extra_sycl_cflags", "with_sycl"):
        if a.get(key) is not None:
            extra[key] = a[key]
    with musa_arch_env():
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
    cpp, cpp_reports = port_texts(_as_texts(a["cpp_sources"]), "cpp_sources")
    cuda, cuda_reports = port_texts(_as_texts(a["cuda_sources"]), "cuda_sources")
    include_dirs = a["extra_include_paths"] or []
    ported = port_build(name, [], include_dirs, out, None, texts=cpp + cuda)
    ported.texts = cpp + cuda
    ported.report.files[:0] = cpp_reports + cuda_reports
    publish(name, ported.report, out, verbose)
    with musa_arch_env():
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
    """torch_musa's include directories, and for a device build the stable-ABI kit's last (as
    the published ``torchada.utils.cpp_extension`` gives; none of its headers hides torch's).
    Takes torch's signature (``device_type="cpu"``; ``"cuda"`` means MUSA's) and the older one
    (``cuda: bool``, also positional).

    Example::

        >>> import torch, torchada  # on MUSA  # doctest: +SKIP
        >>> from torch.utils.cpp_extension import include_paths  # doctest: +SKIP
        >>> include_paths("cuda")[-1].endswith("stable_include")  # doctest: +SKIP
        True
    """
    musa = _device_is_musa("include_paths", device_type, cuda)
    if musa is None:
        # torch_include_dirs only when given: torch before 2.7 does not take it.
        extra = {} if torch_include_dirs else {"torch_include_dirs": False}
        return _torch_cpp.include_paths(device_type, **extra)
    paths = _me.include_paths(musa=musa)
    if not torch_include_dirs:
        torch_dirs = set(_torch_cpp.include_paths())
        paths = [p for p in paths if p not in torch_dirs]
    if musa and stable_kit.include_dir() not in paths:
        paths.append(stable_kit.include_dir())
    return paths


def _musa_runtime_dir() -> Optional[str]:
    """The MUSA toolkit's library directory (``lib64``, else ``lib``, under MUSA_HOME), where
    it exists."""
    home = _me.MUSA_HOME
    for name in ("lib64", "lib") if home else ():
        path = os.path.join(home, name)
        if os.path.isdir(path):
            return path
    return None


def library_paths(
    device_type: Union[str, bool] = "cpu",
    torch_include_dirs: bool = True,
    cross_target_platform: Optional[str] = None,
    *,
    cuda: Optional[bool] = None,
) -> List[str]:
    """torch_musa's library directories, with the signatures of :func:`include_paths`; for a
    device build they hold the MUSA runtime's directory, as torch's hold CUDA's for a CUDA build
    (torch_musa's own leaves it out where the toolkit has ``lib64``: it lists the directory only
    where it falls back to ``lib``). Build helpers that
    turn each entry into an rpath (Mooncake's process-group adapter) find ``libmusart`` there.

    Example::

        >>> import torch, torchada  # on MUSA  # doctest: +SKIP
        >>> from torch.utils.cpp_extension import library_paths  # doctest: +SKIP
        >>> library_paths("cuda")[-1]  # doctest: +SKIP
        '/usr/local/musa/lib64'
    """
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
    runtime = _musa_runtime_dir() if musa else None
    if runtime is not None and runtime not in paths:
        paths.append(runtime)
    return paths
