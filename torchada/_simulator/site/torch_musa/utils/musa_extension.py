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
import os
import shutil
import sys
import warnings

import setuptools
import torch
from torch.utils import cpp_extension as _cpp

import torch_musa  # noqa: F401
from torchada._simulator import extension_support as _ext
from torchada._simulator import state as _state

# What torch_musa decodes subprocess output with: the locale's encoding.
SUBPROCESS_DECODE_ARGS = ()


def get_cxx_compiler():
    """The host C++ compiler: $CXX, else ``c++``."""
    return os.environ.get("CXX", "c++")


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
    if home and not _ext.runtime_available():
        print(f"No MUSA runtime is found, using MUSA_HOME='{home}'")
    return home


RERUN_CMAKE = False
install_requires = ["packaging"]
MUSA_HOME = _find_musa_home()
MUDNN_HOME = _ext.find_mudnn_home()
_HERE = os.path.abspath(__file__)
_TORCH_MUSA_PATH = os.path.dirname(os.path.dirname(_HERE))
# torch_musa's own shared libraries (libmusa_python, libmusa_kernels) live here. The simulator has
# none to link: the directory exists and is empty of libraries (see its README.md).
TORCH_MUSA_LIB_PATH = os.path.join(_TORCH_MUSA_PATH, "lib")


def _get_musa_arch_flags(cflags: collections.abc.Sequence[str] | None = None) -> list[str]:
    """The ``--offload-arch`` flags mcc would get; ``[]`` when ``cflags`` already choose."""
    if cflags and _ext.offload_archs(cflags):
        return []
    env = os.environ.get("TORCH_MUSA_ARCH_LIST", "")
    if env.strip():
        archs = _ext.parse_arch_list(env)
    else:
        archs = _ext.visible_device_archs()
        warnings.warn(
            "TORCH_MUSA_ARCH_LIST is not set; building for the architectures of the visible MUSA "
            f"devices ({';'.join(archs) or 'none visible: the compiler default'}). Set "
            "TORCH_MUSA_ARCH_LIST (e.g. '21;22') to choose them.",
            stacklevel=2,
        )
    return [f"--offload-arch=mp_{arch}" for arch in archs]


def include_paths(musa: bool = False) -> list[str]:
    """Include directories for an extension: torch's and torch_musa's, plus the MUSA toolkit's with
    ``musa=True``.

    MUSA toolkit directories are listed only when they exist (the simulator needs none of them).
    """
    paths = list(_cpp.include_paths())
    paths += _ext.torch_musa_include_dirs()
    if musa:
        extra = []
        if MUSA_HOME:
            extra.append(os.path.join(MUSA_HOME, "include"))
        if MUDNN_HOME:
            extra.append(os.path.join(MUDNN_HOME, "include"))
        paths += [p for p in _ext.existing(extra) if p not in paths]
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
        paths += [p for p in _ext.existing(extra) if p not in paths]
    return paths


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
    _ext.refuse_device_sources(sources, f"MUSAExtension({name!r})")

    library_dirs = list(kwargs.get("library_dirs") or [])
    library_dirs += [p for p in library_paths(musa=True) if p not in library_dirs]
    kwargs["library_dirs"] = library_dirs
    runtime_dirs = list(kwargs.get("runtime_library_dirs") or [])
    kwargs["runtime_library_dirs"] = runtime_dirs + [
        p for p in library_dirs if p not in runtime_dirs
    ]

    libraries = list(kwargs.get("libraries") or [])
    libraries += [lib for lib in _ext.TORCH_LIBRARIES if lib not in libraries]
    kwargs["libraries"] = libraries

    include_dirs = list(kwargs.get("include_dirs") or [])
    include_dirs += [p for p in include_paths(musa=True) if p not in include_dirs]
    kwargs["include_dirs"] = include_dirs

    compile_args = kwargs.get("extra_compile_args")
    if isinstance(compile_args, dict):
        compile_args = copy.deepcopy(compile_args)
        _ext.check_compile_args(compile_args, name)
        _ext.check_musa_cflags(compile_args.get("mcc"))
        kwargs["extra_compile_args"] = compile_args

    if _state.config.facts["musa_versions_json"]:
        define_macros = list(kwargs.get("define_macros") or [])
        kwargs["define_macros"] = define_macros + _ext.musa_version_macros(
            os.path.dirname(torch_musa.__file__)
        )

    kwargs["language"] = "c++"
    return setuptools.Extension(name, sources, *args, **kwargs)


