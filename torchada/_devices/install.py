"""Device translation: every "cuda" device a CUDA program names produces musa tensors on MUSA.

``torch.empty(8, device="cuda")``, ``x.cuda(1)``, ``x.to("cuda:1")``, ``model.cuda()``,
``with torch.device("cuda")``, ``torch.Generator("cuda")``, ``torch.UntypedStorage(n,
device="cuda")``, ``torch.load(..., map_location="cuda")``: a ``cuda[:N]`` device is read as
``musa[:N]``. Anything else is left to torch, so malformed devices fail exactly as the same device
spelled with "musa" would, with a message naming what the user wrote.

Identity: a CUDA program's own checks hold. ``tensor.is_cuda`` is True for musa tensors, and
``torch.device("cuda:N")`` compares equal to (and hashes like) ``musa:N`` both ways, so ``assert
t.device == device`` and dicts keyed by devices work; ``tensor.device.type`` still says "musa"
(code that must know the backend asks it). Both are done in torch's C type slots by the native
library, at native cost; ``TORCHADA_CUDA_IS_MUSA=0`` keeps torch's answers. On the Python path
``is_cuda`` is a (slower) property and devices compare as torch compares them. Fake tensors
(``torch.compile``, ``FakeTensorMode``) made on "cuda" sit on musa, as eager tensors do.
:func:`translate_device` gives the musa device a CUDA spec means.

Two implementations, chosen once per process by :func:`install`:

* native (``csrc/torchada_native``, the default): CUDA-key kernels for ``empty.memory_format`` and
  ``empty_strided`` (every factory, ``*_like``, ``new_*`` and ``.to()`` allocate through them), a
  boxed kernel for the factories with backend-specific kernels (registered per operator, and as
  the CUDA fallback when the device initialises, for operators registered since), and a CUDA
  device guard delegating to MUSA's. Factories and ``torch.device`` stay torch's own C
  functions. So that ``x.to("cuda")`` returns ``x`` when it is already there (torch decides by
  comparing devices), the device is read as "musa" before torch sees it: torch_musa's Python
  ``Tensor.to`` is kept and the C ``to`` it ends with is swapped for a C function that translates
  first (without such a wrapper, ``Tensor.to`` becomes a C method doing the same). Registered
  at most once per process, only in a PyTorch without CUDA; :func:`torchada.disable` makes them
  inert: kernels then raise torch's NotImplementedError ("Could not run ... 'CUDA' backend"), the
  guard torch's "not linked with support for cuda devices", as without torchada. Known
  difference: ``torch.as_tensor(t, device="cuda")`` of a musa tensor copies it (torch compares
  devices inside, out of reach).
* Python fallback (no compiler, a failed build, or ``TORCHADA_NATIVE=0``): Python wrappers that
  translate the ``device`` keyword of every factory in
  ``torch.utils._device._device_constructors()``, of ``torch.*_like`` and ``torch.normal``, and of
  the ``Tensor.new_*`` methods, plus a Python ``Tensor.to``. Each costs a Python call on every use,
  CPU ones included.

Both paths also patch, in Python: ``Tensor.cuda`` (an int is a MUSA index; a musa device is
accepted), ``torch.Generator`` (a subclass whose calls return plain generators and whose
isinstance checks accept them), ``UntypedStorage.__new__`` and ``_StorageBase.to`` (so storages'
``.cuda()``/``.to("cuda")`` work), ``torch.utils._device.DeviceContext`` (``with
torch.device("cuda")`` and ``torch.set_default_device("cuda")`` record the musa device), and
register a ``torch.serialization`` deserializer that loads "cuda[:N]" locations (checkpoints
written on NVIDIA machines, ``map_location="cuda:1"``, ``{"cuda:0": "cuda:1"}``) onto musa[:N].
``Module.cuda``/``Module.to`` need nothing: they call ``Tensor.cuda``/``Tensor.to``.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

import torch

from .._core.after_import import on_device_init, on_import
from .._core.env import flag
from .._core.torch_features import left_out
from .._core.warn import log_once
from .._native import library as _native
from . import rule
from .rule import call_translated, cuda_to_musa, musa

if TYPE_CHECKING:
    from .._core.patcher import Patcher

logger = logging.getLogger("torchada")

CUDA_IS_MUSA_ENV = "TORCHADA_CUDA_IS_MUSA"

_path: Optional[str] = None
_state: Dict[str, Any] = {"patcher": None}
_identity = {"on": False}  # for patches made when a torch module is imported


def path() -> Optional[str]:
    """Which implementation serves "cuda" devices: "native", "python", or None when off."""
    return _path


# ---------------------------------------------------------------- wrappers (both paths)
def _make_tensor_cuda(c_to: Callable) -> Callable:
    preserve = torch.preserve_format
    backend = rule.device_type()

    def cuda(self, device=None, non_blocking=False, memory_format=preserve):
        if device is None:
            dev = musa(None)  # torch fills in the current device and aliases when already there
        elif device.__class__ is int:
            dev = musa(device)  # torch.device raises for negative indices, as torch's .cuda() does
        else:
            dev = cuda_to_musa(device)
            if dev is None:
                dev = torch.device(device)
                if dev.type != backend:  # a musa device (e.g. another tensor's) is the same GPU
                    raise RuntimeError("Invalid device, must be cuda device")
        if device is None:
            return c_to(self, dev, non_blocking=non_blocking, memory_format=memory_format)
        user = f"cuda:{device}" if device.__class__ is int else device
        return call_translated(
            c_to,
            (self, dev),
            {"non_blocking": non_blocking, "memory_format": memory_format},
            user,
            dev,
        )

    cuda.__doc__ = torch._C.TensorBase.cuda.__doc__
    return cuda


def _make_python_tensor_to(previous: Callable) -> Callable:
    device_type = torch.device

    def to(self, *args, **kwargs):
        if args:
            spec = args[0]
            if spec.__class__ is device_type or isinstance(spec, str):
                dev = cuda_to_musa(spec)
                if dev is not None:
                    return call_translated(previous, (self, dev) + args[1:], kwargs, spec, dev)
        if kwargs:
            return _call_with_device_kwarg(previous, (self,) + args, kwargs)
        return previous(self, *args, **kwargs)

    to.__doc__ = getattr(previous, "__doc__", None)
    return to


def _make_generator_class() -> type:
    base = torch._C.Generator

    class _GeneratorMeta(type(base)):  # type: ignore[misc]
        # Calls return torch's own generators; isinstance/issubclass accept them.
        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            user = args[0] if args else kwargs.get("device")
            dev = cuda_to_musa(user)
            if dev is None:
                return base(*args, **kwargs)
            if args:
                args = (dev,) + args[1:]
            else:
                kwargs["device"] = dev
            return call_translated(base, args, kwargs, user, dev)

        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, base)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, base)

    return _GeneratorMeta(
        "Generator", (base,), {"__module__": "torch", "__doc__": base.__doc__, "__slots__": ()}
    )


def _install_common(patcher: Any, native: Any) -> None:
    import torch.serialization
    import torch.storage
    import torch.utils._device

    c_to = torch._C.TensorBase.to
    previous_to = torch.Tensor.to
    wrapped = previous_to is not c_to and getattr(torch.Tensor, "orig_to", None) is c_to
    if native is not None and wrapped:
        # torch_musa's Tensor.to (Python) ends in Tensor.orig_to, torch's C method: that call
        # reads "cuda" as "musa", and torch_musa's wrapper stays as it is.
        patcher.set_attr(torch.Tensor, "orig_to", native.make_tensor_to(torch._C.TensorBase, c_to))
    elif native is not None:
        patcher.set_attr(
            torch.Tensor, "to", native.make_tensor_to(torch._C.TensorBase, previous_to)
        )
    else:
        patcher.set_attr(torch.Tensor, "to", _make_python_tensor_to(previous_to))
    patcher.set_attr(torch.Tensor, "cuda", _make_tensor_cuda(c_to))

    patcher.set_attr(torch, "Generator", _make_generator_class())

    storage_new = _wrap_device_kwarg(torch._C.StorageBase.__new__)
    patcher.set_attr(torch.UntypedStorage, "__new__", staticmethod(storage_new))

    storage_to = torch.storage._StorageBase.to

    def storage_to_translated(self, *, device, non_blocking=False):
        dev = cuda_to_musa(device)
        return storage_to(self, device=device if dev is None else dev, non_blocking=non_blocking)

    storage_to_translated.__doc__ = storage_to.__doc__
    # _StorageBase.cuda() builds torch.device("cuda", n) and calls .to(); TypedStorage defers here.
    patcher.set_attr(torch.storage._StorageBase, "to", storage_to_translated)

    context_cls = torch.utils._device.DeviceContext
    context_init = context_cls.__init__

    def device_context_init(self, device):
        dev = cuda_to_musa(device)
        context_init(self, device if dev is None else dev)

    patcher.set_attr(context_cls, "__init__", device_context_init)

    _register_deserializer(patcher)

    _install_in_place_moves(patcher)
    _state["patcher"] = patcher
    patcher.on_undo(lambda: _state.update(patcher=None))
    on_import("torch._subclasses.fake_tensor", _patch_fake_devices, _state)


# Device types whose strided tensors torch lets share a TensorImpl type (c10's TensorImpl::
# has_compatible_shallow_copy_type); the MUSA backend joins them.
_DENSE_TYPES = frozenset(("cpu", "cuda", "mps", "hip", "xpu", "hpu", "mtia"))


def _install_in_place_moves(patcher: Any) -> None:
    """``model.cuda()`` keeps the model's Parameter objects, as on CUDA.

    torch replaces a parameter's data in place only between backends it knows share a tensor
    type (CPU, CUDA, ...); for PrivateUse1 it makes new Parameters unless the backend says
    otherwise, and torch_musa does not. Then an optimizer made before ``.cuda()`` (or by
    ``accelerate``'s ``prepare``) holds the old CPU parameters and silently trains nothing.
    """
    dense = _DENSE_TYPES | {rule.device_type()}
    backend = rule.device_type()

    def has_compatible_shallow_copy_type(self: Any, other: Any) -> bool:
        kinds = (self.device.type, other.device.type)
        if backend in kinds and kinds[0] in dense and kinds[1] in dense:
            return self.layout == torch.strided and other.layout == torch.strided
        return torch._C._dispatch_keys(self) == torch._C._dispatch_keys(other)

    try:
        library = torch.library.Library("aten", "IMPL", "PrivateUse1")
        library.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type)
    except RuntimeError as err:  # the backend registered its own: it decides
        logger.debug("torchada: %s keeps its _has_compatible_shallow_copy_type (%s)", backend, err)
        return
    patcher.on_undo(library._destroy)


def _patch_fake_devices(fake_tensor: Any) -> None:
    """Fake tensors (``torch.compile``, ``FakeTensorMode``, meta-device tracing) get the device
    eager code would allocate on: tracing never reaches the allocation kernels that read "cuda"
    as "musa", so a fake ``torch.ones(3, device="cuda")`` would sit on "cuda" beside musa inputs
    ("Tensor device mismatch"). Every fake tensor's device passes through this normaliser."""
    cls = fake_tensor.FakeTensor
    normalize = cls.__dict__.get("_normalize_fake_device")
    if not isinstance(normalize, staticmethod):
        left_out(
            "'cuda' fake tensors on the MUSA device",
            "FakeTensor._normalize_fake_device",
            f"compiled code that creates tensors on 'cuda' may see them on 'cuda' rather than "
            f"'{rule.device_type()}'",
        )
        return
    original = normalize.__func__

    def normalize_fake_device(device: Any) -> Any:
        dev = cuda_to_musa(device)
        return original(device if dev is None else dev)

    normalize_fake_device.__doc__ = original.__doc__
    _state["patcher"].set_attr(cls, "_normalize_fake_device", staticmethod(normalize_fake_device))


def cuda_is_musa() -> bool:
    """Whether ``tensor.is_cuda`` answers True for musa tensors now (torchada on, and
    ``TORCHADA_CUDA_IS_MUSA`` not 0); code that computes ``is_cuda`` itself (Dynamo) asks this."""
    return _identity["on"]


def _install_identity(patcher: Any, native: Any) -> None:
    """``tensor.is_cuda`` on musa tensors and ``torch.device("cuda:N") == musa:N``, unless
    ``TORCHADA_CUDA_IS_MUSA=0`` keeps torch's answers."""
    if not flag(CUDA_IS_MUSA_ENV, default=True):
        return
    _identity["on"] = True
    patcher.on_undo(lambda: _identity.update(on=False))
    if native is not None:
        # In torch's type slots: native cost, CPU tensors included.
        native.set_cuda_is_musa(True)
        patcher.on_undo(lambda: native.set_cuda_is_musa(False))
        return
    log_once(
        "identity:python",
        "torchada: without the native library torch.device('cuda:N') does not compare equal to "
        "'%s:N' and tensor.is_cuda is a Python property (slower); set %s=0 to keep torch's "
        "is_cuda",
        rule.device_type(),
        CUDA_IS_MUSA_ENV,
    )
    base_is_cuda = torch._C.TensorBase.is_cuda.__get__
    backend = rule.device_type()

    def is_cuda(self) -> bool:
        return base_is_cuda(self) or self.device.type == backend

    patcher.set_attr(torch.Tensor, "is_cuda", property(is_cuda, doc="True on CUDA or MUSA"))


# ---------------------------------------------------------------- torch.load
def restore_cuda_location(storage: Any, location: str) -> Any:
    """Deserializer for "cuda[:N]" locations: checkpoints written on NVIDIA machines, and
    ``map_location`` strings, devices and dicts naming CUDA devices, load onto musa[:N]."""
    if not isinstance(location, str) or not location.startswith("cuda"):
        return None
    dev = cuda_to_musa(location)
    if dev is None:
        # "cuda0", "cudax": torch's CUDA deserializer claims every "cuda..." location and parses
        # it as a device, which raises "Invalid device string"; so does this.
        torch.device(location)
        return None
    backend = rule.device_type()
    module = getattr(torch, backend)
    index = dev.index if dev.index is not None else module.current_device()
    count = module.device_count()
    if index >= count:
        raise RuntimeError(
            f"Attempting to deserialize object on CUDA device {index} (location '{location}', "
            f"which torchada maps to '{backend}:{index}') but torch.{backend}.device_count() is "
            f"{count}. Please use torch.load with map_location to map your storages to an "
            "existing device."
        )
    return storage.to(device=musa(index))


def _no_tag(storage: Any) -> None:
    return None  # saving keeps torch's tags: musa tensors are saved as "musa:N"


def register_serialization_package(
    patcher: Any, priority: Callable[[List[Any]], float], tagger: Callable, deserializer: Callable
) -> None:
    """Add a tagger/deserializer pair to torch.serialization's registry, undone with torchada.
    ``priority`` picks the entry's place from the registry's current priorities; it must pick
    one no entry has (equal priorities would make the registry's sort compare functions).

    Example::

        >>> register_serialization_package(  # doctest: +SKIP
        ...     patcher, lambda taken: min(taken) - 1, tagger, deserializer
        ... )
    """
    import torch.serialization

    registry = torch.serialization._package_registry
    entry = (priority([item[0] for item in registry]), tagger, deserializer)
    torch.serialization.register_package(*entry)

    def unregister() -> None:
        for i, item in enumerate(registry):
            if item is entry or item == entry:
                del registry[i]
                break

    patcher.on_undo(unregister)


def _register_deserializer(patcher: Any) -> None:
    # Ahead of torch's CUDA deserializer (priority 20), on a free slot.
    def priority(taken: List[Any]) -> float:
        return next((p for p in range(19, 10, -1) if p not in taken), 19.5)

    register_serialization_package(patcher, priority, _no_tag, restore_cuda_location)


# ---------------------------------------------------------------- Python fallback
_LIKE_FACTORIES = (
    "empty_like",
    "zeros_like",
    "ones_like",
    "full_like",
    "rand_like",
    "randn_like",
    "randint_like",
    "normal",
)
_NEW_METHODS = ("new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full", "new_tensor")


def _call_with_device_kwarg(fn: Callable, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)`` with a CUDA ``device=`` keyword read as the MUSA device."""
    spec = kwargs.get("device")
    if spec is not None:
        dev = cuda_to_musa(spec)
        if dev is not None:
            kwargs["device"] = dev
            return call_translated(fn, args, kwargs, spec, dev)
    return fn(*args, **kwargs)


def _wrap_device_kwarg(fn: Callable) -> Callable:
    def wrapper(*args, **kwargs):
        if kwargs:
            return _call_with_device_kwarg(fn, args, kwargs)
        return fn(*args, **kwargs)

    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(fn, attr))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    wrapper.__torchada_devices__ = True  # type: ignore[attr-defined]
    return wrapper


def _unwrapped(obj: Any) -> Any:
    # Only our wrappers (plain functions): a getattr on torch.ops would create that namespace.
    if inspect.isfunction(obj) and getattr(obj, "__torchada_devices__", False):
        return obj.__wrapped__
    return obj


def fallback_targets() -> Dict[str, Tuple[Any, str]]:
    """What the Python fallback wraps: ``{"torch.empty": (torch, "empty"), ...}``."""
    import torch.fft
    import torch.nested
    import torch.utils._device

    # Read torch's constructor set before anything is wrapped: it is cached on first use and the
    # device context compares against these very objects.
    constructors = {id(fn) for fn in torch.utils._device._device_constructors()}
    targets: Dict[str, Tuple[Any, str]] = {}
    for module in (torch, torch.fft, torch.nested):
        for name in dir(module):
            if id(_unwrapped(getattr(module, name, None))) in constructors:
                targets[f"{module.__name__}.{name}"] = (module, name)
    for name in _LIKE_FACTORIES:
        if hasattr(torch, name):
            targets[f"torch.{name}"] = (torch, name)
    for name in _NEW_METHODS:
        targets[f"torch.Tensor.{name}"] = (torch.Tensor, name)
    return targets


def _install_fallback(patcher: Any) -> None:
    for _, (owner, name) in sorted(fallback_targets().items()):
        original = getattr(owner, name)
        patcher.set_attr(owner, name, _wrap_device_kwarg(original))


# ---------------------------------------------------------------- install
def _native_blocker(native: Any) -> str:
    if native.device_translation_registered():
        return ""
    if getattr(torch.version, "cuda", None):
        return "this PyTorch is built with CUDA"
    return native.device_translation_blocker()


def _device_argument_ops(native: Any) -> List[str]:
    # Which operators take a Device argument is fixed by the libraries that define them, and
    # reading every schema takes milliseconds: the answer is kept per build of torch, torch_musa
    # and the native library. Operators defined by other libraries meet the fallback instead,
    # when the device initialises.
    from .._core.cache import derived

    musa_module = sys.modules["torch_musa"]
    modules = [torch._C, musa_module, getattr(musa_module, "_MUSAC", None), native]
    sources = [Path(m.__file__) for m in modules if getattr(m, "__file__", None)]
    return derived("device-argument-ops", sources, native.device_argument_ops)


def _add_fallback(native: Any) -> None:
    if not native.register_device_fallback():
        log_once(
            "fallback:taken",
            "torchada: another library holds the CUDA fallback; operators registered after "
            "torchada was enabled may not run on 'cuda' devices (use 'musa' for them)",
        )


def install(patcher: Patcher) -> None:
    """Serve "cuda" devices with MUSA; natively when the library loads, else in Python."""
    global _path
    rule.use_device_type(torch._C._get_privateuse1_backend_name())
    native = library = _native.load()
    if native is not None:
        why = _native_blocker(native)
        if not why and not native.device_translation_registered():  # once per process
            try:
                native.register_device_translation(_device_argument_ops(native))
            except RuntimeError as err:  # the slots were taken between the check and now
                why = str(err)
        if why:
            log_once(
                f"blocked:{why}",
                "torchada: 'cuda' devices are translated in Python (slower): %s",
                why,
            )
            native = None
    if native is not None:
        native.set_device_translation_enabled(True)
        patcher.on_undo(lambda: native.set_device_translation_enabled(False))
        # The fallback rewrites every operator's dispatch table (milliseconds): paid when the
        # device initialises, which torch does before its first "cuda" factory.
        on_device_init(sys.modules["torch_musa"], functools.partial(_add_fallback, native))
    else:
        _install_fallback(patcher)
    _install_common(patcher, native)
    # Identity lives in torch.device's and TensorBase's own slots, not in the CUDA slots that
    # translation needs: a CUDA build of torch (PyPI's, other than the CPU 2.13.0) keeps it native.
    _install_identity(patcher, library)
    _path = "native" if native is not None else "python"

    def forget_path() -> None:
        global _path
        _path = None

    patcher.on_undo(forget_path)
    logger.debug("torchada devices: 'cuda' served by the %s path", _path)
