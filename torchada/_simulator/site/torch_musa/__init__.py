"""torch_musa, simulated on the CPU by torchada (see torchada/_simulator).

Import order follows torch_musa's own __init__: the version gate, rename the backend, load the C
module (from 2.9.1: align the RNG to TORCH_RNG_ALIGN), bind ``torch.musa``, then the device,
stream, amp and memory APIs and the attributes it sets on torch. What differs between the
simulated releases (TORCHADA_SIM_RELEASE) comes from torchada/_simulator/releases.json.
Names torch_musa lacks (``nvtx``, ``CUDAGraph``, ``memory_cached``, ...) are absent here too.
"""

import atexit
import contextlib
import os
import re
import sys
import time
import typing
import warnings


def _autoload():
    # torch's `torch.backends` entry point (`torch_musa = torch_musa:_autoload`): importing this
    # package is the whole work. Defined before `import torch`, as torch_musa does, because when a
    # program's first line is `import torch_musa`, torch's entry points run (and look this name
    # up) while this module has only just begun.
    pass


import importlib  # noqa: E402

import torch  # noqa: E402

try:
    from packaging.version import Version
except ImportError:
    # Real torch_musa requires packaging; torch vendors the same module, so the simulator runs
    # without it installed.
    from torch._vendor.packaging.version import Version

# The simulator's own helpers live outside the torch_musa namespace, which holds only the names
# real torch_musa has.
_boards = importlib.import_module("torchada._simulator.boards")
_state = importlib.import_module("torchada._simulator.state")

# The release simulated (TORCHADA_SIM_RELEASE, else the one paired with this torch): its facts
# (torchada/_simulator/releases.json) decide what differs between releases below.
_state.config = importlib.import_module("torchada._simulator.config").read_config()
_release = _state.config.facts

# As torch_musa's: the oldest torch it runs on, and torch's version without local or pre-release
# parts ("2.13.0+cpu" -> "2.13.0"). Below it, torch_musa raises (with its message as two
# arguments, as real's); a torch whose version lacks the expected one's text gets a warning.
TORCH_MIN_VERSION = Version(_release["torch_minimum"])
TORCH_VERSION = Version(torch.__version__).base_version
if Version(TORCH_VERSION) < TORCH_MIN_VERSION:
    raise RuntimeError(
        f"torch version must not be less than v{_release['torch_minimum']} when using torch_musa,",
        " but now torch version is " + torch.__version__,
    )
if _release["torch_expected"] not in torch.__version__:
    warnings.warn(
        f"torch version should be v{_release['torch_expected']} when using torch_musa, but now "
        "torch version is " + torch.__version__,
        UserWarning,
    )

torch.utils.rename_privateuse1_backend("musa")

# torch_musa runs on its own build of torch, whose storage `to` moves storages in place under the
# unified CPU allocator (see parseEnvForUMM), and whose nn.parallel.comm calls torch_musa's comm
# entry points (nn.DataParallel); the simulator's torch gets that behaviour here.
importlib.import_module("torchada._simulator.unified_memory").install()
importlib.import_module("torchada._simulator.parallel_comm").install()

# Backward on two simulated devices leaves autograd device threads that may drop a Python
# reference just after interpreter shutdown began, aborting the process now and then
# ("terminate called without an active exception"). A short pause at exit lets them finish.
atexit.register(time.sleep, 0.05)

_MUSAC = importlib.import_module("torchada._simulator.musac").load(_state.config)
# As in torch_musa, this also binds the package to its own name `torch_musa`.
import torch_musa._MUSAC  # noqa: E402,F401

if _release["rng_align"]:
    # From 2.9.1, before torch.musa is bound: TORCH_RNG_ALIGN names an NVIDIA GPU whose RNG grid
    # sizing to follow (an unknown name fails the import with a ValueError).
    from .core.random import align_rng_to_nv_gpu  # noqa: E402

    align_rng_to_nv_gpu()

torch.__setattr__("musa", sys.modules[__name__])
# torch's device lazy-init imports "torch.<backend>" by name, so the module must be findable there.
sys.modules["torch.musa"] = sys.modules[__name__]

from .version import __version__  # noqa: E402,F401

torch._C._profiler.ProfilerActivity.MUSA = torch._C._profiler.ProfilerActivity.PrivateUse1

from .distributed import _apply_distributed_patch  # noqa: E402

_state.device_properties = [
    importlib.import_module("torchada._simulator.musac").device_properties(_state.config, i)
    for i in range(_state.config.device_count)
]
_state.arch_flags = "%d%d" % _state.config.spec["capability"]

# Importing core._lazy_init also sets the legacy storage classes, MusaError and check_error here.
from .core._lazy_init import (  # noqa: E402,F401
    _is_in_bad_fork,
    _lazy_call,
    _lazy_init,
    is_initialized,
    musart,
)

if not _release["live_initialized"]:
    # A copy taken at import: False for good, as real torch_musa's (before 2.11.0.post2).
    from .core._lazy_init import _initialized  # noqa: E402,F401
from .core.device import Device as device  # noqa: E402,F401
from .core.device import DeviceOf as device_of  # noqa: E402,F401
from .core.device import (  # noqa: E402,F401
    _DeviceGuard,
    _exchange_device,
    _maybe_exchange_device,
    can_device_access_peer,
    current_device,
    device_count,
    get_arch_list,
    get_device_capability,
    get_device_name,
    get_device_properties,
    is_available,
    is_bf16_supported,
    is_tf32_supported,
    register_musa_hook,  # noqa: E402
    set_device,
    synchronize,
)

if _release["device_api_2_11"]:
    from .core.device import (  # noqa: E402,F401
        get_gencode_flags,
        get_sync_debug_mode,
        set_sync_debug_mode,
    )

