"""Lazy initialisation, as torch_musa does it: nothing touches the device until first needed.

Also, as in torch_musa, the runtime's Python helpers (``musart``, ``MusaError``, ``check_error``, a
``device`` context manager) live here and are set onto ``torch_musa`` with the legacy storage
classes when this module is imported.
"""

import threading
import traceback

import torch_musa

from ._utils import _get_musa_device_index
from .musa import (
    BFloat16Storage,
    BoolStorage,
    ByteStorage,
    CharStorage,
    DoubleStorage,
    FloatStorage,
    HalfStorage,
    IntStorage,
    LongStorage,
    ShortStorage,
)

try:
    from torch_musa._MUSAC import _musart
except ImportError:
    _musart = None

_initialized = False
_tls = threading.local()
_initialization_lock = threading.Lock()
_queued_calls = []


class DeferredMusaCallError(Exception):
    pass


class _LazySeedTracker:
    # Only the latest seed call of each kind matters; replay them in call order.
    def __init__(self):
        self.manual_seed_all_cb = None
        self.manual_seed_cb = None
        self.call_order = []

    def queue_seed_all(self, cb, traceback):
        self.manual_seed_all_cb = (cb, traceback)
        self.call_order = [self.manual_seed_cb, self.manual_seed_all_cb]

    def queue_seed(self, cb, traceback):
        self.manual_seed_cb = (cb, traceback)
        self.call_order = [self.manual_seed_all_cb, self.manual_seed_cb]

    def get_calls(self):
        return self.call_order


_lazy_seed_tracker = _LazySeedTracker()

# Stays empty: torch_musa's C initialisation sets `default_generators` on torch_musa itself.
default_generators = ()


def is_initialized():
    return _initialized and not _is_in_bad_fork()


def _is_in_bad_fork():
    return torch_musa._MUSAC._musa_isInBadFork()


def _lazy_call(callable, **kwargs):
    if is_initialized():
        callable()
    else:
        if kwargs.get("seed_all", False):
            _lazy_seed_tracker.queue_seed_all(callable, traceback.format_stack())
        elif kwargs.get("seed", False):
            _lazy_seed_tracker.queue_seed(callable, traceback.format_stack())
        else:
            _queued_calls.append((callable, traceback.format_stack()))


def init():
    """Initialise MUSA now rather than at first use; nothing happens if it already is."""
    _lazy_init()


def _lazy_init():
    global _initialized
    if is_initialized() or hasattr(_tls, "is_initializing"):
        return
    with _initialization_lock:
        if is_initialized():
            return
        if _is_in_bad_fork():
            raise RuntimeError(
                "Cannot re-initialize MUSA in forked subprocess. To use MUSA with "
                "multiprocessing, you must use the 'spawn' start method"
            )
        if not hasattr(torch_musa._MUSAC, "_musa_getDeviceCount"):
            raise AssertionError("Torch not compiled with MUSA enabled")
        if _musart is None:
            raise AssertionError(
                "libmusart functions unavailable. It looks like you have a broken build?"
            )
        torch_musa._MUSAC._musa_init()
        count = torch_musa._MUSAC._musa_getDeviceCount()
        if count == 0:
            # torch_musa's C initialisation refuses a machine with no visible device.
            raise RuntimeError("No MUSA GPUs are available")
        # As in torch_musa, these names appear on the module only after initialisation.
        torch_musa.default_generators = tuple(
            torch_musa._MUSAC._musa_default_generator(i) for i in range(count)
        )
        torch_musa.has_half = True
        torch_musa._get_device_properties = torch_musa._MUSAC._get_device_properties
        _tls.is_initializing = True
        for calls in _lazy_seed_tracker.get_calls():
            if calls:
                _queued_calls.append(calls)
        try:
            for queued_call, orig_traceback in _queued_calls:
                try:
                    queued_call()
                except Exception as e:
                    msg = (
                        f"MUSA call failed lazily at initialization with error: {str(e)}\n\n"
                        f"MUSA call was originally invoked at:\n\n{''.join(orig_traceback)}"
                    )
                    raise DeferredMusaCallError(msg) from e
        finally:
            delattr(_tls, "is_initializing")
        _initialized = True


def musart():
    """The MUSA runtime module (``torch_musa._MUSAC._musart``), initialising MUSA first."""
    _lazy_init()
    return _musart


class MusaError(RuntimeError):
    def __init__(self, code):
        # Any code is accepted, known to libmusart or not.
        msg = _musart.musaGetErrorString(code)
        super().__init__(f"{msg} ({code})")


def check_error(res):
    if res != _musart.musaError.success:
        raise MusaError(res)


class device:
    """Selects a MUSA device inside a ``with`` block; None or a negative index changes nothing."""

    def __init__(self, device):
        self.idx = _get_musa_device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = torch_musa._exchange_device(self.idx)

    def __exit__(self, type, value, traceback):
        torch_musa._exchange_device(self.prev_idx)
        return False


# torch_musa exposes these at the top level by setting them from here, not by importing them.
torch_musa.DoubleStorage = DoubleStorage
torch_musa.FloatStorage = FloatStorage
torch_musa.LongStorage = LongStorage
torch_musa.IntStorage = IntStorage
torch_musa.ShortStorage = ShortStorage
torch_musa.CharStorage = CharStorage
torch_musa.ByteStorage = ByteStorage
torch_musa.HalfStorage = HalfStorage
torch_musa.BoolStorage = BoolStorage
torch_musa.BFloat16Storage = BFloat16Storage
torch_musa.musart = musart
torch_musa.MusaError = MusaError
torch_musa.check_error = check_error
