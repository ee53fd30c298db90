"""CUDA code that gates on the compute capability, as libraries do, and runs the branch it took.

- bf16 at capability >= 8.0 (vLLM's check_if_supports_dtype), else fp16;
- fp16 at major >= 7 (DeepSpeed's CUDA accelerator);
- grouped GEMM at major >= 8 (Megatron-core's --moe-grouped-gemm assert);
- FP8 at >= 8.9.

A tiny Hugging Face Llama is loaded in the dtype the bf16 gate chose, runs on the GPU and is
checked against the CPU model. torch's NVIDIA-only TMA gates and Inductor's CUDA device interface
are asked too (they must not see a Hopper), and Triton's NVIDIA target where Triton is installed.
Prints one JSON line.
"""

import json
import types

import torch
from transformers import AutoModelForCausalLM, LlamaConfig


def tiny_llama(path: str) -> None:
    sizes = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=1)
    config = LlamaConfig(num_attention_heads=2, num_key_value_heads=1, **sizes)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(path)


def nvidia_only() -> dict:
    """What torch's and Triton's NVIDIA-only capability callers see."""
    import torch.utils._triton as triton_utils
    from torch._dynamo.device_interface import CudaInterface

    seen = {"cuda_interface": CudaInterface.get_compute_capability()}
    tma = {}
    for name in ("has_triton_tma", "has_triton_tma_device", "_device_supports_tma"):
        gate = getattr(triton_utils, name, None)
        if gate is not None:
            tma[name] = gate()
    seen["tma"] = tma
    seen["has_triton"] = triton_utils.has_triton()  # for the 'cuda' device: NVIDIA's Triton
    try:
        from triton.backends.nvidia.driver import CudaDriver
    except ImportError:
        seen["triton_target"] = None
    else:
        driver = types.SimpleNamespace(
            get_current_device=torch.cuda.current_device,
            get_device_capability=torch.cuda.get_device_capability,
        )
        seen["triton_target"] = CudaDriver.get_current_target(driver).arch
    return seen


def main() -> None:
    import tempfile

    major, minor = torch.cuda.get_device_capability()
    props = torch.cuda.get_device_properties(0)
    gates = {
        "bf16": (major, minor) >= (8, 0),
        "fp16": major >= 7,
        "grouped_gemm": major >= 8,
        "fp8": (major, minor) >= (8, 9),
    }
    dtype = torch.bfloat16 if gates["bf16"] else torch.float16
    with tempfile.TemporaryDirectory() as path:
        tiny_llama(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to("cuda").eval()
        reference = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    ids = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits = model(ids.cuda()).logits
        expected = reference(ids).logits
    out = {
        "capability": [major, minor],
        "properties": [props.major, props.minor, props.name],
        "arch_list": torch.cuda.get_arch_list(),
        "gates": gates,
        "model_dtype": str(next(model.parameters()).dtype),
        "logits": [str(logits.dtype), logits.device.type],
        "max_abs_diff": (logits.float().cpu() - expected).abs().max().item(),
        "nvidia_only": nvidia_only(),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
