# Builds vllm_like._C_stable_libtorch the way vLLM-MUSA's setup.py builds vLLM's stable-ABI
# library: torchada imported before torch, the kit's box header force-included, its include
# directory added and -DCUDA_VERSION=0.
from pathlib import Path

# isort: off
# Activate torchada before importing the torch ecosystem.
import torchada  # noqa: F401
import torch  # noqa: F401

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

from torchada.utils.cpp_extension import (
    stable_compat_box_header as _ta_stable_box,
    stable_compat_include_dir as _ta_stable_inc,
)

# isort: on

root = Path(__file__).parent.resolve()
INCLUDE_DIRS = [root / "csrc"]
# vLLM-MUSA also passes "force_mcc" (compile .cpp with mcc) and its device flags; the simulator
# has no mcc, so the host sources go to the host compiler.
MCC_FLAGS = ["-DNDEBUG", "-O2", "-std=c++17", "-x", "musa", "-mtgpu", "-DUSE_MUSA"]
CXX_FLAGS = ["-O1"]
_STABLE_BOX_HEADER = _ta_stable_box()
STABLE_INCLUDE_DIRS = INCLUDE_DIRS + [_ta_stable_inc()]
STABLE_COMPILE_ARGS = {
    "mcc": MCC_FLAGS + ["-DCUDA_VERSION=0", "-include", _STABLE_BOX_HEADER],
    # Host sources here stand for vLLM's .cu kernels, so they get the device sources' define.
    "cxx": CXX_FLAGS + ["-DCUDA_VERSION=0", "-include", _STABLE_BOX_HEADER],
}
LINK_LIBRARIES = ["c10", "torch", "torch_python", "musart"]
STABLE_LINK_LIBRARIES = LINK_LIBRARIES + ["torch_cpu"]


class _CustomBuildExt(BuildExtension):
    def run(self):
        print("vllm_like: building the stable-ABI library")
        super().run()


setup(
    name="vllm_like",
    version="0.0.1",
    packages=["vllm_like"],
    ext_modules=[
        CUDAExtension(
            name="vllm_like._C_stable_libtorch",
            sources=[
                "csrc/libtorch_stable/torch_bindings.cpp",
                "csrc/libtorch_stable/kernels.cpp",
            ],
            include_dirs=STABLE_INCLUDE_DIRS,
            extra_compile_args=STABLE_COMPILE_ARGS,
            libraries=STABLE_LINK_LIBRARIES,
            extra_link_args=["-Wl,-rpath,$ORIGIN/../../torch/lib"],
            py_limited_api=False,
        )
    ],
    cmdclass={"build_ext": _CustomBuildExt},
)
