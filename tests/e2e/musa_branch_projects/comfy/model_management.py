"""The dtype choice and cache release of an image-generation UI, from CUDA's answers (ComfyUI's
comfy/model_management.py does so): CUDA code."""

import torch


def get_torch_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device(torch.cuda.current_device())
    return torch.device("cpu")


def should_use_fp16(device: torch.device) -> bool:
    if device.type == "cpu":
        return False
    props = torch.cuda.get_device_properties(device)
    if props.major >= 8:
        return True
    return props.major >= 7


def soft_empty_cache() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.ipc_collect()
