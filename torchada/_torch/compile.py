"""``torch.compile`` on MUSA (docs/compile.md).

Dynamo, AOTAutograd and the "eager"/"aot_eager" backends trace musa tensors like any others.
What is adapted here is done when the module concerned is first imported (importing Dynamo or
Inductor eagerly would cost seconds), or at once if it already is:

* ``torch.cuda.device`` is torch_musa's ``device`` (the registry). Dynamo switches devices for
  the context managers it knows; torch_musa's is registered with it (unless Dynamo, imported
  while torchada was on, already took it for CUDA's). Likewise ``torch.cuda.current_device()``,
  ``is_initialized()``, ``get_device_properties()`` and ``is_available()`` (torch_musa's
  functions) are folded into constants as CUDA's are, instead of being traced into, and so are
  torchada's ``is_available()``, ``get_device_capability()`` and ``get_arch_list()``; so are the
  C autocast-state queries that torch_musa's and torchada's ``torch.is_autocast_enabled``
  wrappers end in.
* Inductor's cache key asks ``torch.cuda.get_device_properties()`` for ``gcnArchName`` whenever
  ``torch.version.cuda`` is None (it takes that for ROCm). On MUSA those are torch_musa's
  properties, which have no such field: the key is made from the MUSA device's name and
  ``torch.version.musa`` instead.
* Tracing sees the devices eager code runs on: Dynamo's ``x.is_cuda`` is True for musa tensors
  (as eager ``is_cuda`` is), and Inductor lowers device arguments written as "cuda" (a node's
  ``device="cuda"``) as musa ones. Fake tensors' devices are translated in ``torchada._devices``.
* Inductor's code generator for the musa device is torch_musa's: real torch_musa registers its
  MUSA (Triton) backend, the simulated one Inductor's C++ kernels (``torchada._simulator``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any

import torch

from .._core.after_import import on_import

if TYPE_CHECKING:
    from .._core.patcher import Patcher

logger = logging.getLogger("torchada")

_state: dict[str, Any] = {"patcher": None}


def _backend() -> str:
    return torch._C._get_privateuse1_backend_name()


def _musa_system_info(codecache: Any) -> dict[str, Any]:
    props = torch.musa.get_device_properties(torch.musa.current_device())
    device_info = {"name": props.name}
    triton_key = getattr(codecache, "triton_key", None)
    version_info = {
        "triton": triton_key() if triton_key is not None else None,
        "musa": getattr(torch.version, "musa", None),
    }
    hash_input = {"device": device_info, "version": version_info}
    strategy = getattr(codecache, "SYSTEM_CACHE_KEY_STRATEGY", None)
    if strategy is not None:
        key = strategy.key_from_json(hash_input)
    else:  # older torch: a digest of the same description
        key = hashlib.sha256(json.dumps(hash_input, sort_keys=True).encode()).hexdigest()
    return {"device": device_info, "version": version_info, "hash": key}


def _patch_codecache(codecache: Any) -> None:
    cls = codecache.CacheBase
    original = cls.__dict__["get_system"].__func__

    @functools.cache
    def musa_info() -> dict[str, Any]:
        return _musa_system_info(codecache)

    @functools.wraps(original)
    def get_system() -> dict[str, Any]:
        try:
            return original()
        except AttributeError:  # gcnArchName: torch_musa's properties answered for torch.cuda
            return musa_info()

    _state["patcher"].set_attr(cls, "get_system", staticmethod(get_system))


def _register_device_context(ctx_manager: Any) -> None:
    # Dynamo maps torch.cuda.device to its device-switching variable when it is imported: that
    # is torch_musa's class only if Dynamo was imported after torchada was enabled.
    musa = torch.musa
    lookup = getattr(ctx_manager, "get_device_context_manager", None)
    if lookup is None or lookup(musa.device) is not None:
        return  # an older Dynamo without the registry, or torch_musa's class already known
    from .._cuda.fills.cuda import _get_device_index

    class MusaDeviceVariable(ctx_manager.GenericDeviceVariable):
        """``torch.cuda.device`` / ``torch.musa.device`` in compiled code."""

        _exchange_fn = staticmethod(musa._exchange_device)
        _maybe_exchange_fn = staticmethod(musa._maybe_exchange_device)
        _get_device_index_fn = staticmethod(_get_device_index)

        def module_name(self) -> str:
            return "torch.musa"

        def python_type(self) -> type:
            return musa.device

    ctx_manager.register_device_context_manager(musa.device, MusaDeviceVariable)
    registry = ctx_manager._device_context_manager_map
    _state["patcher"].on_undo(lambda: registry.pop(musa.device, None))


# torch.cuda functions Dynamo evaluates at trace time (and guards where they can change).
_FOLDED = {
    "current_device": True,
    "is_initialized": True,
    "get_device_properties": False,
    "is_available": False,
}


# torch's autocast state queries, which Dynamo folds as torch.is_autocast_enabled & co. When
# those names are Python wrappers (torch_musa's, torchada's), Dynamo traces into the wrapper and
# reaches these C functions, which must fold the same way.
_FOLDED_C = ("is_autocast_enabled", "get_autocast_dtype", "get_autocast_gpu_dtype")


# torch.cuda functions torchada serves by looking at the caller's frame, which Dynamo cannot
# trace: torchada._cuda.available and torchada._cuda.capability.
_SERVED = ("is_available", "get_device_capability", "get_arch_list")


def _folded_entries() -> list[tuple[Any, bool]]:
    """(function, guarded) for each function Dynamo is to evaluate at trace time: torch_musa's
    counterparts of _FOLDED, and torchada's own torch.cuda functions of _SERVED (as served,
    through the device-argument wrapper where there is one)."""
    from torchada_hooks.proxy import resolve_unsealed

    entries = [(getattr(torch.musa, name, None), guarded) for name, guarded in _FOLDED.items()]
    for name in _SERVED:
        # Not a first use of torch.cuda: Dynamo imported before torchada (torch_musa's FSDP
        # import does it) brings this here at activation, and the proxy stays unsealed.
        served = resolve_unsealed(torch.cuda, name)
        if hasattr(getattr(served, "__torchada_wrapped__", served), "__torchada_musa__"):
            entries.append((served, False))
    return [(fn, guarded) for fn, guarded in entries if fn is not None]


def _musa_folded() -> list[Any]:
    return [fn for fn, _ in _folded_entries()]


def _register_constant_folds(torch_variables: Any) -> None:
    # Dynamo knows torch.cuda.current_device & co. by identity, taken when it is imported (the
    # fold tables) and when it first looks a function up (its rule map): torch_musa's functions,
    # which torch.cuda's names are, join them (they are there already if Dynamo came after
    # torchada). Without this, Dynamo would trace into torch_musa's C functions and fail.
    added = []
    entries = _folded_entries()
    entries += [(getattr(torch._C, name, None), False) for name in _FOLDED_C]
    for fn, guarded in entries:
        tables = [torch_variables.constant_fold_functions]
        if guarded:
            tables.append(torch_variables.constant_fold_functions_need_guards)
        for table in tables if fn is not None else ():
            if fn not in table:
                if isinstance(table, dict):
                    table[fn] = None
                else:  # a list in older torch releases
                    table.append(fn)
                added.append((table, fn))

    def remove() -> None:
        for table, fn in added:
            if isinstance(table, dict):
                table.pop(fn, None)
            elif fn in table:
                table.remove(fn)

    _state["patcher"].on_undo(remove)


def _register_trace_rules(trace_rules: Any) -> None:
    original = trace_rules.get_torch_obj_rule_map
    # Dynamo builds its map of torch's functions once, from the objects torch's names hold then.
    # Built before torchada was enabled (Dynamo imported first), it knows torch's own factories,
    # not the device-translating functions those names hold now: Dynamo would trace into those
    # and put torch's own factory, with the program's "cuda" device, in the graph. Such a map
    # gets the entries a map built now has (as if Dynamo had come after torchada).
    build = getattr(original, "__wrapped__", None)
    info = getattr(original, "cache_info", None)
    stale = build is not None and info is not None and info().currsize > 0
    added: list[Any] = []

    @functools.wraps(original)
    def get_torch_obj_rule_map() -> dict[Any, Any]:
        nonlocal stale
        from torch._dynamo.variables.torch import TorchInGraphFunctionVariable

        rules = original()  # cached by torch: the same dict every time
        if stale:
            stale = False
            for fn, rule in build().items():
                if fn not in rules:
                    rules[fn] = rule
                    added.append(fn)
            logger.debug("torchada: %d of Dynamo's torch function rules added", len(added))
        for fn in _musa_folded():
            if fn not in rules:
                rules[fn] = TorchInGraphFunctionVariable
                added.append(fn)
        return rules

    def remove() -> None:
        if added:  # otherwise the map may not even have been computed
            rules = original()
            for fn in added:
                rules.pop(fn, None)

    get_torch_obj_rule_map.cache_clear = original.cache_clear  # type: ignore[attr-defined]
    _state["patcher"].on_undo(remove)
    _state["patcher"].set_attr(trace_rules, "get_torch_obj_rule_map", get_torch_obj_rule_map)


def _patch_tensor_variable(tensor_variables: Any) -> None:
    # Dynamo answers ``x.is_cuda`` from the traced device's type, not from the tensor: make it
    # agree with eager code, where musa tensors answer True
    # (torchada._devices.install.cuda_is_musa).
    from .._devices.install import cuda_is_musa

    cls = tensor_variables.TensorVariable
    original = cls.method_attr_is_cuda

    @functools.wraps(original)
    def method_attr_is_cuda(self: Any, tx: Any) -> Any:
        device = self.device
        if device is not None and device.type == _backend() and cuda_is_musa():
            from torch._dynamo.variables.base import VariableTracker

            return VariableTracker.build(tx, True)
        return original(self, tx)

    _state["patcher"].set_attr(cls, "method_attr_is_cuda", method_attr_is_cuda)


def _translate_lowering_devices(graph: Any) -> None:
    # A graph node's device arguments are what the program wrote (``torch.ones(3,
    # device="cuda")``); the fake values they produced are on musa already. Inductor lowers
    # from the arguments, so it would plan a CUDA kernel beside musa ones ("Does not support
    # mixing musa+cuda"): read them as eager code does, at compile time only.
    from torch.utils._pytree import tree_map_only

    from .._devices.rule import translate_device

    cls = graph.GraphLowering
    original = cls.call_function

    @functools.wraps(original)
    def call_function(self: Any, target: Any, args: Any, kwargs: Any) -> Any:
        args, kwargs = tree_map_only(torch.device, translate_device, (args, kwargs))
        return original(self, target, args, kwargs)

    _state["patcher"].set_attr(cls, "call_function", call_function)


def install(patcher: Patcher) -> None:
    _state["patcher"] = patcher
    patcher.on_undo(lambda: _state.update(patcher=None))
    on_import("torch._dynamo.variables.ctx_manager", _register_device_context, _state)
    on_import("torch._dynamo.variables.torch", _register_constant_folds, _state)
    on_import("torch._dynamo.trace_rules", _register_trace_rules, _state)
    on_import("torch._dynamo.variables.tensor", _patch_tensor_variable, _state)
    on_import("torch._inductor.graph", _translate_lowering_devices, _state)
    on_import("torch._inductor.codecache", _patch_codecache, _state)
