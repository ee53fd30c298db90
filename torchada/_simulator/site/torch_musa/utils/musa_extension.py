"""torch_musa.utils.musa_extension, simulated: build host C++ extensions against the simulator.

The public surface follows torch_musa 2.7.1: ``MUSAExtension``, ``BuildExtension``, ``load``,
``load_inline``, ``include_paths``, ``library_paths``, ``MUSA_HOME`` and ``MUDNN_HOME``. Host
``.cpp`` sources are compiled by torch's own ``torch.utils.cpp_extension`` machinery (ninja).

Differences from a real MUSA install, all forced by having no MUSA toolkit:

- There is no MUSA compiler (mcc). Any ``.mu``/``.muh`` source is refused with an error naming it,
  before anything is compiled. MUSA compiler flags and ``TORCH_MUSA_ARCH_LIST`` are still checked,
  so a bad ``--offload-arch`` fails here as it would on hardware.
- There is no ``libmusa_python``. Extensions link ``c10``, ``torch``, ``torch_cpu`` and
  ``torch_python`` only: the simulator registers its kernels with torch's dispatcher from its own,
  already loaded, extension, so ATen calls made from an extension reach them without linking it.
- A musa tensor's ``data_ptr()`` points to host memory, so host code may read and write it directly.
  Real MUSA memory is device memory; such loops would fault on hardware and belong in ``.mu`` code.

In C++, a musa tensor is a ``c10::DeviceType::PrivateUse1`` tensor, as it is with torch_musa.
"""

from __future__ import annotations

import collections.abc
import copy
import functools
import inspect
import logging
import os
import re
import shutil
import sys
import warnings

import setuptools
import torch
from torch.utils import cpp_extension as _cpp

_logger = logging.getLogger("torchada")

_MUSA_SOURCE_SUFFIXES = (".mu", ".muh")
# CUDA sources are not MUSA sources to torch_musa: they must be ported (renamed) first.
_CUDA_SOURCE_SUFFIXES = (".cu", ".cuh")
_SUPPORTED_ARCHS = ("10", "21", "22", "31", "32")
# The libraries torch_musa links every extension against; musa_python has no simulated counterpart.
_TORCH_LIBRARIES = ("c10", "torch", "torch_cpu", "torch_python")
_COMPILE_ARG_KEYS = ("cxx", "mcc", "mcc_dlink")


def _find_musa_home() -> str | None:
    """The MUSA toolkit root: $MUSA_HOME, $MUSA_PATH, mcc's bin dir's parent, /usr/local/musa."""
    # An empty variable counts as unset, so MUSA_HOME= cannot make the toolkit root "".
    home = os.environ.get("MUSA_HOME") or os.environ.get("MUSA_PATH") or None
    if home is None:
        mcc = shutil.which("mcc")
        if mcc is not None:
            home = os.path.dirname(os.path.dirname(mcc))
        elif os.path.exists("/usr/local/musa"):
            home = "/usr/local/musa"
    if home and not _runtime_available():
        print(f"No MUSA runtime is found, using MUSA_HOME='{home}'")
    return home


def _find_mudnn_home() -> str | None:
    return os.environ.get("MUDNN_HOME") or os.environ.get("MUDNN_PATH") or None


def _runtime_available() -> bool:
    musa = getattr(torch, "musa", None)
    return bool(musa is not None and musa.is_available())


MUSA_HOME = _find_musa_home()
MUDNN_HOME = _find_mudnn_home()


class _NoMusaCompilerError(RuntimeError):
    """MUSA device code was asked for; the simulator cannot compile it."""


def _no_mcc_error(what: str, where: str) -> _NoMusaCompilerError:
    return _NoMusaCompilerError(
        f"{where}: cannot compile MUSA source(s) {what}: the torchada simulator has no MUSA "
        "compiler (mcc). Build the extension from host C++ (.cpp) sources only (their ATen calls "
        "on musa tensors run on the simulator), or build it on real MUSA hardware with the MUSA "
        "toolkit installed."
    )


