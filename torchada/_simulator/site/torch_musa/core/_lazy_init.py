"""Lazy initialisation, as torch_musa does it: nothing touches the device until first needed."""

import threading
import traceback

import torch_musa

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
