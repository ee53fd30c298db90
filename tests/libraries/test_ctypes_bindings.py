"""ctypes bindings to CUDA libraries, answered by the (simulated) MUSA SDK."""

from __future__ import annotations

import ctypes
import functools
import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
from conftest import run_python

from torchada._libraries import ctypes_bindings as _ctypes

pytestmark = pytest.mark.usefixtures("torchada_on", "musa_runtime_errors_read")


# This test module imported ctypes before torchada was on: like any such module, it holds the
# original. Code imported afterwards (the user's program) sees the proxy, reached here by name.
def CDLL(*args, **kwargs):
    return sys.modules["ctypes"].CDLL(*args, **kwargs)


class CudaRT:
    """The pattern inference servers use: a table of cuda* specs bound from the runtime library."""

    FUNCS = [
        ("cudaGetDeviceCount", ctypes.c_int, [ctypes.POINTER(ctypes.c_int)]),
        ("cudaMalloc", ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]),
        ("cudaMemset", ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]),
        (
            "cudaMemcpy",
            ctypes.c_int,
            [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int],
        ),
        ("cudaFree", ctypes.c_int, [ctypes.c_void_p]),
        ("cudaGetErrorString", ctypes.c_char_p, [ctypes.c_int]),
        ("cudaIpcGetMemHandle", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
    ]

    def __init__(self, so_file: str = "libcudart.so.12"):
        self.lib = CDLL(so_file)
        self.funcs = {}
        for name, restype, argtypes in self.FUNCS:
            f = getattr(self.lib, name)
            f.restype, f.argtypes = restype, argtypes
            self.funcs[name] = f


def test_runtime_round_trip():
    rt = CudaRT()
    count = ctypes.c_int()
    assert rt.funcs["cudaGetDeviceCount"](ctypes.byref(count)) == 0 and count.value == 2
    ptr = ctypes.c_void_p()
    assert rt.funcs["cudaMalloc"](ctypes.byref(ptr), 64) == 0 and ptr.value
    assert rt.funcs["cudaMemset"](ptr, 7, 64) == 0
    host = (ctypes.c_ubyte * 64)()
    assert rt.funcs["cudaMemcpy"](ctypes.addressof(host), ptr, 64, 2) == 0  # device to host
    assert list(host) == [7] * 64
    src = (ctypes.c_ubyte * 64)(*range(64))
    assert rt.funcs["cudaMemcpy"](ptr, ctypes.addressof(src), 64, 1) == 0
    assert rt.funcs["cudaMemcpy"](ctypes.addressof(host), ptr, 64, 2) == 0
    assert list(host) == list(range(64))
    assert rt.funcs["cudaFree"](ptr) == 0
    handle = (ctypes.c_byte * 64)()
    code = rt.funcs["cudaIpcGetMemHandle"](ctypes.addressof(handle), ptr)
    assert code == 801  # the simulator's documented musaErrorNotSupported
    assert rt.funcs["cudaGetErrorString"](code) == b"operation not supported"


def test_torch_streams_and_events_are_runtime_handles():
    # The pattern of libraries that synchronize torch's streams through the runtime themselves.
    import torch

    rt = CDLL("libcudart.so")
    rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    rt.cudaEventSynchronize.argtypes = [ctypes.c_void_p]
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        handle = torch.cuda.current_stream().cuda_stream
        assert handle == side.cuda_stream and handle != 0
        y = torch.ones(4, device="cuda") * 3
        done = torch.cuda.Event()
        done.record()
    assert rt.cudaStreamSynchronize(handle) == 0
    assert rt.cudaEventSynchronize(done.cuda_event) == 0
    assert rt.cudaStreamSynchronize(torch.cuda.current_stream().cuda_stream) == 0  # default: 0
    assert y.sum().item() == 12.0


