"""RNG (torch_musa/core/random.py): per-device generators, seeded lazily."""

import contextlib
import importlib
import os
import warnings

import torch

import torch_musa
from torchada._simulator import support as _support

from ._lazy_init import _lazy_call, _lazy_init
from .device import current_device, device_count  # noqa: F401

if importlib.import_module("torchada._simulator.state").config.facts["random_is_initialized"]:
    # 2.11.0.post2's set_rng_state clones the state only while MUSA is not initialized, so the
    # module imports is_initialized (core/random.py @e205050).
    from ._lazy_init import is_initialized  # noqa: F401

__all__ = [
    "get_rng_state",
    "get_rng_state_all",
    "set_rng_state",
    "set_rng_state_all",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "initial_seed",
    "fork_rng",
]

if importlib.import_module("torchada._simulator.state").config.facts["rng_align"]:
    # From 2.9.1: the RNG's grid sizing can follow an NVIDIA GPU's, so that a seeded program draws
    # the numbers it draws there. torch_musa's __init__ calls align_rng_to_nv_gpu() at import.
    __all__ += ["NV_GPU_REGISTRY", "align_rng_to_nv_gpu"]

    # name: (multiprocessors, threads per multiprocessor)
    NV_GPU_REGISTRY = {
        "V100": (80, 2048),
        "A100": (108, 2048),
        "A800": (108, 2048),
        "H100_PCIE": (114, 2048),
        "H100": (132, 2048),
        "H200": (132, 2048),
        "H800": (132, 2048),
        "B200": (192, 2048),
    }

    def align_rng_to_nv_gpu(gpu_name=None):
        """Set TORCH_ARCH_MP_COUNT and TORCH_ARCH_MAXTHREADS_PER_MP from ``gpu_name`` (default:
        TORCH_RNG_ALIGN) unless both are set; ValueError for a GPU the registry lacks."""
        if os.environ.get("TORCH_ARCH_MP_COUNT") and os.environ.get("TORCH_ARCH_MAXTHREADS_PER_MP"):
            return
        if gpu_name is None:
            gpu_name = os.environ.get("TORCH_RNG_ALIGN")
        if gpu_name is None:
            return
        name = gpu_name.upper().replace("-", "_")
        if name not in NV_GPU_REGISTRY:
            raise ValueError(
                f"Unknown NV GPU '{gpu_name}'. "
                f"Available: {', '.join(sorted(NV_GPU_REGISTRY.keys()))}"
            )
        mp_count, max_threads = NV_GPU_REGISTRY[name]
        os.environ["TORCH_ARCH_MP_COUNT"] = str(mp_count)
        os.environ["TORCH_ARCH_MAXTHREADS_PER_MP"] = str(max_threads)


def get_rng_state(device="musa"):
    _lazy_init()
    return torch_musa.default_generators[_support.generator_index(device)].get_state()


def get_rng_state_all():
    return [get_rng_state(i) for i in range(torch_musa.device_count())]


def set_rng_state(new_state, device="musa"):
    with torch._C._DisableFuncTorch():
        new_state_copy = new_state.clone(memory_format=torch.contiguous_format)

    def cb():
        torch_musa.default_generators[_support.generator_index(device)].set_state(new_state_copy)

    _lazy_call(cb)


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed):
    seed = int(seed)

    def cb():
        torch_musa.default_generators[torch_musa.current_device()].manual_seed(seed)

    _lazy_call(cb, seed=True)


def manual_seed_all(seed):
    seed = int(seed)

    def cb():
        for gen in torch_musa.default_generators:
            gen.manual_seed(seed)

    _lazy_call(cb, seed_all=True)


def seed():
    def cb():
        torch_musa.default_generators[torch_musa.current_device()].seed()

    _lazy_call(cb)


def seed_all():
    def cb():
        random_seed = 0
        seeded = False
        for gen in torch_musa.default_generators:
            if not seeded:
                gen.seed()
                random_seed = gen.initial_seed()
                seeded = True
            else:
                gen.manual_seed(random_seed)

    _lazy_call(cb)


def initial_seed():
    _lazy_init()
    return torch_musa.default_generators[torch_musa.current_device()].initial_seed()


@contextlib.contextmanager
def fork_rng(
    devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="musa"
):
    device_mod = getattr(torch, device_type, None)
    if device_mod is None:
        raise RuntimeError(f"torch has no module of `{device_type}`, you should register a module")
    if not enabled:
        yield
        return
    if devices is None:
        num_devices = device_mod.device_count()
        if num_devices > 1:
            warnings.warn(
                f"{device_type.upper()} reports that you have {num_devices} available devices, and "
                f"you have used {_caller} without explicitly specifying which devices are being "
                "used.",
                stacklevel=3,
            )
        devices = list(range(min(num_devices, 1)))
    else:
        devices = list(devices)
    cpu_rng_state = torch.get_rng_state()
    device_rng_states = [device_mod.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        torch.set_rng_state(cpu_rng_state)
        for d, state in zip(devices, device_rng_states):
            device_mod.set_rng_state(state, d)
