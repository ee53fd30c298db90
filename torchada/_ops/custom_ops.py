"""Custom operators on MUSA: kernels registered for CUDA are registered for MUSA.

A dispatch key naming CUDA (``"CUDA"``, ``"AutogradCUDA"``, ``"AutocastCUDA"``,
``"SparseCUDA"``, ``"SparseCsrCUDA"``, ``"QuantizedCUDA"``, ``"NestedTensorCUDA"``) becomes its
PrivateUse1 counterpart wherever a ``torch.library.Library`` takes one (``Library(ns, kind,
dispatch_key)``, through ``torch._C._dispatch_library``; ``impl``, ``fallback``);
``torch.library.impl(qualname, "cuda")``, ``types=`` and ``register_kernel`` reach
``Library.impl`` with "CUDA" and are covered by it. A device type "cuda" becomes "musa" in
``CustomOpDef.register_kernel`` (so ``custom_op(..., device_types="cuda")`` too),
``set_kernel_enabled`` and ``register_autocast`` (the op's own and
``torch.library.register_autocast``, where torch takes device types other than cpu and cuda),
where torch keys kernels and casts by device type.
``register_fake`` and the other device-free registrations are untouched.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from typing import TYPE_CHECKING, Any

import torch
import torch.library
from torch._library import custom_ops

from .._core.torch_features import left_out
from .._devices.rule import musa_device_type

if TYPE_CHECKING:
    from .._core.patcher import Patcher

logger = logging.getLogger("torchada")


def _key_table() -> dict[str, str]:
    keys = set(torch._C.DispatchKey.__members__)
    table = {}
    for name in keys:
        if "CUDA" in name:
            musa = name.replace("CUDA", "PrivateUse1")
            if musa in keys:
                table[name] = musa
    return table


_KEYS = _key_table()
# (operator, MUSA key) pairs whose MUSA kernel was registered under a CUDA key.
_from_cuda: set[tuple[str, str]] = set()


def musa_dispatch_key(key: Any) -> Any:
    """``"CUDA"`` -> ``"PrivateUse1"``, ``"AutogradCUDA"`` -> ``"AutogradPrivateUse1"``, ...;
    a ``DispatchKey`` is translated the same way. Other keys are unchanged."""
    if isinstance(key, str):
        return _KEYS.get(key, key)
    if isinstance(key, torch._C.DispatchKey):
        name = _KEYS.get(key.name)
        return getattr(torch._C.DispatchKey, name) if name else key
    return key


def _patch_library(patcher: Any) -> None:
    cls = torch.library.Library
    impl, fallback = cls.impl, cls.fallback
    aoti = getattr(cls, "_impl_with_aoti_compile", None)
    dispatch_library = torch._C._dispatch_library

    # Library.__init__ records its caller's file and line for the dispatcher's messages: the
    # library's own key is translated below it, where the caller's location is an argument.
    @functools.wraps(dispatch_library)
    def _dispatch_library(kind: str, ns: str, dispatch_key: Any, *args: Any) -> Any:
        return dispatch_library(kind, ns, musa_dispatch_key(dispatch_key), *args)

    def key_for(self: Any, dispatch_key: Any) -> Any:
        # "" means the library's key, which the C++ library now holds translated.
        return musa_dispatch_key(dispatch_key if dispatch_key != "" else self.dispatch_key)

    def qualname(self: Any, op_name: Any) -> str:
        if isinstance(op_name, torch._ops.OpOverload):
            schema = op_name._schema
            name = f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name
        else:
            name = str(op_name)
        return name if "::" in name else f"{self.ns}::{name}"

    def has_own_musa_kernel(name: str, musa_key: Any) -> bool:
        # A kernel registered for MUSA other than through a CUDA key (torch_musa's, or a
        # library's own PrivateUse1 one, e.g. torch's FSDP ops registered for CUDA and
        # PrivateUse1 alike) is MUSA's real implementation: a CUDA kernel does not replace it.
        if (name, str(musa_key)) in _from_cuda:
            return False
        try:
            return torch._C._dispatch_has_kernel_for_dispatch_key(name, str(musa_key))
        except RuntimeError:
            return False

    @functools.wraps(impl)
    def impl_(self: Any, op_name: Any, fn: Any, dispatch_key: Any = "", **kwargs: Any) -> Any:
        if getattr(_cuda_keys_kept, "on", False):
            return impl(self, op_name, fn, dispatch_key, **kwargs)
        key = dispatch_key if dispatch_key != "" else self.dispatch_key
        musa_key = musa_dispatch_key(key)
        if musa_key == key:
            if str(key) in _KEYS.values():
                _from_cuda.discard((qualname(self, op_name), str(key)))
            return impl(self, op_name, fn, key, **kwargs)
        name = qualname(self, op_name)
        if has_own_musa_kernel(name, musa_key):
            logger.debug("%s kernel of %s not registered for MUSA: it has its own", key, name)
            return None
        result = impl(self, op_name, fn, musa_key, **kwargs)
        _from_cuda.add((name, str(musa_key)))
        return result

    @functools.wraps(fallback)
    def fallback_(self: Any, fn: Any, dispatch_key: Any = "", **kwargs: Any) -> Any:
        return fallback(self, fn, key_for(self, dispatch_key), **kwargs)

    patcher.set_attr(torch._C, "_dispatch_library", _dispatch_library)
    patcher.set_attr(cls, "impl", impl_)
    patcher.set_attr(cls, "fallback", fallback_)
    if aoti is not None:

        @functools.wraps(aoti)
        def impl_with_aoti_compile(self: Any, op_name: Any, dispatch_key: Any = "") -> Any:
            return aoti(self, op_name, key_for(self, dispatch_key))

        patcher.set_attr(cls, "_impl_with_aoti_compile", impl_with_aoti_compile)


def _patch_custom_op_def(patcher: Any) -> None:
    cls = custom_ops.CustomOpDef
    register_kernel = cls.register_kernel
    backend = torch._C._get_privateuse1_backend_name()

    @functools.wraps(register_kernel)
    def register_kernel_(self: Any, device_types: Any, fn: Any = None, /) -> Any:
        if device_types is None:
            return register_kernel(self, device_types, fn)
        named = [device_types] if isinstance(device_types, str) else list(device_types)
        explicit = self.__dict__.setdefault("_torchada_musa_kernel", [False])
        if backend in named:
            explicit[0] = True
        elif explicit[0] and "cuda" in named:
            # A kernel registered for musa by name is MUSA's own: a CUDA one does not replace it.
            named = [d for d in named if d != "cuda"]
            if not named:
                return fn if fn is not None else (lambda f: f)
        translated = [musa_device_type(d) for d in named]
        return register_kernel(
            self, translated[0] if isinstance(device_types, str) else translated, fn
        )

    patcher.set_attr(cls, "register_kernel", register_kernel_)
    # Methods taking the device type first (set_kernel_enabled, register_autocast), where torch
    # has them.
    for name in ("set_kernel_enabled", "register_autocast"):
        method = getattr(cls, name, None)
        if name == "register_autocast" and method is not None and not autocast_any_device():
            patcher.set_attr(cls, name, _autocast_left_out(method))
        elif method is not None:
            patcher.set_attr(cls, name, _device_type_first(method))


def autocast_any_device() -> bool:
    """Whether this torch's ``register_autocast`` takes any device type with an autocast key
    (it derives the key with ``torch._C._dispatch_key_for_device``); before, only cpu and cuda."""
    method = inspect.unwrap(custom_ops.CustomOpDef.register_autocast)  # under torchada's wrapper
    code = getattr(method, "__code__", None)
    return code is not None and "_dispatch_key_for_device" in code.co_names


_cuda_keys_kept = threading.local()


def _autocast_left_out(register_autocast: Any) -> Any:
    """Where torch's ``register_autocast`` takes only cpu and cuda, the rule stays CUDA's: its
    AutocastCUDA kernel is not moved to MUSA's key (its guard excludes only AutocastCUDA and it
    casts only 'cuda' tensors, so there it would call itself without end)."""
    left_out(
        "custom ops' register_autocast for cuda on MUSA",
        "register_autocast for device types other than cpu and cuda",
        "a custom op's autocast rule registered for 'cuda' does not apply under autocast on MUSA",
    )

    @functools.wraps(register_autocast)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kept, _cuda_keys_kept.on = getattr(_cuda_keys_kept, "on", False), True
        try:
            return register_autocast(*args, **kwargs)
        finally:
            _cuda_keys_kept.on = kept

    return wrapper


def _device_type_first(method: Any) -> Any:
    """Wraps ``method(self, device_type, ...)`` so that "cuda" is read as musa."""

    @functools.wraps(method)
    def wrapper(self: Any, device_type: Any, *args: Any, **kwargs: Any) -> Any:
        return method(self, musa_device_type(device_type), *args, **kwargs)

    return wrapper


def _patch_register_autocast(patcher: Any) -> None:
    original = getattr(torch.library, "register_autocast", None)
    if original is None:
        return
    if not autocast_any_device():
        patcher.set_attr(torch.library, "register_autocast", _autocast_left_out(original))
        return

    @functools.wraps(original)
    def register_autocast(op: Any, device_type: str, cast_inputs: Any, /, **kwargs: Any) -> Any:
        return original(op, musa_device_type(device_type), cast_inputs, **kwargs)

    patcher.set_attr(torch.library, "register_autocast", register_autocast)


def install(patcher: Patcher) -> None:
    _patch_library(patcher)
    _patch_custom_op_def(patcher)
    _patch_register_autocast(patcher)