def _refuse_device_sources(sources: collections.abc.Sequence[str], where: str) -> None:
    musa = [str(s) for s in sources if os.path.splitext(str(s))[1] in _MUSA_SOURCE_SUFFIXES]
    if musa:
        raise _no_mcc_error(", ".join(musa), where)
    cuda = [str(s) for s in sources if os.path.splitext(str(s))[1] in _CUDA_SOURCE_SUFFIXES]
    if cuda:
        # torch's machinery would hand these to nvcc; torch_musa knows only .mu/.muh device code.
        raise ValueError(
            f"{where}: {', '.join(cuda)}: .cu/.cuh are not MUSA sources; torch_musa compiles "
            "device code from .mu/.muh files only (port and rename them, e.g. with "
            "torchada.porting)"
        )


def _parse_arch_list(value: str) -> list[str]:
    archs: list[str] = []
    for arch in value.split(";"):
        arch = arch.strip()
        if not arch:
            continue
        if arch not in _SUPPORTED_ARCHS:
            raise ValueError(
                f"Unknown MUSA arch ({arch}) or GPU not supported; TORCH_MUSA_ARCH_LIST takes "
                f"';'-separated values from {', '.join(_SUPPORTED_ARCHS)}"
            )
        if arch not in archs:
            archs.append(arch)
    return archs


def _offload_archs(cflags: collections.abc.Sequence[str]) -> list[str]:
    """The archs of ``--offload-arch=mp_XX`` (or ``--offload-arch mp_XX``) flags, validated."""
    found: list[str] = []
    flags = list(cflags)
    for i, flag in enumerate(flags):
        if flag.startswith("--offload-arch="):
            value = flag.split("=", 1)[1]
        elif flag == "--offload-arch" and i + 1 < len(flags):
            value = flags[i + 1]
        else:
            continue
        arch = value.removeprefix("mp_")
        if arch not in _SUPPORTED_ARCHS:
            raise ValueError(
                f"Unknown MUSA arch ({value}) or GPU not supported; --offload-arch takes "
                f"mp_<arch> with <arch> one of {', '.join(_SUPPORTED_ARCHS)}"
            )
        found.append(arch)
    return found


def _visible_device_archs() -> list[str]:
    archs: list[str] = []
    if not _runtime_available():
        return archs
    for index in range(torch.musa.device_count()):
        major, minor = torch.musa.get_device_capability(index)
        arch = f"{major}{minor}"
        if arch not in archs:
            archs.append(arch)
    return archs


def _get_musa_arch_flags(cflags: collections.abc.Sequence[str] | None = None) -> list[str]:
    """The ``--offload-arch`` flags mcc would get; ``[]`` when ``cflags`` already choose."""
    if cflags and _offload_archs(cflags):
        return []
    env = os.environ.get("TORCH_MUSA_ARCH_LIST", "")
    if env.strip():
        archs = _parse_arch_list(env)
    else:
        archs = _visible_device_archs()
        warnings.warn(
            "TORCH_MUSA_ARCH_LIST is not set; building for the architectures of the visible MUSA "
            f"devices ({';'.join(archs) or 'none visible: the compiler default'}). Set "
            "TORCH_MUSA_ARCH_LIST (e.g. '21;22') to choose them.",
            stacklevel=2,
        )
    return [f"--offload-arch=mp_{arch}" for arch in archs]


def _check_musa_cflags(
    cflags: collections.abc.Sequence[str] | None, with_musa: bool | None = None
) -> None:
    # MUSA flags are never used (no device code gets compiled), but a bad arch is an error the
    # caller would hit on hardware, so it is reported here too. Host-only builds that pass no MUSA
    # flags are left alone, as torch_musa leaves them.
    if cflags or with_musa:
        # As for mcc: arch flags given in cflags take the place of TORCH_MUSA_ARCH_LIST.
        if not _offload_archs(cflags or []) and os.environ.get("TORCH_MUSA_ARCH_LIST", "").strip():
            _parse_arch_list(os.environ["TORCH_MUSA_ARCH_LIST"])
        _logger.debug("MUSA compiler flags %s unused: the simulator builds host code only", cflags)


