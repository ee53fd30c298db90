import json

import torch

from sglang.srt.utils import common  # its modules call is_musa() at import, which imports torchada

common.is_musa()
device = common.get_device()
memory = common.get_device_memory_capacity(device)
x = torch.ones(4, device=common.get_device(0))
out = {
    "device": device,
    "memory_mib": memory,
    "memory_is_number": isinstance(memory, (int, float)),
    "sm": common.get_device_sm(),
    "tensor": str(x.device),
    "cuda_program_sees": torch.cuda.is_available(),
}
print(json.dumps(out))
