"""Private torch hooks that real libraries and torch's own compiler read, answered for MUSA.

- ``torch._C._cuda_getCurrentRawStream(device_index)``: the raw handle of the current stream
  (Inductor's generated code and Triton launchers call it as ``get_raw_stream``);
- ``torch._inductor.autotune_process.CUDA_VISIBLE_DEVICES``: the variable Inductor sets to pin
  each autotuning subprocess to one device, which on MUSA is ``MUSA_VISIBLE_DEVICES``;
- ``torch.nn.attention.flex_attention._validate_device``: FlexAttention accepts musa tensors.

``torch.cuda._is_compiled`` and ``torch.cuda._device_count_nvml`` are rows of the torch.cuda
table (tables/torch_cuda.json).
"""

from __future__ import annotations

from typing import Any

import torch

from ._after_import import when_imported

_state: dict = {"patcher": None}


def _raw_stream(device_index: int) -> int:
    return torch.musa.current_stream(device_index).musa_stream


def _patch_autotune(module: Any) -> None:
    _state["patcher"].set_attr(module, "CUDA_VISIBLE_DEVICES", "MUSA_VISIBLE_DEVICES")


def _patch_flex_attention(module: Any) -> None:
    validate = module._validate_device

    def _validate_device(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
        # MUSA runs FlexAttention through the same compiled path as CUDA; torch checks the
        # device against a list of backends that predates PrivateUse1 support.
        if query.device.type == "musa":
            return None
        return validate(query, key, value)

    _state["patcher"].set_attr(module, "_validate_device", _validate_device)


def install(patcher: Any) -> None:
    _state["patcher"] = patcher
    patcher.on_undo(lambda: _state.update(patcher=None))
    if not hasattr(torch._C, "_cuda_getCurrentRawStream"):
        patcher.set_attr(torch._C, "_cuda_getCurrentRawStream", _raw_stream)
    when_imported("torch._inductor.autotune_process", _patch_autotune, _state)
    when_imported("torch.nn.attention.flex_attention", _patch_flex_attention, _state)