@functools.cache
def _cxx_std() -> str:
    # torch_musa 2.7.1 compiles as C++17, the standard of the torch it pairs with. The simulator
    # runs on whatever torch is installed, whose headers may need a newer standard: take torch's.
    try:
        source = inspect.getsource(_cpp.BuildExtension.build_extensions)
    except (OSError, TypeError):
        return "c++17"
    years = [int(y) for y in re.findall(r"c\+\+(\d\d)\b", source)]
    return f"c++{max([17, *years])}"


def _append_std_if_missing(cflags: list[str]) -> None:
    if not any(flag.startswith("-std=") for flag in cflags):
        cflags.append(f"-std={_cxx_std()}")


def _existing(paths: collections.abc.Sequence[str]) -> list[str]:
    found = []
    for path in paths:
        if os.path.isdir(path):
            found.append(path)
        else:
            _logger.debug("skipping missing directory %s", path)
    return found


# torch_musa's C++ headers as far as the simulator implements them (streams, guards, checks, the
# runtime API subset), shipped as data beside this package.
_TORCH_MUSA_INCLUDE_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "share", "include"
)


def include_paths(musa: bool = False) -> list[str]:
    """Include directories for an extension: torch's and torch_musa's, plus the MUSA toolkit's with
    ``musa=True``.

    MUSA toolkit directories are listed only when they exist (the simulator needs none of them).
    """
    paths = list(_cpp.include_paths())
    paths.append(_TORCH_MUSA_INCLUDE_DIR)
    if musa:
        extra = []
        if MUSA_HOME:
            extra.append(os.path.join(MUSA_HOME, "include"))
        if MUDNN_HOME:
            extra.append(os.path.join(MUDNN_HOME, "include"))
        paths += [p for p in _existing(extra) if p not in paths]
    return paths


def library_paths(musa: bool = False) -> list[str]:
    """Library directories for an extension: torch's, plus the MUSA toolkit's with ``musa=True``.

    MUSA toolkit directories are listed only when they exist (the simulator needs none of them).
    """
    paths = list(_cpp.library_paths())
    if musa:
        extra = []
        if MUSA_HOME:
            extra.append(os.path.join(MUSA_HOME, "lib"))
        if MUDNN_HOME:
            extra.append(os.path.join(MUDNN_HOME, "lib"))
        paths += [p for p in _existing(extra) if p not in paths]
    return paths


def _check_compile_args(args: dict, name: str) -> None:
    unknown = sorted(set(args) - set(_COMPILE_ARG_KEYS))
    if unknown:
        # Only cxx flags reach a compiler here; an nvcc key usually means an unported setup.py.
        _logger.warning(
            "extension %s: extra_compile_args keys %s are ignored; torch_musa uses %s",
            name,
            unknown,
            ", ".join(_COMPILE_ARG_KEYS),
        )


def MUSAExtension(
    name: str, sources: collections.abc.Sequence[str], *args, **kwargs
) -> setuptools.Extension:
    """A :class:`setuptools.Extension` for a torch_musa extension, built by :class:`BuildExtension`.

    Adds torch's (and any existing MUSA toolkit) include and library directories, rpaths for them,
    and links ``c10``, ``torch``, ``torch_cpu`` and ``torch_python``. ``extra_compile_args`` may be
    a dict keyed by ``cxx``, ``mcc`` and ``mcc_dlink``. Sources must be host C++: the simulator
    refuses ``.mu``/``.muh`` files, having no MUSA compiler.
    """
    sources = list(sources)
    _refuse_device_sources(sources, f"MUSAExtension({name!r})")

    library_dirs = list(kwargs.get("library_dirs") or [])
    library_dirs += [p for p in library_paths(musa=True) if p not in library_dirs]
    kwargs["library_dirs"] = library_dirs
    runtime_dirs = list(kwargs.get("runtime_library_dirs") or [])
    kwargs["runtime_library_dirs"] = runtime_dirs + [
        p for p in library_dirs if p not in runtime_dirs
    ]

    libraries = list(kwargs.get("libraries") or [])
    libraries += [lib for lib in _TORCH_LIBRARIES if lib not in libraries]
    kwargs["libraries"] = libraries

    include_dirs = list(kwargs.get("include_dirs") or [])
    include_dirs += [p for p in include_paths(musa=True) if p not in include_dirs]
    kwargs["include_dirs"] = include_dirs

    compile_args = kwargs.get("extra_compile_args")
    if isinstance(compile_args, dict):
        compile_args = copy.deepcopy(compile_args)
        _check_compile_args(compile_args, name)
        _check_musa_cflags(compile_args.get("mcc"))
        kwargs["extra_compile_args"] = compile_args

    kwargs["language"] = "c++"
    return setuptools.Extension(name, sources, *args, **kwargs)