# Flags every mcc compilation gets; torch_musa's list is empty (MUSA has half and bfloat16
# operators, so CUDA's -D__CUDA_NO_HALF_OPERATORS__ family has no counterpart).
COMMON_MCC_FLAGS = []


class BuildExtension(_cpp.BuildExtension):
    """torch's :class:`~torch.utils.cpp_extension.BuildExtension` for torch_musa extensions.

    ``use_ninja`` defaults to True, ``no_python_abi_suffix`` and :meth:`with_options` work as in
    torch. ``extra_compile_args`` dicts are keyed by ``cxx``, ``mcc`` and ``mcc_dlink``; ``-std=``
    is added to the C++ flags when missing. ``.mu``/``.muh`` sources are refused: the simulator has
    no MUSA compiler.
    """

    def __init__(self, *args, **kwargs) -> None:
        if kwargs.get("use_ninja", True):
            _ext.ensure_ninja()
        super().__init__(*args, **kwargs)

    def build_extensions(self) -> None:
        for ext in self.extensions:
            _ext.refuse_device_sources(ext.sources, f"extension {ext.name!r}")
            args = ext.extra_compile_args
            if isinstance(args, dict):
                _ext.check_compile_args(args, ext.name)
                for key in _ext.COMPILE_ARG_KEYS:
                    args.setdefault(key, [])
                _ext.check_musa_cflags(args["mcc"])
                _ext.append_std_if_missing(args["cxx"])
            else:
                if args is None:
                    args = ext.extra_compile_args = []
                _ext.append_std_if_missing(args)
        super().build_extensions()


def _get_build_directory(name: str, verbose: bool) -> str:
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or _cpp.get_default_build_root()
    musa_version = str(torch.version.musa or "").replace(".", "")
    folder = f"py{sys.version_info.major}{sys.version_info.minor}_mu{musa_version}"
    build_directory = os.path.join(root, folder, name)
    if verbose:
        _ext.logger.info("Using %s as the torch_musa extensions build directory", build_directory)
    os.makedirs(build_directory, exist_ok=True)
    return build_directory


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
    _ext.refuse_device_sources(sources, f"load(name={name!r})")
    _ext.check_musa_cflags(extra_musa_cflags, with_musa)
    musa_includes, musa_ldflags = _ext.musa_dirs_for(with_musa, include_paths, library_paths)
    if build_directory is None:
        build_directory = _get_build_directory(name, verbose)
    # SYCL arguments are passed only when given, so a torch that predates them still works.
    sycl = {}
    if extra_sycl_cflags is not None:
        sycl["extra_sycl_cflags"] = extra_sycl_cflags
    if with_sycl is not None:
        sycl["with_sycl"] = with_sycl
    _ext.ensure_ninja()
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
        raise _ext.no_mcc_error("musa_sources (would be musa.mu)", f"load_inline(name={name!r})")
    _ext.refuse_sycl(sycl_sources, extra_sycl_cflags, with_sycl, f"load_inline(name={name!r})")
    _ext.check_musa_cflags(extra_musa_cflags, with_musa)
    musa_includes, musa_ldflags = _ext.musa_dirs_for(with_musa, include_paths, library_paths)
    if build_directory is None:
        build_directory = _get_build_directory(name, verbose)
    # torch prepends its include to the list it is given: never let it edit the caller's.
    cpp_sources = [cpp_sources] if isinstance(cpp_sources, str) else list(cpp_sources)
    _ext.ensure_ninja()
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