def test_library_and_symbol_mapping():
    lib = CDLL("libcudart.so")
    assert lib._name.endswith("libmusart.so")
    assert lib.cudaMalloc is lib.cudaMalloc  # cached after the first access
    assert lib["cudaFree"] is not None
    with pytest.raises(AttributeError, match="'cudaNoSuchThing'.*'musaNoSuchThing'"):
        lib.cudaNoSuchThing
    nccl = sys.modules["ctypes"].cdll.LoadLibrary("libnccl.so.2")
    version = ctypes.c_int()
    assert nccl.ncclGetVersion(ctypes.byref(version)) == 0 and version.value > 0
    blas = CDLL("/usr/local/cuda/lib64/libcublas.so.12")
    assert blas._name.endswith("libmublas.so") and callable(blas.cublasCreate)
    driver = CDLL("libcuda.so.1")
    assert driver.cuInit(0) == 0
    assert sys.modules["ctypes"].PyDLL("libcurand.so.10").curandCreateGenerator is not None


def test_musa_libraries_opened_by_their_own_names_answer_cuda_names():
    # The published adapter's direction: a program (or a serving framework configured with
    # VLLM_NCCL_SO_PATH=/path/libmccl.so) opens the MUSA library itself and binds CUDA names.
    directory = _ctypes.musa_library_dir()
    rt = CudaRT(f"{directory}/libmusart.so")
    count = ctypes.c_int()
    assert rt.funcs["cudaGetDeviceCount"](ctypes.byref(count)) == 0 and count.value == 2
    assert rt.lib.musaMalloc is not None  # its own names still work
    nccl = CDLL(f"{directory}/libmccl.so")
    version = ctypes.c_int()
    assert nccl.ncclGetVersion(ctypes.byref(version)) == 0 and version.value > 0
    assert callable(CDLL(f"{directory}/libmublas.so").cublasCreate)
    with pytest.raises(AttributeError, match="'cudaNoSuchThing'.*'musaNoSuchThing'"):
        rt.lib.cudaNoSuchThing


def test_library_names_given_as_bytes():
    # On a machine with NVIDIA's toolkit registered with the loader, bytes used to bypass the
    # translation and load NVIDIA's libcudart.
    lib = CDLL(b"libcudart.so.12")
    assert lib._name.endswith("libmusart.so") and lib.cudaMalloc is not None
    assert CDLL(b"/usr/local/cuda/lib64/libnccl.so.2")._name.endswith("libmccl.so")


def test_references_taken_before_torchada_was_on():
    # This module's `ctypes` is the original module, imported before torchada was enabled: its
    # CDLL class and cdll loader answer CUDA names all the same, with str or bytes names.
    lib = ctypes.CDLL("libcudart.so.12")
    assert type(lib) is ctypes.CDLL and lib._name.endswith("libmusart.so")
    count = ctypes.c_int()
    assert lib.cudaGetDeviceCount(ctypes.byref(count)) == 0 and count.value == 2
    nccl = ctypes.cdll.LoadLibrary(b"libnccl.so.2")
    version = ctypes.c_int()
    assert nccl.ncclGetVersion(ctypes.byref(version)) == 0 and version.value > 0
    with pytest.raises(AttributeError, match="'cudaNoSuchThing'.*'musaNoSuchThing'"):
        lib.cudaNoSuchThing
    assert ctypes.CDLL("libm.so.6").cos is not None  # other libraries as they were


def test_other_libraries_untouched():
    libc = CDLL("libc.so.6")
    assert type(libc) is _ctypes._RealCDLL
    proxied = sys.modules["ctypes"].CDLL
    assert isinstance(libc, proxied) and isinstance(CDLL("libcudart.so"), proxied)
    assert isinstance(CDLL("libcudart.so"), ctypes.CDLL)
    assert libc.strlen(b"abc") == 3
    with pytest.raises(AttributeError):
        libc.cudaMalloc
    assert sys.modules["ctypes.util"].find_library("c") == _ctypes._real_find_library("c")
    for odd in ("libcudart_static.a", "libcudartx.so", "mylibcudart.so"):
        assert _ctypes.map_library(odd) == (odd, None)


