"""On a real NVIDIA CUDA machine torchada changes nothing: same objects, same results, CUDA
extensions with real kernels still build, NCCL still runs. Skipped where there is no CUDA device."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.gpu,
    pytest.mark.skipif(
        not (torch.version.cuda and torch.cuda.is_available()),
        reason="needs an NVIDIA CUDA device",
    ),
]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Objects a CUDA program reaches; with torchada imported each must be the very same object.
IDENTITIES = """
import ctypes, sys
import torch, torch.distributed as dist, torch.utils.cpp_extension as cpp

def identities():
    return {
        "torch.cuda": id(sys.modules["torch.cuda"]),
        "torch.distributed": id(sys.modules["torch.distributed"]),
        "cpp_extension": id(sys.modules["torch.utils.cpp_extension"]),
        "ctypes": id(sys.modules["ctypes"]),
        "Stream": id(torch.cuda.Stream),
        "CUDAGraph": id(torch.cuda.CUDAGraph),
        "CUDAGraph.replay": id(torch.cuda.CUDAGraph.replay),
        "get_device_capability": id(torch.cuda.get_device_capability),
        "capability": torch.cuda.get_device_capability(),
        "arch_list": torch.cuda.get_arch_list(),
        "get_backend": id(dist.get_backend),
        "ProcessGroup.name": id(dist.ProcessGroup.name),
        "Tensor.cuda": id(torch.Tensor.cuda),
        "Tensor.to": id(torch.Tensor.to),
        "empty": id(torch.empty),
        "device": id(torch.device),
        "autocast": id(torch.autocast),
        "GradScaler": id(torch.amp.GradScaler),
        "init_process_group": id(dist.init_process_group),
        "CUDAExtension": id(cpp.CUDAExtension),
        "load": id(cpp.load),
        "CDLL": id(ctypes.CDLL),
        "meta_path": [type(f).__name__ for f in sys.meta_path],
        # No CUDA-named library of torchada's is mapped where CUDA is real.
        "torchada_libraries": sorted({line.split()[-1] for line in open("/proc/self/maps")
                                      if "torchada" in line and ".so" in line}),
        "device_eq": torch.device("cuda", 0) == torch.device("privateuseone", 0),
    }
"""

# A CUDA workload touching AMP, GradScaler, streams, events and a CUDA graph; prints a digest.
WORKLOAD = """
import hashlib, json
import torch, torch.nn as nn

torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 8)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cuda")
x = torch.randn(256, 64, device="cuda")
y = torch.randn(256, 8, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
losses = []
with torch.cuda.stream(side):
    for _ in range(10):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
torch.cuda.current_stream().wait_stream(side)
static_in = torch.randn(32, 64, device="cuda")
model.eval()
with torch.no_grad():
    warm = torch.cuda.Stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        model(static_in)
    torch.cuda.current_stream().wait_stream(warm)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = model(static_in)
    static_in.copy_(torch.ones(32, 64, device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    eager = model(torch.ones(32, 64, device="cuda"))
digest = hashlib.sha256()
for p in model.parameters():
    digest.update(p.detach().cpu().numpy().tobytes())
print(json.dumps({
    "losses": losses,
    "weights": digest.hexdigest(),
    "graph_equals_eager": bool(torch.equal(static_out, eager)),
    "device": str(x.device),
    "is_cuda": x.is_cuda,
}))
"""


def _python(args, env=None, cwd=REPO, timeout=600):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHADA_")}
    # Scripts run from temporary directories import this checkout's torchada, installed or not.
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_import_torchada_changes_no_object(tmp_path):
    code = IDENTITIES + textwrap.dedent(
        """
        import json
        before = identities()
        import torchada
        after = identities()
        torch.zeros(1, device="cuda")  # loads the CUDA runtime
        maps = open("/proc/self/maps").read().split()
        cudart = next(p for p in maps if "/libcudart.so" in p)  # the runtime torch loaded
        lib = ctypes.CDLL(cudart)
        try:  # nvidia-ml-py's own module, where it is installed; none where it is not
            import pynvml
            nvml = type(pynvml).__name__
        except ImportError as err:
            nvml = type(err).__name__
        print(json.dumps({"same": before == after, "before": before, "after": after,
                          "pynvml": nvml,
                          "platform": torchada.detect_platform().value,
                          "cdll_type": type(lib).__name__,
                          "cudaMalloc": hasattr(lib, "cudaMalloc"),
                          "cuda_home": torchada.CUDA_HOME == cpp.CUDA_HOME}))
    """
    )
    out = _json_lines(_python(["-c", code]).stdout)[-1]
    assert out["same"], (out["before"], out["after"])
    assert out["platform"] == "cuda"
    assert out["cdll_type"] == "CDLL" and out["cudaMalloc"]
    assert out["cuda_home"]
    assert out["pynvml"] in ("module", "ModuleNotFoundError")


def test_import_torchada_loads_only_the_platform_check():
    from conftest import OFF_MUSA_MODULES, modules_loaded_off_musa

    loaded = modules_loaded_off_musa()
    assert "torchada._core.platform" in loaded
    assert loaded <= OFF_MUSA_MODULES, sorted(loaded - OFF_MUSA_MODULES)


def test_workload_is_bitwise_identical_with_and_without_torchada(tmp_path):
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    imported = tmp_path / "workload_imported.py"
    imported.write_text("import torchada  # noqa: F401\n" + WORKLOAD)
    plain = _json_lines(_python([str(script)]).stdout)[-1]
    runner = _json_lines(_python(["-m", "torchada.run", str(script)]).stdout)[-1]
    with_import = _json_lines(_python([str(imported)]).stdout)[-1]
    assert plain["device"] == "cuda:0" and plain["is_cuda"] is True
    assert plain["graph_equals_eager"] is True
    assert plain["losses"][-1] < plain["losses"][0]
    assert runner == plain
    assert with_import == plain


KERNEL = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void axpy_kernel(const float* x, float* y, float a, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

torch::Tensor axpy(torch::Tensor x, torch::Tensor y, double a) {
  TORCH_CHECK(x.is_cuda() && y.is_cuda(), "axpy: CUDA tensors expected");
  const c10::cuda::CUDAGuard guard(x.device());
  auto out = y.clone();
  int64_t n = x.numel();
  auto stream = at::cuda::getCurrentCUDAStream();
  axpy_kernel<<<(n + 255) / 256, 256, 0, stream>>>(
      x.data_ptr<float>(), out.data_ptr<float>(), static_cast<float>(a), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("axpy", &axpy); }
"""


def test_cuda_extension_with_real_kernel_builds_with_torchada(tmp_path):
    (tmp_path / "axpy_kernel.cu").write_text(KERNEL)
    code = textwrap.dedent(
        f"""
        import json, torch, torchada
        from torch.utils.cpp_extension import load
        ext = load("torchada_axpy_check", [{str(tmp_path / "axpy_kernel.cu")!r}],
                   build_directory={str(tmp_path)!r}, verbose=False)
        x = torch.randn(10000, device="cuda")
        y = torch.randn(10000, device="cuda")
        out = ext.axpy(x, y, 2.5)
        # atol: the kernel fuses a*x+y (one rounding), the reference rounds twice.
        print(json.dumps({{"close": bool(torch.allclose(out, 2.5 * x + y, atol=1e-5)),
                           "max_err": (out - (2.5 * x + y)).abs().max().item(),
                           "device": str(out.device)}}))
    """
    )
    out = _json_lines(_python(["-c", code]).stdout)[-1]
    assert out["close"] is True, out
    assert out["device"] == "cuda:0"


def test_nccl_ddp_runs_untouched(tmp_path):
    nproc = str(torch.cuda.device_count())
    script = os.path.join(REPO, "examples", "ddp_cuda.py")
    imported = tmp_path / "ddp_imported.py"
    with open(script) as f:
        imported.write_text("import torchada  # noqa: F401\n" + f.read())
    launch = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", nproc]
    env = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
    runs = {
        "plain": _python([*launch, script], env=env),
        "runner": _python(["-m", "torchada.run", *launch, script], env=env),
        "imported": _python([*launch, str(imported)], env=env),
    }
    results = {k: sorted(_json_lines(p.stdout), key=lambda r: r["rank"]) for k, p in runs.items()}
    plain = results["plain"]
    assert len(plain) == int(nproc)
    world = int(nproc)
    for r in plain:
        assert r["backend"] == "nccl" and r["device"] == f"cuda:{r['rank']}"
        assert r["all_reduce_sum"] == [world * (world + 1) / 2, world * (world + 1)]
        assert r["all_gather"] == [10.0 * i for i in range(world)]
        assert r["losses"][-1] < r["losses"][0]
        assert r["weights"] == plain[0]["weights"]  # ranks agree
        assert r["max_diff_from_cpu_reference"] < 1e-4
    assert results["runner"] == plain
    assert results["imported"] == plain


# torchada.utils.cpp_extension (the published adapter's module) is torch's own here: load_inline
# with CUDA sources builds with nvcc and runs as through torch.utils.cpp_extension.
_LOAD_INLINE_CUDA = r"""
import inspect, json, sys
import torchada
from torchada.utils.cpp_extension import CUDA_HOME, include_paths, load_inline
import torch
import torch.utils.cpp_extension as tce

same = (load_inline is tce.load_inline and CUDA_HOME == tce.CUDA_HOME
        and inspect.signature(include_paths) == inspect.signature(tce.include_paths))
cuda_src = '''
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void axpb(const float* x, float* y, float a, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}
torch::Tensor affine(torch::Tensor x, double a, double b) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  int n = xc.numel();
  axpb<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), (float)a, (float)b, n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
'''
cpp_src = "torch::Tensor affine(torch::Tensor x, double a, double b);"
mod = load_inline("torchada_inline_affine", cpp_src,
                  cuda_sources=cuda_src, functions=["affine"], extra_cuda_cflags=["-O2"],
                  build_directory=sys.argv[1])
x = torch.randn(1000, device="cuda")
y = mod.affine(x, 2.0, 0.5)
print(json.dumps({"same": same, "enabled": torchada.is_enabled(), "device": str(y.device),
                  "close": bool(torch.allclose(y, 2.0 * x + 0.5))}))
"""


def test_published_module_load_inline_builds_cuda_sources(tmp_path):
    out = _json_lines(_python(["-c", _LOAD_INLINE_CUDA, str(tmp_path)]).stdout)[-1]
    assert out == {"same": True, "enabled": False, "device": "cuda:0", "close": True}, out
