"""torch_musa, simulated on the CPU by torchada (see torchada/_simulator).

Import order follows torch_musa 2.7.1's own __init__: rename the backend, load the C module, bind
``torch.musa``, then the device, stream, amp and memory APIs and the attributes it sets on torch.
Names torch_musa lacks (``nvtx``, ``CUDAGraph``, ``memory_cached``, ...) are absent here too.
"""

import atexit
import sys
import time


def _autoload():
    # torch's `torch.backends` entry point (`torch_musa = torch_musa:_autoload`): importing this
    # package is the whole work. Defined before `import torch`, as torch_musa does, because when a
    # program's first line is `import torch_musa`, torch's entry points run (and look this name
    # up) while this module has only just begun.
    pass


import torch  # noqa: E402

from torchada._simulator.boards import TORCH_MUSA_VERSION  # noqa: E402
from torchada._simulator.config import read_config  # noqa: E402

_torchada_simulated = True

# torch_musa refuses a torch older than its own version. It also warns when torch is not exactly
# 2.7.1; the simulator runs on newer torch on purpose, so that warning is left out.
if tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:3]) < tuple(
    int(p) for p in TORCH_MUSA_VERSION.split(".")
):
    raise RuntimeError(
        f"torch_musa {TORCH_MUSA_VERSION} requires torch >= {TORCH_MUSA_VERSION}, "
        f"found {torch.__version__}"
    )

torch.utils.rename_privateuse1_backend("musa")

# Backward on two simulated devices leaves autograd device threads that may drop a Python
# reference just after interpreter shutdown began, aborting the process now and then
# ("terminate called without an active exception"). A short pause at exit lets them finish.
atexit.register(time.sleep, 0.05)

_sim_config = read_config()
from . import _native  # noqa: E402

_MUSAC = _native.load(_sim_config)

torch.__setattr__("musa", sys.modules[__name__])
# torch's device lazy-init imports "torch.<backend>" by name, so the module must be findable there.
sys.modules["torch.musa"] = sys.modules[__name__]

from .version import __version__  # noqa: E402,F401

torch._C._profiler.ProfilerActivity.MUSA = torch._C._profiler.ProfilerActivity.PrivateUse1

_spec = _sim_config.spec
_sim_device_properties = [
    _MUSAC._MusaDeviceProperties(
        _spec["name"],
        _spec["capability"][0],
        _spec["capability"][1],
        _spec["total_memory"],
        _spec["sm_count"],
    )
    for _ in range(_sim_config.device_count)
]
_sim_arch_flags = "%d%d" % _spec["capability"]

from .core._lazy_init import (  # noqa: E402,F401
    _initialized,
    _is_in_bad_fork,
    _lazy_call,
    _lazy_init,
    is_initialized,
)
from .core.device import (  # noqa: E402,F401
    Device,
    DeviceOf,
    _DeviceGuard,
    _exchange_device,
    _maybe_exchange_device,
    _MusaDeviceProperties,
    _sleep,
    can_device_access_peer,
    current_blas_handle,
    current_blaslt_handle,
    current_device,
    device,
    device_count,
    device_of,
    get_amp_supported_dtype,
    get_arch_list,
    get_device_capability,
    get_device_name,
    get_device_properties,
    ipc_collect,
    is_available,
    is_bf16_supported,
    is_tf32_supported,
    set_device,
    synchronize,
)


def register_musa_hook():
    # The hooks interface is registered by the C module when it is configured.
    return None


register_musa_hook()

from .core import amp, memory  # noqa: E402,F401
from .core.amp.common import amp_definitely_not_available  # noqa: E402,F401
from .core.memory import *  # noqa: E402,F401,F403
from .core.memory import (  # noqa: E402,F401
    _dump_snapshot,
    _record_memory_history,
    _set_allocator_settings,
    _snapshot,
)
from .core.random import *  # noqa: E402,F401,F403
from .core.random import fork_rng  # noqa: E402
from .core.stream import (  # noqa: E402,F401
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    _set_stream_by_id,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

torch.random.fork_rng = fork_rng

from .core import mudnn as _mudnn  # noqa: E402

torch.backends.mudnn = _mudnn

torch.version.musa = _MUSAC._musa_version

from .core import mccl  # noqa: E402,F401
from .core.legacy_types import *  # noqa: E402,F401,F403

_tensor_classes = {
    globals()[f"{p}Tensor"]
    for p in ("Double", "Float", "Long", "Int", "Short", "Char", "Byte", "Half", "Bool", "BFloat16")
}
from .core.tensor_attrs import (  # noqa: E402
    set_module_attributes,
    set_storage_attributes,
    set_tensor_attributes,
)


def set_torch_attributes():
    set_tensor_attributes()


def set_profiler_attributes():
    pass


def set_attributes():
    set_torch_attributes()
    set_module_attributes()
    set_storage_attributes()
    set_profiler_attributes()


set_attributes()

from .musa_graph import (  # noqa: E402,F401
    MUSAGraph,
    graph,
    graph_pool_handle,
    graphs,
    is_current_stream_capturing,
    make_graphed_callables,
    update_musa_graph_with_profile,
)

OutOfMemoryError = torch._C.OutOfMemoryError


class MusaError(RuntimeError):
    def __init__(self, code):
        msg = _MUSAC._musart.musaGetErrorString(_MUSAC._musart.musaError(code))
        super().__init__(f"{msg} ({code})")


def check_error(res):
    if res != _MUSAC._musart.musaError.success:
        raise MusaError(res)


def musart():
    _lazy_init()
    return _MUSAC._musart


def _musa_lazy_init_overwrite():
    torch.cuda._lazy_init = _lazy_init
    torch.cuda._lazy_call = _lazy_call


def overwrite_cuda_api():
    # torch_musa points torch.cuda's lazy-init hooks at its own.
    _musa_lazy_init_overwrite()


overwrite_cuda_api()

from . import distributed as _distributed  # noqa: E402,F401
from . import utils  # noqa: E402,F401
from .utils import BuildExtension, MUSAExtension, musa_extension  # noqa: E402,F401
