"""Builds the process-group adapter at first import, the way Mooncake's mooncake/pg.py does on
MUSA: torchada imported, a private copy of the sources ported with
BuildExtension._port_directory, then torchada.utils.cpp_extension.load() with extra_cuda_cflags
and library_paths()."""

import os
import shutil
from pathlib import Path

import torch

_SOURCE_NAMES = ("pg_py.cpp",)


def _using_musa() -> bool:
    return os.environ.get("MOONCAKE_LIKE_USE_MUSA", "").upper() in {"1", "ON", "TRUE", "YES"}


def _build_adapter(source_dir: Path, build_dir: Path):
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    extra_cflags = ["-std=c++17", "-O1", f"-D_GLIBCXX_USE_CXX11_ABI={abi}"]
    if _using_musa():
        import torchada  # noqa: F401
        from torchada.utils.cpp_extension import BuildExtension, library_paths, load

        musa_input = build_dir / "musa_input"
        if not musa_input.exists():
            shutil.copytree(source_dir, musa_input)
        ported_dir = Path(object.__new__(BuildExtension)._port_directory(str(musa_input)))
        adapter_source_dir = ported_dir
        source_paths = []
        for name in _SOURCE_NAMES:
            candidates = (
                ported_dir / name,
                ported_dir / "src_musa" / name,
                ported_dir / "src" / name,
            )
            source_paths.append(next(path for path in candidates if path.is_file()))
        musa_target = os.environ.get("MTGPU_TARGET", "mp_31")
        extra_cuda_cflags = [f"--cuda-gpu-arch={musa_target}", "-x", "musa", "-mtgpu", "-DUSE_MUSA"]
        extra_cflags += ["-DUSE_MUSA"]
    else:
        from torch.utils.cpp_extension import library_paths, load

        extra_cuda_cflags = None
        adapter_source_dir = source_dir
        source_paths = [source_dir / "src" / name for name in _SOURCE_NAMES]

    extra_ldflags = [f"-Wl,-rpath,{path}" for path in library_paths()]
    return load(
        name="_mooncake_like_pg_jit",
        sources=[str(path) for path in source_paths],
        extra_cflags=extra_cflags,
        extra_cuda_cflags=extra_cuda_cflags,
        extra_include_paths=[str(adapter_source_dir), str(adapter_source_dir / "include")],
        extra_ldflags=extra_ldflags,
        build_directory=str(build_dir),
        verbose=False,
        with_cuda=True,
    )


_build_dir = Path(os.environ["MOONCAKE_LIKE_PG_JIT_DIR"])
_build_dir.mkdir(parents=True, exist_ok=True)
backend_module = _build_adapter(Path(__file__).with_name("_pg_jit"), _build_dir)
globals().update({k: v for k, v in backend_module.__dict__.items() if not k.startswith("_")})
