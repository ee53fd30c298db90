import json

import torch

from comfy import model_management as mm

released = []
empty_cache = torch.cuda.empty_cache
torch.cuda.empty_cache = lambda: released.append(True) or empty_cache()  # to see it called

device = mm.get_torch_device()
dtype = torch.float16 if mm.should_use_fp16(device) else torch.float32
latent = torch.randn(4, 64, 64, device=device, dtype=dtype)
held = torch.cuda.memory_reserved()
del latent
mm.soft_empty_cache()
print(
    json.dumps(
        {
            "device": str(device),
            "dtype": str(dtype),
            "reserved_while_held": held,
            "reserved_after": torch.cuda.memory_reserved(),
            "released": released,
        }
    )
)
