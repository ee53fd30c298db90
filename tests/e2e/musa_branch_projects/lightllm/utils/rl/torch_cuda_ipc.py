"""The RL weight bucket's device, from CUDA's answer alone (LightLLM's
lightllm/utils/rl/torch_cuda_ipc.py does so): CUDA code."""

import torch


def get_current_device_name() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def get_current_device_id():
    return torch.cuda.current_device() if torch.cuda.is_available() else "cpu"


def make_bucket(size: int) -> torch.Tensor:
    device = f"{get_current_device_name()}:{get_current_device_id()}"
    return torch.empty(size, dtype=torch.uint8, device=device)