def test_find_library_and_missing_paths():
    found = sys.modules["ctypes.util"].find_library("cudart")
    assert found and found.endswith("libmusart.so")
    with pytest.raises(OSError) as err:
        CDLL("libcublasLt.so.12")  # no MUSA counterpart in the simulated SDK
    assert "libcublasLt.so.12" in str(err.value) and "libmublasLt.so" in str(err.value)
    with pytest.raises(OSError, match="nope/libfoo.so"):
        CDLL("/nope/libfoo.so")  # not a CUDA library: ctypes' own error


def test_a_cuda_library_torchada_cannot_build_is_an_oserror(monkeypatch):
    """libnvidia-ml.so.1 is torchada's own library over MTML; where it cannot be built (no C
    compiler) the library is not there, and ctypes says so as it does: OSError (which
    nvidia-ml-py turns into NVMLError_LibraryNotFound), and find_library answers None."""
    from torchada._libraries import nvml_library
    from torchada._native.build import NativeBuildError

    def no_compiler(*args, **kwargs):
        raise NativeBuildError("building torchada_nvml_shim failed: cc: not found")

    monkeypatch.setattr(nvml_library, "library_path", no_compiler)
    with pytest.raises(OSError, match="cc: not found") as err:
        CDLL("libnvidia-ml.so.1")
    assert "libnvidia-ml" in str(err.value)
    with pytest.raises(OSError, match="cc: not found"):
        ctypes.CDLL("libnvidia-ml.so.1")  # a reference taken before torchada was on
    assert sys.modules["ctypes.util"].find_library("nvidia-ml") is None


def test_user_subclass_and_loaded_twice():
    class MyLib(sys.modules["ctypes"].CDLL):
        pass

    lib = MyLib("libcudart.so.12")
    assert isinstance(lib, MyLib) and lib._name.endswith("libmusart.so")
    a, b = CDLL("libcudart.so"), CDLL("libcudart.so.12")
    assert a.cudaGetDeviceCount is not None and b.cudaGetDeviceCount is not None


def test_concurrent_first_access():
    lib = CDLL("libcudart.so")
    seen = []
    barrier = threading.Barrier(8)

    def worker():
        barrier.wait()
        seen.append(lib.cudaDeviceSynchronize)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 8 and all(callable(f) for f in seen)
    assert lib.cudaDeviceSynchronize() == 0


# ---------------------------------------------------------------- zero-configuration discovery
@functools.lru_cache(maxsize=None)
def _torchs_own_libcudart():
    # A CUDA build of torch maps its own CUDA runtime at import (a MUSA one maps none): the paths
    # `import torch` maps without torchada, which the program on MUSA would not meet.
    code = "import torch\nfor l in open('/proc/self/maps'):\n    'libcudart' in l and print(l)"
    out = run_python(code, env={"TORCHADA_DISABLE": "1"})
    assert out.returncode == 0, out.stderr
    return frozenset(line[line.index("/") :].strip() for line in out.stdout.split("\n") if line)


def _loaded_libcudart():
    # What vLLM's and SGLang's find_loaded_library("libcudart") do, past torch's own runtime.
    with open("/proc/self/maps") as f:
        for line in f:
            path = line[line.index("/") :].strip() if "libcudart" in line else None
            if path and path not in _torchs_own_libcudart():
                return path
    return None


def test_a_loaded_libcudart_is_found_in_proc_maps_and_answers_on_musa():
    path = _loaded_libcudart()
    assert path is not None and path.endswith("libcudart.so")
    rt = CudaRT(path)  # torchada's ctypes opens the MUSA runtime for a CUDA-named path
    count = ctypes.c_int()
    assert rt.funcs["cudaGetDeviceCount"](ctypes.byref(count)) == 0 and count.value == 2
    assert rt.lib._name.endswith("libmusart.so")


