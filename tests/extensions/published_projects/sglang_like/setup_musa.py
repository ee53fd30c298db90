# Builds sgl_like.common_ops the way SGLang's setup_musa.py builds sgl-kernel: torch first, then
# torchada, then torch.utils.cpp_extension's CUDAExtension and BuildExtension.
import os
import sys
from pathlib import Path

# isort: off
import torch
import torchada  # noqa: F401

# isort: on
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

root = Path(__file__).parent.resolve()
operator_namespace = "sgl_like"
include_dirs = [root / "csrc"]
sources = ["csrc/common_extension_musa.cc", "csrc/elementwise/activation.cc"]

# SGLang also passes "force_mcc" and links -lmublasLt; the simulator has neither mcc nor mublasLt.
cxx_flags = ["-O1"]
libraries = ["c10", "torch", "torch_python"]
extra_link_args = ["-Wl,-rpath,$ORIGIN/../../torch/lib"]

mtgpu_target = os.environ.get("MTGPU_TARGET", "mp_31")
if torch.musa.is_available():
    prop = torch.musa.get_device_properties(0)
    mtgpu_target = f"mp_{prop.major}{prop.minor}"
if mtgpu_target not in ["mp_22", "mp_31"]:
    print(f"Unsupported GPU architecture '{mtgpu_target}'. Expected 'mp_22' or 'mp_31'.")
    sys.exit(1)

mcc_flags = [
    "-DNDEBUG",
    f"-DOPERATOR_NAMESPACE={operator_namespace}",
    "-O3",
    "-std=c++17",
    f"--cuda-gpu-arch={mtgpu_target}",
    "-x",
    "musa",
    "-mtgpu",
    "-DUSE_MUSA",
]


class _CustomBuildExt(BuildExtension):
    def run(self):
        print(f"sgl_like: building for {mtgpu_target}")
        super().run()


setup(
    name="sgl-like",
    version="0.0.1",
    packages=["sgl_like"],
    package_dir={"": "python"},
    ext_modules=[
        CUDAExtension(
            name="sgl_like.common_ops",
            sources=sources,
            include_dirs=include_dirs,
            extra_compile_args={"mcc": mcc_flags, "cxx": cxx_flags},
            libraries=libraries,
            extra_link_args=extra_link_args,
            py_limited_api=False,
        )
    ],
    cmdclass={"build_ext": _CustomBuildExt.with_options(use_ninja=True)},
)