def _ensure_ninja() -> None:
    # The ninja wheel installs a binary torch cannot find unless its directory is on PATH.
    from torchada._build import NativeBuildError, _ensure_ninja_on_path

    try:
        _ensure_ninja_on_path()
    except NativeBuildError:
        pass  # torch reports a missing ninja itself


class BuildExtension(_cpp.BuildExtension):
    """torch's :class:`~torch.utils.cpp_extension.BuildExtension` for torch_musa extensions.

    ``use_ninja`` defaults to True, ``no_python_abi_suffix`` and :meth:`with_options` work as in
    torch. ``extra_compile_args`` dicts are keyed by ``cxx``, ``mcc`` and ``mcc_dlink``; ``-std=``
    is added to the C++ flags when missing. ``.mu``/``.muh`` sources are refused: the simulator has
    no MUSA compiler.
    """

    def __init__(self, *args, **kwargs) -> None:
        if kwargs.get("use_ninja", True):
            _ensure_ninja()
        super().__init__(*args, **kwargs)

    def build_extensions(self) -> None:
        for ext in self.extensions:
            _refuse_device_sources(ext.sources, f"extension {ext.name!r}")
            args = ext.extra_compile_args
            if isinstance(args, dict):
                _check_compile_args(args, ext.name)
                for key in _COMPILE_ARG_KEYS:
                    args.setdefault(key, [])
                _check_musa_cflags(args["mcc"])
                _append_std_if_missing(args["cxx"])
            else:
                if args is None:
                    args = ext.extra_compile_args = []
                _append_std_if_missing(args)
        super().build_extensions()


def _get_build_directory(name: str, verbose: bool) -> str:
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or _cpp.get_default_build_root()
    musa_version = str(torch.version.musa or "").replace(".", "")
    folder = f"py{sys.version_info.major}{sys.version_info.minor}_mu{musa_version}"
    build_directory = os.path.join(root, folder, name)
    if verbose:
        _logger.info("Using %s as the torch_musa extensions build directory", build_directory)
    os.makedirs(build_directory, exist_ok=True)
    return build_directory


def _musa_dirs_for(with_musa: bool | None) -> tuple[list[str], list[str]]:
    if not with_musa:
        return [], []
    _logger.info(
        "with_musa=True: no MUSA toolkit is simulated; building and linking host code only"
    )
    torch_includes = {*_cpp.include_paths(), _TORCH_MUSA_INCLUDE_DIR}
    torch_libs = set(_cpp.library_paths())
    includes = [p for p in include_paths(musa=True) if p not in torch_includes]
    ldflags = [f"-L{p}" for p in library_paths(musa=True) if p not in torch_libs]
    return includes, ldflags


