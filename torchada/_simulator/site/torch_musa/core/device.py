"""Device management (torch_musa/core/device.py)."""

import functools

import torch

import torch_musa
from torch_musa._MUSAC import _MusaDeviceProperties  # noqa: F401  (as in torch_musa)
from torchada._simulator import state as _state

from ._lazy_init import _lazy_init
from ._utils import _get_musa_device_index


class Device:
    def __init__(self, device):
        self.idx = _get_musa_device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = _exchange_device(self.idx)

    def __exit__(self, type, value, traceback):
        self.idx = _maybe_exchange_device(self.prev_idx)
        return False


class DeviceOf(Device):
    def __init__(self, obj):
        idx = obj.get_device() if obj.device.type == "musa" else -1
        super().__init__(idx)


def _exchange_device(idx):
    if idx < 0:
        return -1
    _lazy_init()
    return torch_musa._MUSAC._musa_exchangeDevice(idx)


def _maybe_exchange_device(idx):
    if idx < 0:
        return -1
    return torch_musa._MUSAC._musa_exchangeDevice(idx)


class _DeviceGuard:
    def __init__(self, index):
        self.idx = index
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = _exchange_device(self.idx)

    def __exit__(self, type, value, traceback):
        self.idx = _maybe_exchange_device(self.prev_idx)
        return False


@functools.lru_cache(maxsize=1)
def device_count():
    return torch_musa._MUSAC._musa_getDeviceCount()


def is_available():
    return torch_musa._MUSAC._musa_getDeviceCount() > 0


def set_device(device):
    device = _get_musa_device_index(device)
    if device >= 0:
        torch_musa._MUSAC._musa_setDevice(device)


def current_device():
    _lazy_init()
    return torch_musa._MUSAC._musa_getDevice()


def synchronize(device=None):
    _lazy_init()
    with torch_musa.device(device):
        return torch_musa._MUSAC._musa_synchronize()


if _state.config.facts["device_api_2_11"]:

    def get_device_properties(device=None):
        _lazy_init()
        device = _get_musa_device_index(device, optional=True)
        if device < 0 or device >= device_count():
            raise AssertionError("Invalid device id")
        return torch_musa._get_device_properties(device)

else:

    def get_device_properties(device):
        _lazy_init()
        device = _get_musa_device_index(device, optional=True)
        if device < 0 or device >= device_count():
            raise AssertionError("Invalid device id")
        return torch_musa._get_device_properties(device)


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    prop = get_device_properties(device)
    return prop.major, prop.minor


def can_device_access_peer(device, peer_device):
    _lazy_init()
    device = _get_musa_device_index(device, optional=True)
    peer_device = _get_musa_device_index(peer_device)
    if device < 0 or device >= device_count():
        raise AssertionError("Invalid device id")
    if peer_device < 0 or peer_device >= device_count():
        raise AssertionError("Invalid peer device id")
    return device != peer_device


def get_arch_list():
    if not is_available():
        return []
    from torchada._simulator.state import arch_flags

    return arch_flags.split()


if _state.config.facts["device_api_2_11"]:
    # 2.11.0.post2: the offload-arch flags of the build, and torch's synchronisation debug mode.

    def get_gencode_flags():
        arch_list = get_arch_list()
        if len(arch_list) == 0:
            return ""
        return " ".join(f"--offload-arch=mp_{arch.removeprefix('mp_')}" for arch in arch_list)

    def set_sync_debug_mode(debug_mode):
        _lazy_init()
        if isinstance(debug_mode, str):
            modes = {"default": 0, "warn": 1, "error": 2}
            if debug_mode not in modes:
                raise RuntimeError(
                    "invalid value of debug_mode, expected one of `default`, `warn`, `error`"
                )
            debug_mode = modes[debug_mode]
        torch_musa._MUSAC._musa_set_sync_debug_mode(debug_mode)

    def get_sync_debug_mode():
        _lazy_init()
        return torch_musa._MUSAC._musa_get_sync_debug_mode()


def is_bf16_supported(including_emulation=True):
    if not is_available():
        return False
    major, minor = get_device_capability(current_device())
    if major * 10 + minor >= 22:
        return True
    if not including_emulation:
        return False
    try:
        return bool(torch.tensor([1.0], dtype=torch.bfloat16, device="musa"))
    except Exception:
        return False


def is_tf32_supported():
    return is_bf16_supported(including_emulation=False)


def register_musa_hook():
    # The hooks interface is registered by the C module when it is configured.
    return None
