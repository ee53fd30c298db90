"""``torch.backends.cuda`` and ``torch.backends.cudnn`` on MUSA (docs/backends.md has the table).

MUSA's counterparts are muBLAS/muDNN, whose only switch torch_musa exposes is
``torch.backends.mudnn.allow_tf32``: TF32 for matmuls and convolutions alike. TF32 flags follow
one rule:

* Reads are torch's own flags, exactly as on CUDA: ``cuda.matmul.allow_tf32`` is torch's cuBLAS
  flag (False by default, agreeing with ``torch.get_float32_matmul_precision()``, and raising
  torch's "mix of the legacy and new APIs" error where torch does), ``cudnn.allow_tf32`` torch's
  cuDNN flag (True by default), and the ``fp32_precision`` getters are torch's.
* Writes go through torch's own setter first (its type checks and ``disable_global_flags()``
  apply: cuDNN's flags are frozen, cuBLAS's and the precision API are not), then into muDNN's
  switch, past its own frozen property: ``allow_tf32=v`` sets it to v, ``fp32_precision`` "tf32"
  on, "ieee" off, "none" leaves it; ``torch.set_float32_matmul_precision`` "highest" off,
  "high"/"medium" on. One switch for matmuls and convolutions: the last write wins.
* At activation muDNN's switch follows torch's matmul flag (CUDA's default: no TF32 in
  matmuls), so that what a program reads is what its matmuls run; ``disable()`` puts muDNN's
  previous value back.

``torch.backends.cudnn`` answers ``is_available() -> True`` and ``version()`` with muDNN's
version; its other flags (enabled, benchmark, deterministic, ...) are torch's and keep their
values, but muDNN does not read them. Library choices with no MUSA meaning
(``preferred_linalg_library``, ``preferred_blas_library``, the cuFFT plan cache) are kept by
torchada so that programs setting them run; the cuBLAS workspace sizes raise
:class:`~torchada._cuda.redirect.UnsupportedCUDAAPIError`. The SDPA switches are torch's global ones
and need nothing.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
from typing import TYPE_CHECKING, Any

import torch
import torch.backends.cuda as _cuda_backends
from torch.backends import ContextProp

from .._core.warn import warn_once
from .._cuda.redirect import UnsupportedCUDAAPIError

if TYPE_CHECKING:
    from .._core.patcher import Patcher

# torch's cudnn module object (a PropModule); its class holds the properties.
_cudnn = torch.backends.cudnn
_CudnnModule = type(_cudnn)


def _mudnn() -> Any:
    return torch.backends.mudnn


def _get_tf32() -> bool:
    return bool(_mudnn().allow_tf32)


def _set_tf32(value: bool) -> None:
    # muDNN's switch itself, not its property: torch_musa's allow_tf32 is a ContextProp, frozen by
    # disable_global_flags() like cuDNN's flags, but CUDA never freezes cuBLAS's flags (and a
    # frozen cuDNN write was refused by torch's own property before it came here).
    prop = inspect.getattr_static(_mudnn(), "allow_tf32", None)
    if isinstance(prop, ContextProp):
        prop.setter(value)  # torch_musa checks the type, as torch does
    else:
        _mudnn().allow_tf32 = value


def _follow_precision(value: Any) -> None:
    # "tf32"/"ieee" say something about TF32; "none" (inherit) leaves muDNN as it is.
    if value == "tf32":
        _set_tf32(True)
    elif value == "ieee":
        _set_tf32(False)


def _matmul_tf32() -> bool:
    """Whether torch's flags let matmuls use TF32 (what CUDA's cuBLAS would do)."""
    try:
        return bool(torch._C._get_cublas_allow_tf32())
    except RuntimeError:
        # A mix of the legacy and new APIs (torch >= 2.9): the newer API's answer.
        return torch._C._get_fp32_precision_getter("cuda", "matmul") == "tf32"


class MusaBlasModule(_cuda_backends.cuBLASModule):
    """``torch.backends.cuda.matmul``: torch's flags, whose TF32 writes also set muDNN's switch."""

    def __setattr__(self, name: str, value: Any) -> None:
        result = super().__setattr__(name, value)  # torch's flag (and type check) first
        if name == "allow_tf32":
            _set_tf32(value)
        elif name == "fp32_precision":
            _follow_precision(value)
        return result


_MATMUL_PRECISION_TF32 = {"highest": False, "high": True, "medium": True}


def _float32_matmul_precision(original: Any) -> Any:
    @functools.wraps(original)
    def set_float32_matmul_precision(precision: str) -> None:
        original(precision)  # torch's flag; an unknown name only warns there, and changes nothing
        if precision in _MATMUL_PRECISION_TF32:
            _set_tf32(_MATMUL_PRECISION_TF32[precision])

    return set_float32_matmul_precision


class MusaFFTPlanCache:
    """One device's cuFFT plan cache. torch_musa has no muFFT plan-cache control: ``size`` is
    always 0, ``max_size`` is kept (so programs that tune it run) and ``clear()`` does nothing."""

    def __init__(self, device_index: int):
        self.device_index = device_index
        self._max_size = 4096  # CUDA's default capacity

    @property
    def size(self) -> int:
        return 0

    @size.setter
    def size(self, value: Any) -> None:
        raise RuntimeError(
            ".size is a read-only property showing the number of plans currently in the "
            "cache. To change the cache capacity, set cufft_plan_cache.max_size."
        )

    @property
    def max_size(self) -> int:
        return self._max_size

    @max_size.setter
    def max_size(self, value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise RuntimeError(
                f"cufft_plan_cache.max_size must be a non-negative int, got {value!r}"
            )
        self._max_size = value

    def clear(self) -> None:
        return None


class MusaFFTPlanCacheManager:
    """``torch.backends.cuda.cufft_plan_cache``: indexed by device, or used directly for the
    current device, as torch's is."""

    def __init__(self) -> None:
        object.__setattr__(self, "caches", {})

    def __getitem__(self, device: Any) -> MusaFFTPlanCache:
        index = _device_index(device)
        count = torch.musa.device_count()
        if index < 0 or index >= count:
            raise RuntimeError(
                f"cufft_plan_cache: expected 0 <= device index < {count}, but got "
                f"device with index {index}"
            )
        return self.caches.setdefault(index, MusaFFTPlanCache(index))

    def __getattr__(self, name: str) -> Any:
        return getattr(self[torch.musa.current_device()], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self[torch.musa.current_device()], name, value)


