"""``torch.compile`` on MUSA (docs/compile.md).

Dynamo, AOTAutograd and the "eager"/"aot_eager" backends trace musa tensors like any others.
What is adapted here is done when the module concerned is first imported (importing Dynamo or
Inductor eagerly would cost seconds), or at once if it already is:

* ``torch.cuda.device`` is torch_musa's ``device`` (the registry). Dynamo switches devices for
  the context managers it knows; torch_musa's is registered with it (unless Dynamo, imported
  while torchada was on, already took it for CUDA's). Likewise ``torch.cuda.current_device()``,
  ``is_initialized()``, ``get_device_properties()`` and ``is_available()`` (torch_musa's
  functions) are folded into constants as CUDA's are, instead of being traced into; so are the
  C autocast-state queries that torch_musa's and torchada's ``torch.is_autocast_enabled``
  wrappers end in.
* Inductor's cache key asks ``torch.cuda.get_device_properties()`` for ``gcnArchName`` whenever
  ``torch.version.cuda`` is None (it takes that for ROCm). On MUSA those are torch_musa's
  properties, which have no such field: the key is made from the MUSA device's name and
  ``torch.version.musa`` instead.
* Tracing sees the devices eager code runs on: Dynamo's ``x.is_cuda`` is True for musa tensors
  (as eager ``is_cuda`` is), and Inductor lowers device arguments written as "cuda" (a node's
  ``device="cuda"``) as musa ones. Fake tensors' devices are translated in ``_devices``.
* On the torch_musa simulator only, Inductor is given a code generator for the musa device: its
  C++ CPU kernels, which read simulated musa tensors (host memory) directly. It is registered
  when Inductor registers its backends, and only if nothing serves "musa" by then: real
  torch_musa brings its own MUSA (Triton) backend and is left alone.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import sys
from typing import Any

import torch

from ._after_import import when_imported

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


def _simulated() -> bool:
    from . import _simulator

    return _simulator.is_simulated(getattr(torch, "musa", None))


def _simulator_device_interface() -> type:
    """Dynamo's runtime interface for the simulated musa device (Inductor reads device
    properties and streams through it), delegating to torch.musa."""
    from torch._dynamo.device_interface import DeviceInterface

    musa = torch.musa

    class SimulatedMusaInterface(DeviceInterface):
        device = musa.device  # type: ignore[assignment]
        Event = musa.Event  # type: ignore[assignment]
        Stream = musa.Stream  # type: ignore[assignment]

        class Worker:
            set_device = staticmethod(musa.set_device)
            current_device = staticmethod(musa.current_device)
            get_device_properties = staticmethod(musa.get_device_properties)

        current_device = staticmethod(musa.current_device)
        set_device = staticmethod(musa.set_device)
        maybe_exchange_device = staticmethod(musa._maybe_exchange_device)
        exchange_device = staticmethod(musa._exchange_device)
        device_count = staticmethod(musa.device_count)
        is_available = staticmethod(musa.is_available)
        stream = staticmethod(musa.stream)
        current_stream = staticmethod(musa.current_stream)
        set_stream = staticmethod(musa.set_stream)
        _set_stream_by_id = staticmethod(musa._set_stream_by_id)
        synchronize = staticmethod(musa.synchronize)
        get_device_properties = staticmethod(musa.get_device_properties)
        memory_allocated = staticmethod(musa.memory_allocated)
        is_bf16_supported = staticmethod(lambda including_emulation=False: True)

        @staticmethod
        def get_raw_stream(device_idx: int) -> int:
            return musa.current_stream(device_idx).musa_stream

        @staticmethod
        def get_compute_capability(device: Any = None) -> int:
            major, minor = musa.get_device_capability(device)
            return major * 10 + minor

        @staticmethod
        def is_triton_capable(device: Any = None) -> bool:
            return False  # the simulator's kernels are Inductor's C++ ones

        @staticmethod
        def raise_if_triton_unavailable(device: Any = None) -> None:
            raise RuntimeError("the torch_musa simulator has no Triton backend")

    return SimulatedMusaInterface


def _register_simulator_codegen(common: Any) -> None:
    device = _backend()
    if common.get_scheduling_for_device(device) is not None:
        return
    from torch._dynamo import device_interface
    from torch._inductor.codegen.cpp import CppScheduling
    from torch._inductor.codegen.cpu_device_op_overrides import CpuDeviceOpOverrides
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    class SimulatorWrapperCodegen(PythonWrapperCodegen):
        """Python wrapper calling C++ kernels for musa as for cpu (they run on host memory)."""

        @staticmethod
        def create(
            is_subgraph: bool,
            subgraph_name: str | None,
            parent_wrapper: Any,
            partition_signatures: Any = None,
        ) -> Any:
            if is_subgraph:
                return PythonWrapperCodegen.create(
                    is_subgraph, subgraph_name, parent_wrapper, partition_signatures
                )
            return SimulatorWrapperCodegen()

        def _generate_kernel_call_helper(
            self,
            kernel_name: str,
            call_args: Any,
            *,
            device: Any = None,
            triton: bool = True,
            **kwargs: Any,
        ) -> None:
            from torch._inductor.virtualized import V

            device = device or V.graph.get_current_device_or_throw()
            if not triton and device.type == _backend():
                self.writeline(self.wrap_kernel_call(kernel_name, call_args))
                return
            super()._generate_kernel_call_helper(
                kernel_name, call_args, device=device, triton=triton, **kwargs
            )

    interfaces = device_interface.device_interfaces
    had_interface = device in interfaces
    if not had_interface:
        device_interface.register_interface_for_device(device, _simulator_device_interface())
    common.register_backend_for_device(device, CppScheduling, SimulatorWrapperCodegen)
    common.register_device_op_overrides(device, CpuDeviceOpOverrides())
    _treat_simulated_nodes_as_cpu(device, common)

    def unregister() -> None:
        common.device_codegens.pop(device, None)
        common.device_op_overrides_dict.pop(device, None)
        if not had_interface:
            interfaces.pop(device, None)

    _state["patcher"].on_undo(unregister)
    logger.debug("inductor: C++ kernels registered for the simulated %s device", device)


def _treat_simulated_nodes_as_cpu(device: str, common: Any) -> None:
    """Musa kernels on the simulator are generated by Inductor's C++ CPU backend: where Inductor
    asks which backend or what kind of node it has, musa answers as cpu does.

    * ``get_current_backend()`` answers ``config.cuda_backend`` ("triton") for any device that is
      not cpu/mps/xpu/tpu; CSE then skips the dtype bookkeeping the C++ kernels need (an
      ``index_expr`` in a vectorised loop fails: ``assert index.dtype is not None``).
    * ``node.is_cpu()`` guards the scheduler's loop reordering, index inversion and
      pointwise-to-reduction reindexing, which only its SIMD (Triton-style) kernels support;
      with C++ loop groups they fail ("can't multiply sequence by non-int of type 'tuple'").
    """

    from torch._inductor import scheduler, utils

    original_backend = utils.get_current_backend
    if not getattr(original_backend, "_torchada", False):

        @functools.wraps(original_backend)
        def get_current_backend(device_type: "str | None" = None) -> str:
            if not device_type:
                from torch._inductor.virtualized import V

                device_type = V.graph.get_current_device_or_throw().type
            return original_backend("cpu" if device_type == device else device_type)

        get_current_backend._torchada = True  # type: ignore[attr-defined]
        # Imported by name into the modules that ask.
        for name in ("torch._inductor.utils", "torch._inductor.scheduler", common.__name__):
            module = sys.modules.get(name)
            if getattr(module, "get_current_backend", None) is original_backend:
                _state["patcher"].set_attr(module, "get_current_backend", get_current_backend)

    cls = scheduler.BaseSchedulerNode
    original = cls.__dict__["is_cpu"]
    if getattr(original, "_torchada", False):
        return

    @functools.wraps(original)
    def is_cpu(self: Any) -> bool:
        node_device = self.get_device()
        return node_device is not None and node_device.type in ("cpu", device)

    is_cpu._torchada = True  # type: ignore[attr-defined]
    _state["patcher"].set_attr(cls, "is_cpu", is_cpu)


def _hook_backend_registration(common: Any) -> None:
    # This runs as soon as the module is imported, possibly halfway through a circular import
    # inside torch: the code generators are imported and registered only when Inductor asks
    # for its backends, before it first generates code.
    original = common.init_backend_registration

    @functools.wraps(original)
    def init_backend_registration() -> None:
        original()
        _register_simulator_codegen(common)

    _state["patcher"].set_attr(common, "init_backend_registration", init_backend_registration)


def _register_device_context(ctx_manager: Any) -> None:
    # Dynamo maps torch.cuda.device to its device-switching variable when it is imported: that
    # is torch_musa's class only if Dynamo was imported after torchada was enabled.
    musa = torch.musa
    lookup = getattr(ctx_manager, "get_device_context_manager", None)
    if lookup is None or lookup(musa.device) is not None:
        return  # an older Dynamo without the registry, or torch_musa's class already known
    from ._fills.cuda import _get_device_index

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


def _musa_folded() -> list[Any]:
    return [f for f in (getattr(torch.musa, n, None) for n in _FOLDED) if f is not None]


def _register_constant_folds(torch_variables: Any) -> None:
    # Dynamo knows torch.cuda.current_device & co. by identity, taken when it is imported (the
    # fold tables) and when it first looks a function up (its rule map): torch_musa's functions,
    # which torch.cuda's names are, join them (they are there already if Dynamo came after
    # torchada). Without this, Dynamo would trace into torch_musa's C functions and fail.
    added = []
    entries = [(getattr(torch.musa, name, None), guarded) for name, guarded in _FOLDED.items()]
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

    added: list[Any] = []

    @functools.wraps(original)
    def get_torch_obj_rule_map() -> dict[Any, Any]:
        from torch._dynamo.variables.torch import TorchInGraphFunctionVariable

        rules = original()  # cached by torch: the same dict every time
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
    # agree with eager code, where musa tensors answer True (torchada._devices.cuda_is_musa).
    from ._devices import cuda_is_musa

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

    from ._devices import translate_device

    cls = graph.GraphLowering
    original = cls.call_function

    @functools.wraps(original)
    def call_function(self: Any, target: Any, args: Any, kwargs: Any) -> Any:
        args, kwargs = tree_map_only(torch.device, translate_device, (args, kwargs))
        return original(self, target, args, kwargs)

    _state["patcher"].set_attr(cls, "call_function", call_function)


def install(patcher: Any) -> None:
    _state["patcher"] = patcher
    patcher.on_undo(lambda: _state.update(patcher=None))
    when_imported("torch._dynamo.variables.ctx_manager", _register_device_context, _state)
    when_imported("torch._dynamo.variables.torch", _register_constant_folds, _state)
    when_imported("torch._dynamo.trace_rules", _register_trace_rules, _state)
    when_imported("torch._dynamo.variables.tensor", _patch_tensor_variable, _state)
    when_imported("torch._inductor.graph", _translate_lowering_devices, _state)
    when_imported("torch._inductor.codecache", _patch_codecache, _state)
    if _simulated():
        when_imported("torch._inductor.codegen.common", _hook_backend_registration, _state)