def test_the_mapped_library_forwards_cuda_functions_in_c():
    # C code that dlopens the path and calls cudaX reaches musaX: each forwarded function's slot
    # holds the MUSA runtime's function.
    from torchada._libraries import shims as _cuda_shims

    path = _loaded_libcudart()
    shim = _ctypes.open_untranslated(path)
    musart = _ctypes.open_untranslated(_ctypes.map_library("libcudart.so")[0])
    names = _cuda_shims.forwarded("libcudart")
    shim.torchada_shim_target.restype = ctypes.c_void_p
    assert len(names) >= 30 and "cudaIpcOpenMemHandle" in names
    for i, name in enumerate(names):
        musa_fn = ctypes.cast(musart["musa" + name[4:]], ctypes.c_void_p).value
        assert shim.torchada_shim_target(i) == musa_fn, name
    count = ctypes.c_int()
    assert shim.cudaGetDeviceCount(ctypes.byref(count)) == 0 and count.value == 2
    ptr = ctypes.c_void_p()
    assert shim.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(32)) == 0 and ptr.value
    assert shim.cudaMemset(ptr, 5, ctypes.c_size_t(32)) == 0
    host = (ctypes.c_ubyte * 32)()
    assert shim.cudaMemcpy(host, ptr, ctypes.c_size_t(32), 2) == 0 and list(host) == [5] * 32
    assert shim.cudaFree(ptr) == 0
    shim.cudaGetErrorString.restype = ctypes.c_char_p
    assert shim.cudaGetErrorString(1) == b"invalid argument"
    with pytest.raises(AttributeError):
        shim.cudaGetDeviceProperties  # struct layouts differ: deliberately not forwarded


def test_the_remembered_forwarding_library_is_used_only_while_its_build_is_intact(monkeypatch):
    # Activation takes the library's path from torchada's cache; a path whose build is gone or
    # damaged is built again, never loaded.
    from torchada._core import cache as _cache
    from torchada._libraries import shims as _cuda_shims
    from torchada._native.build import is_intact_build

    built = _cuda_shims.build("libcudart")
    assert built.name == "libcudart.so" and is_intact_build(built)
    assert str(built) in _loaded_libcudart()  # the library activation mapped
    stale = built.parent.parent / "gone" / "libcudart.so"
    real_derived = _cache.derived

    def derived(name, sources, compute):
        if name.startswith("cuda-shim-library-"):
            return str(stale)  # what an earlier process remembered
        return real_derived(name, sources, compute)

    monkeypatch.setattr(_cache, "derived", derived)
    assert not is_intact_build(stale)
    assert _cuda_shims.build("libcudart") == built


def test_a_build_whose_artefact_changed_is_not_intact(tmp_path, monkeypatch):
    from torchada._native import build as _build

    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "probe.c"
    source.write_text("int torchada_probe(void) { return 7; }\n")
    artefact = _build.build_shared_libraries("torchada_probe", [source])["probe"]
    assert _build.is_intact_build(artefact)
    assert ctypes.CDLL(str(artefact)).torchada_probe() == 7
    with open(artefact, "ab") as f:
        f.write(b"\0")  # a link cut short, a copy gone wrong
    assert not _build.is_intact_build(artefact)


def test_the_musa_runtime_is_found_from_the_path_remembered_while_it_is_loaded(monkeypatch):
    # The directory of the loaded libmusart: read from the loader's map once, then taken from the
    # path remembered in torchada's cache while that file is loaded in the process.
    from torchada._core import cache as _cache

    mapped = _ctypes._mapped_file("libmusart.so")
    assert mapped and os.path.basename(mapped).startswith("libmusart.so")
    assert _cache.recall("loaded-libmusart.so") == mapped  # written by the activation
    reads = []
    real_mapped_file = _ctypes._mapped_file
    monkeypatch.setattr(
        _ctypes, "_mapped_file", lambda stem: reads.append(stem) or real_mapped_file(stem)
    )
    assert _ctypes._loaded_library_dir("libmusart.so") == os.path.dirname(mapped)
    assert reads == []  # the loader answered: the map was not read
    assert _ctypes._is_loaded(mapped)

    # A remembered file that this process has not loaded (another install's) is not believed:
    # the map is read, and what it says is remembered instead.
    unloaded = os.path.join(os.path.dirname(mapped), "libnot-loaded.so")
    assert not _ctypes._is_loaded(unloaded)
    _cache.remember("loaded-libmusart.so", unloaded)
    assert _ctypes._loaded_library_dir("libmusart.so") == os.path.dirname(mapped)
    assert reads == ["libmusart.so"]
    assert _cache.recall("loaded-libmusart.so") == mapped


