# The published adapter's README quick start, verbatim in substance.
import torch

import torchada  # noqa: F401

x = torch.randn(10, 10).cuda()
print(torch.cuda.device_count())
torch.cuda.synchronize()
print("quickstart ok:", x.device, torchada.__version__)