register_musa_hook()
from .core import (  # noqa: E402,F401
    amp,
    current_blas_handle,
    current_blaslt_handle,
    memory,
)
from .core.amp.common import (  # noqa: E402,F401
    amp_definitely_not_available,
    get_amp_supported_dtype,
)
from .core.memory import *  # noqa: E402,F401,F403

if _release["memory_names"] == "2.7.1":
    # Re-exported at the top level up to 2.9.1 (2.9.1.post1 keeps them in torch.musa.memory).
    from .core.memory import (  # noqa: E402,F401
        _dump_snapshot,
        _record_memory_history,
        _set_allocator_settings,
    )
from .core.random import *  # noqa: E402,F401,F403
from .core.random import fork_rng  # noqa: E402
from .core.serialization import register_deserialization  # noqa: E402
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

if _release["stream_from_external"]:
    from .core.stream import get_stream_from_external  # noqa: E402,F401

torch.random.fork_rng = fork_rng

torch.backends.mudnn = importlib.import_module(".core.mudnn", __name__)
if _release["backends_musa"]:
    # From 2.9.1: the legacy storage classes' module, as torch.backends.musa (it has no matmul).
    from .core.musa import *  # noqa: E402,F401,F403

    torch.backends.musa = importlib.import_module(".core.musa", __name__)

register_deserialization()

torch.version.musa = _MUSAC._musa_version

# The legacy tensor types; their storages came with core._lazy_init.
_legacy = importlib.import_module("torchada._simulator.legacy_types")
globals().update({n: getattr(_legacy, n) for n in _legacy.__all__ if n.endswith("Tensor")})
del _legacy

from .core import mccl  # noqa: E402,F401

_tensor_classes = {
    globals()[f"{p}Tensor"]
    for p in ("Double", "Float", "Long", "Int", "Short", "Char", "Byte", "Half", "Bool", "BFloat16")
}
from . import profiler  # noqa: E402,F401
from .core.module_attrs import set_module_attributes  # noqa: E402
from .core.storage import set_storage_attributes  # noqa: E402
from .core.tensor_attrs import set_torch_attributes  # noqa: E402
from .profiler import set_profiler_attributes  # noqa: E402


def set_attributes():
    set_torch_attributes()
    set_module_attributes()
    set_storage_attributes()
    set_profiler_attributes()


set_attributes()


def _apply_patches():
    # As torch_musa's, right after set_attributes: FSDP2's patches wrap
    # torch.distributed.fsdp.fully_shard, which imports torch.distributed.fsdp (FSDP1, FSDP2,
    # DTensor) into every program. torch_musa's ShardedGradScaler, put in
    # torch.distributed.fsdp.sharded_grad_scaler next, is not modelled (torch's own stays).
    _apply_distributed_patch()


_apply_patches()

if _release["graph_pool_handle"] == "_POOL_HANDLE":
    # 2.9.1.post1: graph pool handles are of this type (defined before musa_graph is imported).
    _POOL_HANDLE = typing.NewType("_POOL_HANDLE", tuple[int, int])

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
if _release["accelerator_error"]:
    AcceleratorError = torch._C.AcceleratorError


def overwrite_cuda_api():
    # torch_musa points torch.cuda's lazy-init hooks at its own.
    torch.cuda._lazy_init = _lazy_init
    torch.cuda._lazy_call = _lazy_call


overwrite_cuda_api()


def _sleep(cycles):
    _MUSAC._musa_sleep(cycles)


def ipc_collect():
    _lazy_init()


from . import distributed, utils  # noqa: E402,F401
from .utils import BuildExtension, MUSAExtension, musa_extension  # noqa: E402,F401


def parseEnvForUMM():
    """Unified memory for CPU tensors, process-wide, when PYTORCH_MUSA_ALLOC_CONF has the option
    ``cpu:unified``: CPU tensors then come from managed memory and storages move to the device
    in place (``storage.to``, ``torch.load(map_location="musa")``). CPU_UNIFIED_FLAG is
    torch_musa's internal flag for the latter; it is reset to "False" first."""
    conf = os.getenv("PYTORCH_MUSA_ALLOC_CONF")
    os.environ["CPU_UNIFIED_FLAG"] = "False"
    if conf is None:
        return
    # Options are separated by commas or blanks, a key from its value by colons.
    for option in re.split(r"[\s,]+", conf.strip()):
        if re.split(r"[:]+", option.strip()) == ["cpu", "unified"]:
            _MUSAC._musa_register_unified_cpu_allocator()
            os.environ["CPU_UNIFIED_FLAG"] = "True"
            return


parseEnvForUMM()


@contextlib.contextmanager
def use_unified_cpu_allocator():
    """CPU tensors made inside come from the unified CPU allocator (managed memory), and storages
    move to the device in place, as with PYTORCH_MUSA_ALLOC_CONF=cpu:unified."""
    _MUSAC._musa_register_unified_cpu_allocator()
    os.environ["CPU_UNIFIED_FLAG"] = "True"
    try:
        yield
    finally:
        _MUSAC._musa_reset_unified_cpu_allocator()
        os.environ["CPU_UNIFIED_FLAG"] = "False"


# Inductor's code generator for the musa device, registered when Inductor registers its backends
# (real torch_musa registers its Triton one at import).
importlib.import_module("torchada._simulator.inductor").register()

if _release["live_initialized"]:
    # 2.11.0.post2: torch.musa._initialized reads the live flag (torch.utils.checkpoint asks it
    # whether to save the device's RNG state).
    def __getattr__(name):
        if name == "_initialized":
            return importlib.import_module(".core._lazy_init", __name__)._initialized
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


del _boards, _state, _release