def _device_index(device: Any) -> int:
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    device = torch.device(device)
    if device.type not in ("cuda", torch._C._get_privateuse1_backend_name()):
        raise ValueError(f"Expected a cuda or musa device, but got: {device}")
    return device.index if device.index is not None else torch.musa.current_device()


_LINALG = {
    "default": torch._C._LinalgBackend.Default,
    "cusolver": torch._C._LinalgBackend.Cusolver,
    "magma": torch._C._LinalgBackend.Magma,
}
_BLAS = {
    name: getattr(torch._C._BlasBackend, member)
    for name, member in (
        ("default", "Default"),
        ("cublas", "Cublas"),
        ("hipblas", "Cublas"),
        ("cublaslt", "Cublaslt"),
        ("hipblaslt", "Cublaslt"),
        ("ck", "Ck"),
    )
    if hasattr(torch._C._BlasBackend, member)
}
# The choices programs made; torch's setters refuse cuSOLVER/MAGMA/cuBLASLt in a build without
# CUDA, and torch_musa's solvers and GEMMs do not consult them.
_choices: dict[str, Any] = {}


def _choose(kind: str, table: dict[str, Any], enum: type, backend: Any) -> Any:
    if backend is None:
        pass
    elif isinstance(backend, str):
        if backend not in table:
            raise RuntimeError(f"Unknown input value. Choose from: {', '.join(table)}.")
        _choices[kind] = table[backend]
    elif isinstance(backend, enum):
        _choices[kind] = backend
    else:
        raise RuntimeError("Unknown input value type.")
    return _choices[kind]


def preferred_linalg_library(
    backend: None | str | torch._C._LinalgBackend = None,
) -> torch._C._LinalgBackend:
    """Kept, not applied: torch_musa picks its linear-algebra library itself."""
    return _choose("linalg", _LINALG, torch._C._LinalgBackend, backend)


def preferred_blas_library(
    backend: None | str | torch._C._BlasBackend = None,
) -> torch._C._BlasBackend:
    """Kept, not applied: torch_musa's GEMMs use muBLAS whatever is chosen."""
    return _choose("blas", _BLAS, torch._C._BlasBackend, backend)


def _workspace_unsupported(name: str) -> Any:
    def unsupported(*args: Any, **kwargs: Any) -> int:
        raise UnsupportedCUDAAPIError(
            f"torch.backends.cuda.{name} is unsupported on MUSA: torch_musa manages muBLAS "
            "workspaces itself and exposes no size control. Instead, drop the call."
        )

    unsupported.__name__ = unsupported.__qualname__ = name
    return unsupported


class _DeterministicProp(ContextProp):
    """``cudnn.deterministic``: torch's flag, plus a warning that muDNN does not read it (warned
    from here so that the warning points at the assignment)."""

    def __set__(self, obj: Any, val: Any) -> None:
        super().__set__(obj, val)
        if val:
            warn_once(
                "cudnn.deterministic",
                "torch.backends.cudnn.deterministic has no effect on MUSA (muDNN has no such "
                "switch); use torch.use_deterministic_algorithms(True) for deterministic kernels",
            )


def _conv_precision() -> Any:
    class MusaFP32Precision(torch.backends._FP32Precision):
        """``torch.backends.cudnn.conv``: its ``fp32_precision`` also sets muDNN's switch."""

        def __setattr__(self, name: str, value: Any) -> None:
            super().__setattr__(name, value)
            if name == "fp32_precision":
                _follow_precision(value)

    return MusaFP32Precision("cuda", "conv")


def _set_cudnn_tf32(value: bool) -> None:
    torch._C._set_cudnn_allow_tf32(value)  # torch's flag (and type check) first
    _set_tf32(value)