def load(
    name: str,
    sources: str | collections.abc.Sequence[str],
    extra_cflags: list[str] | None = None,
    extra_musa_cflags: list[str] | None = None,
    extra_sycl_cflags: list[str] | None = None,
    extra_ldflags: list[str] | None = None,
    extra_include_paths: list[str] | None = None,
    build_directory: str | None = None,
    verbose: bool = False,
    with_musa: bool | None = None,
    with_sycl: bool | None = None,
    is_python_module: bool = True,
    is_standalone: bool = False,
    keep_intermediates: bool = True,
):
    """Build (JIT, with ninja) and import a host C++ extension.

    The build directory defaults to ``<root>/py<major><minor>_mu<musa version>/<name>`` with root
    ``$TORCH_EXTENSIONS_DIR`` or torch's default extensions root. ``.mu``/``.muh`` sources are
    refused (no MUSA compiler); ``extra_musa_cflags`` are checked but have nothing to compile.
    Returns what ``torch.utils.cpp_extension.load`` returns.
    """
    sources = [sources] if isinstance(sources, str) else list(sources)
    _refuse_device_sources(sources, f"load(name={name!r})")
    _check_musa_cflags(extra_musa_cflags, with_musa)
    musa_includes, musa_ldflags = _musa_dirs_for(with_musa)
    if build_directory is None:
        build_directory = _get_build_directory(name, verbose)
    # SYCL arguments are passed only when given, so a torch that predates them still works.
    sycl = {}
    if extra_sycl_cflags is not None:
        sycl["extra_sycl_cflags"] = extra_sycl_cflags
    if with_sycl is not None:
        sycl["with_sycl"] = with_sycl
    _ensure_ninja()
    return _cpp.load(
        name,
        sources,
        extra_cflags=extra_cflags,
        extra_cuda_cflags=None,
        extra_ldflags=list(extra_ldflags or []) + musa_ldflags,
        extra_include_paths=list(extra_include_paths or []) + musa_includes,
        build_directory=build_directory,
        verbose=verbose,
        with_cuda=False,
        is_python_module=is_python_module,
        is_standalone=is_standalone,
        keep_intermediates=keep_intermediates,
        **sycl,
    )


def _refuse_sycl(sources, cflags, with_sycl, where: str) -> None:
    # torch_musa compiles SYCL sources with a SYCL compiler; none is simulated.
    if isinstance(sources, str):
        sources = [sources]
    if with_sycl or cflags or (sources and any(str(s).strip() for s in sources)):
        raise RuntimeError(
            f"{where}: SYCL sources need a SYCL compiler, which this machine does not have"
        )


def load_inline(
    name: str,
    cpp_sources: str | collections.abc.Sequence[str],
    musa_sources: str | collections.abc.Sequence[str] | None = None,
    sycl_sources: str | collections.abc.Sequence[str] | None = None,
    functions: str | collections.abc.Sequence[str] | dict | None = None,
    extra_cflags: list[str] | None = None,
    extra_musa_cflags: list[str] | None = None,
    extra_sycl_cflags: list[str] | None = None,
    extra_ldflags: list[str] | None = None,
    extra_include_paths: list[str] | None = None,
    build_directory: str | None = None,
    verbose: bool = False,
    with_musa: bool | None = None,
    with_sycl: bool | None = None,
    is_python_module: bool = True,
    with_pytorch_error_handling: bool = True,
    keep_intermediates: bool = True,
    use_pch: bool = False,
):
    """Build (JIT) and import a host C++ extension from source strings, like :func:`load`.

    ``cpp_sources`` get ``#include <torch/extension.h>`` prepended and, with ``functions``, pybind11
    bindings generated. Non-empty ``musa_sources`` are refused: the simulator has no MUSA compiler.
    """
    if isinstance(musa_sources, str):
        musa_sources = [musa_sources]
    if musa_sources and any(str(s).strip() for s in musa_sources):
        raise _no_mcc_error("musa_sources (would be musa.mu)", f"load_inline(name={name!r})")
    _refuse_sycl(sycl_sources, extra_sycl_cflags, with_sycl, f"load_inline(name={name!r})")
    _check_musa_cflags(extra_musa_cflags, with_musa)
    musa_includes, musa_ldflags = _musa_dirs_for(with_musa)
    if build_directory is None:
        build_directory = _get_build_directory(name, verbose)
    # torch prepends its include to the list it is given: never let it edit the caller's.
    cpp_sources = [cpp_sources] if isinstance(cpp_sources, str) else list(cpp_sources)
    _ensure_ninja()
    return _cpp.load_inline(
        name,
        cpp_sources,
        cuda_sources=None,
        functions=functions,
        extra_cflags=extra_cflags,
        extra_cuda_cflags=None,
        extra_ldflags=list(extra_ldflags or []) + musa_ldflags,
        extra_include_paths=list(extra_include_paths or []) + musa_includes,
        build_directory=build_directory,
        verbose=verbose,
        with_cuda=False,
        is_python_module=is_python_module,
        with_pytorch_error_handling=with_pytorch_error_handling,
        keep_intermediates=keep_intermediates,
        use_pch=use_pch,
    )


# Only what torch_musa itself binds stays in the namespace.
del annotations  # noqa: F821
