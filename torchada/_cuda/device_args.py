"""Device arguments of ``torch.cuda`` functions and classes mean the MUSA device.

torch_musa's functions take musa devices only: ``torch.musa.set_device(torch.device("cuda", 1))``
raises ``ValueError: Expected a musa device, but got: cuda:1``. CUDA code passes its own
spellings everywhere (``set_device(torch.device("cuda:0"))`` in Lightning, ``with
torch.cuda.device(self.device)`` in Hugging Face pipelines, ``memory_allocated("cuda:1")``).

Which parameters are devices is data: tables/cuda_device_params.json, derived from the signatures
of torch's own ``torch.cuda`` (:func:`derive`; a test keeps the table equal to it). Functions
resolved through the ``torch.cuda`` proxies are wrapped by :func:`wrap`; the classes torch_musa
defines (``Stream``, ``ExternalStream``, the ``device`` context) are patched by :func:`install`.
A CUDA spec is read by the one rule of ``torchada._devices.rule`` (``"cuda[:N]"`` and
``torch.device("cuda"[, N])`` are ``musa[:N]``); ints, None and musa spellings pass unchanged, so
bad input fails as the musa spelling fails, with the user's spelling named in the message. A
device parameter that torch.cuda lets the caller leave out (the current device) but torch_musa
requires is passed as None.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from .._devices import rule

if TYPE_CHECKING:
    from .._core.patcher import Patcher

# Parameters whose name says "device" but that are not one (a compute capability, a flag).
_NOT_DEVICES = {"device_cc", "device_type", "insert_device_ordinal", "deviceid"}
MODULES = ("torch.cuda", "torch.cuda.memory", "torch.cuda.random", "torch.cuda.streams")


def table() -> Dict[str, Dict[str, List[str]]]:
    """module -> function or class -> its device parameters, from tables/cuda_device_params.json."""
    from .._core import tables as _tables

    return _tables.load("cuda_device_params").modules


def _signature(obj: Any) -> Optional[inspect.Signature]:
    target = obj
    if isinstance(obj, type):
        target = obj.__new__ if "__new__" in vars(obj) else obj.__init__
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        return None


def derive(module_names: Tuple[str, ...] = MODULES) -> Dict[str, Dict[str, List[str]]]:
    """The public functions and classes of torch's own ``torch.cuda`` modules that take devices,
    with the names of those parameters, read from their signatures. Call it on torch's modules
    (before torchada is on, or on a CPU machine).

    Example::

        >>> derive(("torch.cuda",))["torch.cuda"]["can_device_access_peer"]
        ['device', 'peer_device']
    """
    out: Dict[str, Dict[str, List[str]]] = {}
    for module_name in module_names:
        module = importlib.import_module(module_name)
        names: Dict[str, List[str]] = {}
        for name, value in sorted(vars(module).items()):
            if name.startswith("_") or not callable(value):
                continue
            if not str(getattr(value, "__module__", "")).startswith("torch.cuda"):
                continue  # an import from elsewhere (typing, torch's own helpers)
            if isinstance(value, type) and name.endswith("Storage"):
                continue  # legacy storage types: constructed on the device, no argument
            sig = _signature(value)
            if sig is None:
                continue
            params = [
                p.name
                for p in sig.parameters.values()
                if "device" in p.name and p.name not in _NOT_DEVICES
            ]
            if params:
                names[name] = params
        out[module_name] = names
    return out


def _positions(cuda: Optional[inspect.Signature], params: List[str]) -> Dict[str, int]:
    if cuda is None:
        return {}
    order = [p.name for p in cuda.parameters.values() if p.kind is not p.VAR_KEYWORD]
    order = [n for n in order if n not in ("self", "cls")]
    return {name: order.index(name) for name in params if name in order}


def _required(fn: Any, params: List[str]) -> Tuple[str, ...]:
    # Device parameters the target cannot do without but torch.cuda's callers may leave out.
    sig = _signature(fn)
    if sig is None:
        return ()
    return tuple(
        n for n in params if n in sig.parameters and sig.parameters[n].default is inspect._empty
    )


def _as_argument(musa: Any) -> Any:
    """What a torch_musa function gets for the musa device a CUDA spec named: the index when it
    has one (what torch_musa parses fastest), else the device."""
    return musa if musa.index is None else musa.index


def _context_index(value: Any) -> Optional[int]:
    """The index of a ``torch.cuda.device`` context object, else None: torch.cuda's device-index
    rule reads one as its index (``ExternalStream(ptr, device=torch.cuda.device(1))``), while
    torch_musa's rejects it."""
    if value is None or value.__class__ is int:
        return None
    context = getattr(sys.modules.get("torch_musa"), "device", None)
    if isinstance(context, type) and isinstance(value, context):
        return getattr(value, "idx", None)
    return None