def _set_cudnn_precision(value: str) -> None:
    torch._C._set_fp32_precision_setter("cuda", "all", value)
    _follow_precision(value)


def is_available() -> bool:
    """muDNN is part of torch_musa: always there."""
    return True


def version() -> int:
    """muDNN's version (not comparable with cuDNN's numbers)."""
    return int(_mudnn().version())


def is_acceptable(tensor: torch.Tensor) -> bool:
    """Whether muDNN can take ``tensor`` (torch's rule, for musa tensors)."""
    return (
        torch._C._get_cudnn_enabled()
        and tensor.device.type == torch._C._get_privateuse1_backend_name()
        and tensor.dtype in _cudnn.CUDNN_TENSOR_DTYPES
    )


def _cudnn_flags(original: Any) -> Any:
    # flags() also switches and restores muDNN's TF32, following its allow_tf32/fp32_precision.
    signature = inspect.signature(original)

    @functools.wraps(original)
    def flags(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()

        @contextlib.contextmanager
        def both() -> Any:
            before = _get_tf32()
            with original(*bound.args, **bound.kwargs):
                allow = bound.arguments.get("allow_tf32")
                if allow is not None:
                    _set_tf32(allow)
                _follow_precision(bound.arguments.get("fp32_precision"))
                try:
                    yield
                finally:
                    _set_tf32(before)

        return both()

    return flags


# torch modules that import CUDA-only names from torch._C at import time when is_built() is true
# (Inductor's CUDA graph trees: `_cuda_CUDAAllocator_AllocatorState`); this build has none, so
# while one of them is being imported it gets torch's own answer. Without that,
# torch.compiler.cudagraph_mark_step_begin(), torch._dynamo.reset() after a "reduce-overhead"
# compile, or a compiled optimizer step fail with ImportError.
_TORCH_CUDA_IMPORTERS = ("torch._inductor.cudagraph_trees",)
_original_is_built = _cuda_backends.is_built


def is_built() -> bool:
    """True: this PyTorch runs CUDA programs, on MUSA (torch's answer to the modules above)."""
    for name in _TORCH_CUDA_IMPORTERS:
        module = sys.modules.get(name)
        if module is not None and getattr(getattr(module, "__spec__", None), "_initializing", 0):
            return _original_is_built()
    return True


def _install_cuda(patcher: Any) -> None:
    patcher.set_attr(_cuda_backends, "is_built", is_built)
    patcher.set_attr(_cuda_backends, "matmul", MusaBlasModule())
    patcher.set_attr(_cuda_backends, "cufft_plan_cache", MusaFFTPlanCacheManager())
    _choices.setdefault("linalg", torch._C._get_linalg_preferred_backend())
    patcher.set_attr(_cuda_backends, "preferred_linalg_library", preferred_linalg_library)
    if hasattr(_cuda_backends, "preferred_blas_library"):
        _choices.setdefault("blas", torch._C._get_blas_preferred_backend())
        patcher.set_attr(_cuda_backends, "preferred_blas_library", preferred_blas_library)
    for name in ("cublas_workspace_size", "cublaslt_workspace_size", "blas_workspace_size"):
        if hasattr(_cuda_backends, name):
            patcher.set_attr(_cuda_backends, name, _workspace_unsupported(name))


def _install_cudnn(patcher: Any) -> None:
    cls = _CudnnModule
    patcher.set_attr(
        cls, "allow_tf32", ContextProp(torch._C._get_cudnn_allow_tf32, _set_cudnn_tf32)
    )
    patcher.set_attr(
        cls,
        "deterministic",
        _DeterministicProp(torch._C._get_cudnn_deterministic, torch._C._set_cudnn_deterministic),
    )
    if "fp32_precision" in cls.__dict__:  # torch >= 2.9's TF32 API
        patcher.set_attr(
            cls,
            "fp32_precision",
            ContextProp(
                lambda: torch._C._get_fp32_precision_getter("cuda", "all"), _set_cudnn_precision
            ),
        )
    if "conv" in cls.__dict__:
        patcher.set_attr(cls, "conv", _conv_precision())
    # Module-level functions: instance attributes shadow the wrapped module's.
    patcher.set_attr(_cudnn, "is_available", is_available)
    patcher.set_attr(_cudnn, "version", version)
    patcher.set_attr(_cudnn, "is_acceptable", is_acceptable)
    patcher.set_attr(_cudnn, "flags", _cudnn_flags(_cudnn.m.flags))


def _install_tf32(patcher: Any) -> None:
    patcher.set_attr(
        torch,
        "set_float32_matmul_precision",
        _float32_matmul_precision(torch.set_float32_matmul_precision),
    )
    # muDNN's one switch starts as torch's matmul flag: CUDA programs assume fp32 matmuls unless
    # they ask for TF32 (torch_musa's own default is TF32 on).
    before = _get_tf32()
    _set_tf32(_matmul_tf32())
    patcher.on_undo(lambda: _set_tf32(before))


def install(patcher: Patcher) -> None:
    _install_cuda(patcher)
    _install_cudnn(patcher)
    _install_tf32(patcher)
