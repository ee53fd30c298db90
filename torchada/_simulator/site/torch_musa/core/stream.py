"""Streams and events (torch_musa/core/stream.py). The simulator runs everything synchronously."""

import ctypes

import torch

import torch_musa
from torchada._simulator import state as _state
from torchada._simulator import support as _support

from ._lazy_init import _lazy_init
from ._utils import _get_musa_device_index
from .device import Device

# torch_musa's stream module has the device context manager under the name `device`. Assigned
# rather than imported under it, so that linters do not read the functions' `device` parameters
# as redefinitions.
device = Device
del Device


class Stream(torch_musa._MUSAC._MusaStreamBase):
    def __new__(cls, device=None, priority=0, **kwargs):
        # The keywords torch_musa's C constructor parses, with its checks and its choice: a
        # packed (stream_id, device_index, device_type), an external stream_ptr on the current
        # device, or a new stream from the pool.
        for key in kwargs:
            if key not in ("stream_id", "device_index", "device_type", "stream_ptr"):
                raise TypeError(f"'{key}' is an invalid keyword argument for this function")
        stream_ptr = int(kwargs.get("stream_ptr") or 0)
        if stream_ptr and priority != 0:
            raise RuntimeError("Priority was explicitly set for a external stream")
        if kwargs.get("stream_id") or kwargs.get("device_index") or kwargs.get("device_type"):
            packed = {k: kwargs.get(k, 0) for k in ("stream_id", "device_index", "device_type")}
            return super().__new__(cls, **packed)
        _lazy_init()
        with torch_musa.device(device):
            idx = torch_musa.current_device()
        if stream_ptr:
            return super().__new__(
                cls, stream_id=stream_ptr, device_index=idx, device_type=_support.MUSA_DEVICE_TYPE
            )
        stream = super().__new__(cls, device=torch.device("musa", idx), priority=priority)
        stream.priority = priority
        return stream

    def __init__(self, *args, **kwargs):
        # torch_musa's Stream has no __init__ of its own: __new__ did the work, and subclasses
        # (ExternalStream) take other arguments.
        pass

    @property
    def musa_stream(self):
        return torch_musa._MUSAC._sim_stream_native_handle(self.device_index, self.stream_id)

    def wait_event(self, event):
        event.wait(self)

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        if event is None:
            event = Event()
        event.record(self)
        return event

    def query(self):
        return True

    def synchronize(self):
        pass

    @staticmethod
    def priority_range():
        return (0, -1)

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self.musa_stream)

    def __eq__(self, o):
        if isinstance(o, Stream):
            return self.musa_stream == o.musa_stream and self.device == o.device
        return False

    def __hash__(self):
        return hash((self.musa_stream, self.device))

    def __repr__(self):
        return f"torch_musa.Stream device={self.device} musa_stream={self.musa_stream:#x}"


class ExternalStream(Stream):
    def __new__(cls, stream_ptr, device=None, **kwargs):
        with torch_musa.device(device):
            idx = torch_musa.current_device()
        return torch_musa._MUSAC._MusaStreamBase.__new__(
            cls, stream_id=int(stream_ptr), device_index=idx, device_type=_support.MUSA_DEVICE_TYPE
        )


if _state.config.facts["stream_from_external"]:

    def get_stream_from_external(data_ptr, device=None):
        """A stream over a MUSA stream made outside torch (its handle as an int)."""
        return ExternalStream(data_ptr, device)


class Event(torch_musa._MUSAC._MusaEventBase):
    if _state.config.facts["stream_from_external"]:
        # 2.9.1.post1: external=True makes an event recorded into a graph capture as an external
        # node; the simulator's events take the flag and behave the same otherwise.
        def __new__(cls, enable_timing=False, blocking=False, interprocess=False, external=False):
            return torch_musa._MUSAC._MusaEventBase.__new__(
                cls,
                device="musa",
                enable_timing=enable_timing,
                blocking=blocking,
                interprocess=interprocess,
            )

        def __init__(self, enable_timing=False, blocking=False, interprocess=False, external=False):
            self._recorded = False

    else:

        def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
            return torch_musa._MUSAC._MusaEventBase.__new__(
                cls,
                device="musa",
                enable_timing=enable_timing,
                blocking=blocking,
                interprocess=interprocess,
            )

        def __init__(self, enable_timing=False, blocking=False, interprocess=False):
            self._recorded = False

    @property
    def device(self):
        # torch_musa's event has no device until it is recorded.
        return super().device if self._recorded else None

    @classmethod
    def from_ipc_handle(cls, device, handle):
        raise RuntimeError("MUSA IPC event handles are not supported by the simulator")

    def record(self, stream=None):
        if stream is None:
            stream = current_stream()
        super().record(stream)
        self._recorded = True

    def wait(self, stream=None):
        if stream is None:
            stream = current_stream()
        super().wait(stream)

    def query(self):
        return super().query()

    def elapsed_time(self, end_event):
        return torch_musa._MUSAC._musa_elapsedTime(self.event_id, end_event.event_id)

    def synchronize(self):
        super().synchronize()

    def ipc_handle(self):
        raise RuntimeError("MUSA IPC event handles are not supported by the simulator")

    @property
    def musa_event(self):
        return self.event_id

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self.musa_event)

    def __repr__(self):
        if self._recorded:
            return f"<torch_musa.Event {self.musa_event:#x}>"
        return "<torch_musa.Event uninitialized>"


def current_stream(device=None):
    _lazy_init()
    idx = _get_musa_device_index(device, optional=True)
    stream_id, device_index, device_type = torch_musa._MUSAC._musa_getCurrentStream(idx)
    return Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)


def default_stream(device=None):
    _lazy_init()
    idx = _get_musa_device_index(device, optional=True)
    return Stream(stream_id=0, device_index=idx, device_type=_support.MUSA_DEVICE_TYPE)


def _set_stream_by_id(stream_id, device_index, device_type):
    torch_musa._MUSAC._musa_setStream(stream_id, device_index, device_type)


def set_stream(stream):
    if stream is None:
        return
    _lazy_init()
    _set_stream_by_id(stream.stream_id, stream.device_index, stream.device_type)


class StreamContext:
    cur_stream = None

    def __init__(self, stream):
        self.stream = stream
        self.idx = _get_musa_device_index(None, True)
        if not torch.jit.is_scripting() and self.idx is None:
            self.idx = -1
        self.src_prev_stream = None
        self.dst_prev_stream = None

    def __enter__(self):
        cur_stream = self.stream
        if cur_stream is None or self.idx == -1:
            return
        self.src_prev_stream = current_stream(None)
        if self.src_prev_stream.device != cur_stream.device:
            with torch_musa.device(cur_stream.device):
                self.dst_prev_stream = current_stream(cur_stream.device)
        set_stream(cur_stream)

    def __exit__(self, type, value, traceback):
        cur_stream = self.stream
        if cur_stream is None or self.idx == -1:
            return
        if self.src_prev_stream.device != cur_stream.device:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)


def stream(stream):
    return StreamContext(stream)