def _translator(params: List[str], positions: Dict[str, int], fill: Tuple[str, ...]) -> Callable:
    def translate(args: Tuple, kwargs: Dict[str, Any]) -> Tuple[Tuple, Dict, Any, Any]:
        user = dev = None
        for name in params:
            pos = positions.get(name)
            if pos is not None and pos < len(args):
                value = args[pos]
                musa = rule.cuda_to_musa(value)
                if musa is not None:
                    args = args[:pos] + (_as_argument(musa),) + args[pos + 1 :]
                    user, dev = value, musa
                elif (index := _context_index(value)) is not None:
                    args = args[:pos] + (index,) + args[pos + 1 :]
            elif name in kwargs:
                value = kwargs[name]
                musa = rule.cuda_to_musa(value)
                if musa is not None:
                    kwargs = {**kwargs, name: _as_argument(musa)}
                    user, dev = value, musa
                elif (index := _context_index(value)) is not None:
                    kwargs = {**kwargs, name: index}
            elif name in fill:
                kwargs = {**kwargs, name: None}
        return args, kwargs, user, dev

    return translate


def _in_cuda_words(err: ValueError) -> None:
    """torch_musa's device-index check names its own device ("Expected a musa device, but got:
    cpu"); a program that called torch.cuda gets torch's words for CUDA."""
    import torch

    message = err.args[0] if err.args else None
    musa = f"Expected a {torch._C._get_privateuse1_backend_name()} "
    if isinstance(message, str) and message.startswith(musa):
        err.args = ("Expected a cuda " + message[len(musa) :],) + tuple(err.args[1:])


def wrap(module_name: str, attr: str, value: Any, cuda_original: Any = None) -> Any:
    """``value`` (what ``module_name.attr`` resolved to), taking CUDA device specs where the
    table says the CUDA function takes a device. Classes are left as they are (see
    :func:`install`); so is anything the table does not list.

    Example::

        >>> import torch, torchada
        >>> torch.cuda.memory_allocated("cuda:1")  # on MUSA  # doctest: +SKIP
        0
    """
    params = table().get(module_name, {}).get(attr)
    if not params or not callable(value) or isinstance(value, type):
        return value
    cuda_sig = _signature(cuda_original) if cuda_original is not None else _signature(value)
    fill = _required(value, params)
    positions = _positions(cuda_sig, params)
    translate = _translator(params, positions, fill)
    # The first positional parameter is the (only) device: the fast path below applies.
    one_positional = list(positions.values()) == [0]

    @functools.wraps(value)
    def with_cuda_devices(*args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except ValueError as err:
            _in_cuda_words(err)
            raise

    def call(*args: Any, **kwargs: Any) -> Any:
        # The common calls: nothing, or one device (an int or None needs no translation).
        if not kwargs and not fill and len(args) < 2 and one_positional:
            if not args:
                return value()
            first = args[0]
            if first is None or first.__class__ is int:
                return value(first)
            musa = rule.cuda_to_musa(first)
            if musa is None:
                index = _context_index(first)
                return value(first if index is None else index)
            try:  # inline rather than _call_translated: this is the hot path
                return value(_as_argument(musa))
            except Exception as err:
                rule.add_device_context(err, first, musa)
                raise
        args, kwargs, user, dev = translate(args, kwargs)
        if user is None:
            return value(*args, **kwargs)
        return rule.call_translated(value, args, kwargs, user, dev)

    with_cuda_devices.__torchada_wrapped__ = value  # type: ignore[attr-defined]
    return with_cuda_devices


def _patch_class(patcher: Any, cls: type, method: str, params: List[str]) -> None:
    original = vars(cls)[method]
    func = original.__func__ if isinstance(original, staticmethod) else original
    # __new__/__init__ receive the class or instance first.
    positions = _positions(_signature(cls), params)
    translate = _translator(params, {n: i + 1 for n, i in positions.items()}, ())

    @functools.wraps(func)
    def with_cuda_devices(*args: Any, **kwargs: Any) -> Any:
        args, kwargs, user, dev = translate(args, kwargs)
        if user is None:
            return func(*args, **kwargs)
        return rule.call_translated(func, args, kwargs, user, dev)

    patcher.set_attr(
        cls,
        method,
        (
            staticmethod(with_cuda_devices)
            if isinstance(original, staticmethod)
            else with_cuda_devices
        ),
    )


def install(patcher: Patcher) -> None:
    """Patch torch_musa's own device-taking classes (isinstance checks and the objects torch_musa
    returns stay torch_musa's), and undo it with ``patcher``. c10d's device-taking methods are
    ``torchada._distributed.c10d``'s."""
    import torch

    musa = torch.musa
    classes = {
        "Stream": (musa.Stream, "__new__"),
        "ExternalStream": (musa.ExternalStream, "__new__"),
        "device": (musa.device, "__init__"),
    }
    for name, (cls, method) in classes.items():
        params = table().get("torch.cuda", {}).get(name)
        if params and method in vars(cls):
            _patch_class(patcher, cls, method, params)
