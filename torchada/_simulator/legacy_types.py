"""Legacy tensor and storage types (torch.musa.FloatTensor, torch.musa.FloatStorage, ...).

torch_musa creates them in C; here the storages follow torch's own legacy-storage classes (the
device comes from the last component of the class's module name, ``torch_musa.core.musa``, where
torch_musa keeps them) and the tensor
types check device and dtype like the C types do. There are no complex storages, as in torch_musa.
"""

import torch
from torch.storage import _LegacyStorage
from torch.utils._device import _device_constructors  # noqa: F401  (keeps torch's registry warm)

_DTYPES = {
    "Double": torch.double,
    "Float": torch.float,
    "Long": torch.long,
    "Int": torch.int,
    "Short": torch.short,
    "Char": torch.int8,
    "Byte": torch.uint8,
    "Half": torch.half,
    "Bool": torch.bool,
    "BFloat16": torch.bfloat16,
}


class _classproperty:
    def __init__(self, fn):
        self.fn = fn

    def __get__(self, obj, owner):
        return self.fn(owner)


class _MusaLegacyStorage(_LegacyStorage):
    @classmethod
    def from_buffer(cls, *args, **kwargs):
        raise RuntimeError("from_buffer: Not available for MUSA storage")

    @classmethod
    def _new_with_weak_ptr(cls, *args, **kwargs):
        raise RuntimeError("_new_with_weak_ptr: Not available for MUSA storage")

    @classmethod
    def _new_shared_filename(cls, manager, obj, size, *, device=None, dtype=None):
        raise RuntimeError("_new_shared_filename: Not available for MUSA storage")


class _LegacyTensorMeta(type):
    def __instancecheck__(cls, obj):
        return (
            isinstance(obj, torch.Tensor) and obj.device.type == "musa" and obj.dtype == cls.dtype
        )


class _MusaLegacyTensor(metaclass=_LegacyTensorMeta):
    dtype = None

    def __new__(cls, *args, device=None, **kwargs):
        # torch's legacy constructor: sizes (ints or a torch.Size) or one sequence of data, on
        # the current device or the one ``device`` names.
        if kwargs:
            name = next(iter(kwargs))
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument '{name}'")
        if device is None:
            device = torch.device("musa")
        elif isinstance(device, int):
            device = torch.device("musa", device)
        if len(args) == 1 and isinstance(args[0], torch.Size):
            args = tuple(args[0])
        if not args or all(isinstance(a, int) for a in args):
            return torch.empty(args, dtype=cls.dtype, device=device)
        if len(args) == 1:
            return torch.tensor(args[0], dtype=cls.dtype, device=device)
        raise TypeError(f"{cls.__name__}() takes sizes or one sequence of data")


def _make():
    out = {}
    for prefix, dtype in _DTYPES.items():
        storage = type(
            f"{prefix}Storage",
            (_MusaLegacyStorage,),
            {
                # torch derives a legacy storage's device from its module's last component.
                "__module__": "torch_musa.core.musa",
                "_dtype": _classproperty(lambda c, d=dtype: d),
                "dtype": _classproperty(lambda c, d=dtype: d),
            },
        )
        tensor = type(
            f"{prefix}Tensor",
            (_MusaLegacyTensor,),
            {"__module__": "torch_musa", "dtype": dtype, "is_musa": True, "is_sparse": False},
        )
        out[storage.__name__] = storage
        out[tensor.__name__] = tensor
    return out


globals().update(_make())
__all__ = [f"{p}{k}" for p in _DTYPES for k in ("Storage", "Tensor")]
