"""On an NVIDIA machine torchada is off, and ``torchada.utils.cpp_extension.load_inline`` is
torch's own: CUDA sources build with nvcc and the kernel runs on the CUDA device, as through
``torch.utils.cpp_extension``. Run on a machine with a CUDA GPU, a CUDA build of torch and the
CUDA toolkit (nvcc) and ninja:

    python -m pytest -q tests/extensions/test_published_module_gpu.py
"""

from __future__ import annotations

import pytest
import torch

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.gpu,
    pytest.mark.skipif(
        not (torch.version.cuda and torch.cuda.is_available()),
        reason="needs an NVIDIA CUDA device",
    ),
]

_PROGRAM = r'''
import inspect, sys, tempfile
import torchada
from torchada.utils.cpp_extension import CUDA_HOME, include_paths, load_inline
import torch
import torch.utils.cpp_extension as tce

assert not torchada.is_enabled() and torchada.is_cuda_platform()
assert load_inline is tce.load_inline and CUDA_HOME == tce.CUDA_HOME and CUDA_HOME
assert inspect.signature(include_paths) == inspect.signature(tce.include_paths)

cuda_src = """
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void axpb(const float* x, float* y, float a, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}
torch::Tensor affine(torch::Tensor x, double a, double b) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "a float32 CUDA tensor");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  int n = xc.numel();
  axpb<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), (float)a, (float)b, n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""
cpp_src = "torch::Tensor affine(torch::Tensor x, double a, double b);"
mod = load_inline(
    "torchada_gpu_affine", cpp_src, cuda_sources=cuda_src, functions=["affine"],
    extra_cuda_cflags=["-O2"], build_directory=tempfile.mkdtemp(), verbose=False,
)
x = torch.randn(1000, device="cuda")
y = mod.affine(x, 2.0, 0.5)
assert y.device.type == "cuda"
torch.testing.assert_close(y, x * 2.0 + 0.5)
print("GPU OK", torch.__version__, torch.cuda.get_device_name())
'''


def test_load_inline_with_cuda_sources_is_torchs_off_musa(py):
    proc = py(_PROGRAM, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "GPU OK" in proc.stdout
