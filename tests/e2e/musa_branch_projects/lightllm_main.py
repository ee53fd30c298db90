import json

import torch

from lightllm.utils.rl.torch_cuda_ipc import make_bucket

weights = torch.arange(16, dtype=torch.float32)
bucket = make_bucket(weights.nbytes)
bucket.copy_(weights.view(torch.uint8))
back = bucket.view(torch.float32).cpu()
out = {"bucket": str(bucket.device), "is_cuda": bucket.is_cuda}
print(json.dumps({**out, "round_trip": torch.equal(back, weights)}))
