"""Inductor for the simulated musa device, registered by the simulated torch_musa itself (real
torch_musa registers its MUSA Triton backend and device interface the same way, at import).

Musa tensors on the simulator live in host memory, so Inductor's C++ CPU kernels compute on them
directly. When Inductor registers its backends, and only if nothing serves "musa" by then, this
registers for the musa device: ``CppScheduling`` as the kernel generator, a Python wrapper that
calls those kernels for musa buffers as for cpu ones, CPU device-op overrides, musa answering as
cpu where Inductor asks which backend or what kind of node it has, and a Dynamo device interface
backed by ``torch.musa``. Kept outside the ``torch_musa`` namespace (real torch_musa has none of
these names); permanent, as a backend's registration is.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
from typing import Any

import torch

logger = logging.getLogger("torchada")

_DEVICE = "musa"


def register() -> None:
    """Hook Inductor's backend registration (now, if Inductor's codegen is imported already).

    Example::

        >>> from torchada._simulator import inductor
        >>> inductor.register()  # doctest: +SKIP
    """
    import wrapt

    wrapt.register_post_import_hook(_hook_backend_registration, "torch._inductor.codegen.common")


def _device_interface() -> type:
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


def _register_codegen(common: Any) -> None:
    device = _DEVICE
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
            if not triton and device.type == _DEVICE:
                self.writeline(self.wrap_kernel_call(kernel_name, call_args))
                return
            getattr(super(), kernel_call)(
                kernel_name, call_args, device=device, triton=triton, **kwargs
            )

    # Inductor writes a kernel's call in _generate_kernel_call_helper; before it had one (2.7, not
    # 2.9), in generate_kernel_call itself.
    kernel_call = "_generate_kernel_call_helper"
    if not hasattr(PythonWrapperCodegen, kernel_call):
        kernel_call = "generate_kernel_call"
        SimulatorWrapperCodegen.generate_kernel_call = (  # type: ignore[method-assign]
            SimulatorWrapperCodegen._generate_kernel_call_helper
        )

    scheduling = CppScheduling
    from torch._inductor import utils

    if not hasattr(utils, "get_current_backend"):
        # Inductor without get_current_backend (2.7) asks inline, for the device it generates
        # code for, whether that device's backend is Triton: config.cuda_backend for any device
        # but cpu and mps. Musa's kernels here are C++ ones, so while they are generated that
        # answer is the cpu backend's (else CSE reads a Triton dtype off a C++ masked load).
        from torch._inductor import config

        class SimulatorCppScheduling(CppScheduling):  # type: ignore[misc, valid-type]
            def codegen_node(self, node: Any) -> Any:
                with config.patch(cuda_backend=config.cpu_backend):
                    return super().codegen_node(node)

        scheduling = SimulatorCppScheduling

    if device not in device_interface.device_interfaces:
        device_interface.register_interface_for_device(device, _device_interface())
    common.register_backend_for_device(device, scheduling, SimulatorWrapperCodegen)
    common.register_device_op_overrides(device, CpuDeviceOpOverrides())
    _treat_musa_nodes_as_cpu(device, common)
    logger.debug("inductor: C++ kernels registered for the simulated %s device", device)


def _treat_musa_nodes_as_cpu(device: str, common: Any) -> None:
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

    # Inductor without get_current_backend (2.7, not 2.9) asks config.cuda_backend inline, and
    # does the dtype bookkeeping it gates for "triton": nothing to answer there.
    original_backend = getattr(utils, "get_current_backend", None)
    if original_backend is not None and not getattr(original_backend, "_musa_sim", False):

        # 2.9's takes no argument and reads the graph's device; later ones take a device type.
        takes_device = bool(inspect.signature(original_backend).parameters)

        @functools.wraps(original_backend)
        def get_current_backend(device_type: "str | None" = None) -> str:
            if not device_type:
                from torch._inductor.virtualized import V

                device_type = V.graph.get_current_device_or_throw().type
            if takes_device:
                return original_backend("cpu" if device_type == device else device_type)
            if device_type == device:
                from torch._inductor import config

                return config.cpu_backend
            return original_backend()

        get_current_backend._musa_sim = True  # type: ignore[attr-defined]
        # Imported by name into the modules that ask.
        for name in ("torch._inductor.utils", "torch._inductor.scheduler", common.__name__):
            module = sys.modules.get(name)
            if getattr(module, "get_current_backend", None) is original_backend:
                module.get_current_backend = get_current_backend

    cls = scheduler.BaseSchedulerNode
    original = cls.__dict__["is_cpu"]
    if getattr(original, "_musa_sim", False):
        return

    @functools.wraps(original)
    def is_cpu(self: Any) -> bool:
        node_device = self.get_device()
        return node_device is not None and node_device.type in ("cpu", device)

    is_cpu._musa_sim = True  # type: ignore[attr-defined]
    cls.is_cpu = is_cpu


def _hook_backend_registration(common: Any) -> None:
    # This runs as soon as the module is imported, possibly halfway through a circular import
    # inside torch: the code generators are imported and registered only when Inductor asks
    # for its backends, before it first generates code.
    original = common.init_backend_registration

    @functools.wraps(original)
    def init_backend_registration() -> None:
        original()
        _register_codegen(common)

    common.init_backend_registration = init_backend_registration
