"""torch.save/torch.load of musa storages (torch_musa/core/serialization.py).

``register_deserialization()`` changes torch's registry as torch_musa's does: a musa tagger and
restorer at priority 999, and torch's CUDA entry made to refuse "cuda" locations with advice for a
MUSA machine. torch's own PrivateUse1 entry (priority 23) runs first and already tags musa
storages "musa:N" and restores "musa[:N]" locations (``storage.to``); the 999 entry serves only
locations that one leaves alone. What a program sees change is the CUDA refusal.
"""

import torch

_REGISTRATION_KEY = 999


def _validate_musa_device(location):
    index = torch._utils._get_device_index(torch.device(location), optional=True, allow_cpu=False)
    index = index or 0
    if not torch.musa.is_available():
        raise RuntimeError(
            "Attempting to deserialize object on a MUSA device but "
            "torch.musa.device.is_available() is False. If you are running on a CPU-only "
            "machine, please use torch.load with map_location=torch.device('cpu') to map your "
            "storages to the CPU."
        )
    count = torch.musa.device_count()
    if index >= count:
        raise RuntimeError(
            f"Attempting to deserialize object on MUSA device {index} but "
            f"torch.musa.device.device_count() is {count}. Please use torch.load with "
            "map_location to map your storages to an existing device."
        )
    return index


def _musa_tag(obj):
    if obj.device.type != "musa":
        return None
    return f"musa:{obj.device.index}"


def _musa_deserialize(obj, location):
    if not location.startswith("musa"):
        return None
    index = _validate_musa_device(location)
    if not getattr(obj, "_torch_load_uninitialized", False):
        return obj.musa(index)
    # The legacy format restores an empty storage and reads its bytes in afterwards: allocate on
    # the device instead of copying nothing there.
    with torch.musa.device(index):
        return torch.UntypedStorage(obj.nbytes(), device=torch.device(location))


def _cuda_deserialize(_, location):
    # A MUSA machine has no CUDA device: a checkpoint saved on one must be mapped elsewhere.
    if location.startswith("cuda"):
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
            "is False. If you are running on a MUSA enabled machine, please use torch.load "
            "with map_location=torch.device('musa') or map_location=torch.device('cpu') to map "
            "your storages to the MUSA or CPU."
        )
    return None


def register_deserialization():
    registry = torch.serialization._package_registry
    torch.serialization.register_package(_REGISTRATION_KEY, _musa_tag, _musa_deserialize)
    # torch_musa swaps the deserializer of the registry's second entry (torch's CUDA one, priority
    # 20, once sorted) rather than patching torch, keeping its priority and tagger.
    priority, tagger, _ = registry.pop(1)
    torch.serialization.register_package(priority, tagger, _cuda_deserialize)
    registry.sort()