def test_a_remembered_fact_survives_processes_and_an_unwritable_cache_only_costs(
    tmp_path, monkeypatch, caplog
):
    from torchada._core import cache as _cache

    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(tmp_path / "cache"))
    assert _cache.recall("loaded-libexample.so") is None
    _cache.remember("loaded-libexample.so", "/opt/example/lib/libexample.so")
    code = "from torchada._core.cache import recall; print(recall('loaded-libexample.so'))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        # Another process, torchada off in it (an activation there would build into this cache).
        env={**os.environ, "TORCHADA_CACHE_DIR": str(tmp_path / "cache"), "TORCHADA_DISABLE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "/opt/example/lib/libexample.so"
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(blocked))  # a file where a folder must be
    with caplog.at_level("DEBUG", logger="torchada"):
        _cache.remember("loaded-libexample.so", "/x")
    assert _cache.recall("loaded-libexample.so") is None
    assert "cannot remember loaded-libexample.so" in caplog.text


def test_forwarding_library_switch_and_a_failed_build(py):
    code = """
        import ctypes, logging, json, sys
        records = []
        logging.getLogger("torchada").addHandler(logging.Handler())
        logging.getLogger("torchada").handlers[-1].emit = lambda r: records.append(r.getMessage())
        import torch, torchada
        from torchada import _simulator
        from torchada._libraries import shims as _cuda_shims
        from torchada._native import build as _build
        if sys.argv[1:] == ["no-compiler"]:
            def build(name):
                raise _build.NativeBuildError("building torchada_cuda_shims failed: cc: not found")
            _cuda_shims.build = build
        # A CUDA build of torch maps its own CUDA runtime at import: only what torchada maps counts.
        def libcudarts():
            return {ln.split()[-1] for ln in open("/proc/self/maps") if "libcudart" in ln}
        own = libcudarts()
        _simulator.activate()
        assert torchada.enable()
        mapped = bool(libcudarts() - own)
        print(json.dumps({"mapped": mapped, "said": [m for m in records if "libcudart" in m],
                          "works": torch.ones(2, device="cuda").sum().item()}))
    """
    off = py(code, env={"TORCHADA_DISABLE_CUDA_SHIMS": "1"})
    assert off.returncode == 0, off.stderr
    assert json.loads(off.stdout.splitlines()[-1]) == {"mapped": False, "said": [], "works": 2.0}
    # No C compiler: torchada says so once, names the switch, and everything else works.
    failed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), "no-compiler"],
        capture_output=True,
        text=True,
        env={**os.environ, "TORCHADA_SIMULATE": ""},
        timeout=300,
    )
    assert failed.returncode == 0, failed.stderr
    out = json.loads(failed.stdout.splitlines()[-1])
    assert out["mapped"] is False and out["works"] == 2.0 and len(out["said"]) == 1
    assert "cc: not found" in out["said"][0] and "TORCHADA_DISABLE_CUDA_SHIMS=1" in out["said"][0]


def test_function_names_follow_the_porters_rules(monkeypatch):
    from torchada.porting._ruleset import Rule

    nccl = CDLL("libnccl.so.2")
    # A function the porter's rules say MUSA lacks: the reason, not a bare dlsym failure.
    with pytest.raises(
        AttributeError,
        match=r"ncclCommCuDevice has no MUSA counterpart in "
        r"libmccl\.so: no confirmed MCCL spelling",
    ):
        nccl.ncclCommCuDevice
    # A rename that is not a prefix swap comes from the same rules.
    renamed = Rule("ncclGetLibraryVersion", "mcclGetVersion", "rename", "nccl")
    real = _ctypes._porting_rules("nccl")
    monkeypatch.setattr(_ctypes, "_porting_rules", lambda domain: {**real, renamed.cuda: renamed})
    version = ctypes.c_int()
    assert CDLL("libnccl.so.2").ncclGetLibraryVersion(ctypes.byref(version)) == 0
    assert version.value > 0
