"""The simulated MUSA SDK libraries (csrc/simulator/stubs), driven through ctypes as a C program
would drive the real ones. Device memory is host memory, so every result is checked by value."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
import threading

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from torchada._simulator import boards, sdk

pytestmark = pytest.mark.usefixtures("musa_runtime_errors_read")

c_int_p = ctypes.POINTER(ctypes.c_int)
size_t = ctypes.c_size_t

# Codes documented at the top of each stub source.
musaSuccess, musaErrorInvalidValue, musaErrorMemoryAllocation = 0, 1, 2
musaErrorNoDevice, musaErrorInvalidDevice, musaErrorInvalidResourceHandle = 100, 101, 400
musaErrorPeerAccessAlreadyEnabled, musaErrorNotSupported = 704, 801
H2D, D2H, D2D = 1, 2, 3

PREFIXES = {
    "libmusart.so": "musa",
    "libmusa.so": "mu",
    "libmccl.so": "mccl",
    "libmublas.so": "mublas",
    "libmurand.so": "murand",
}

EXPORTS = {
    "libmusart.so": """musaMalloc musaFree musaMemcpy musaMemcpyAsync musaMemset musaMemsetAsync
        musaMemGetInfo musaGetDevice musaSetDevice musaGetDeviceCount musaGetDeviceProperties
        musaDeviceSynchronize musaStreamCreate musaStreamDestroy musaStreamSynchronize
        musaEventCreate musaEventRecord musaEventSynchronize musaEventDestroy musaEventElapsedTime
        musaGetLastError musaPeekAtLastError musaGetErrorString musaHostRegister
        musaHostUnregister musaMallocHost musaFreeHost musaIpcGetMemHandle musaIpcOpenMemHandle
        musaIpcCloseMemHandle musaDriverGetVersion musaRuntimeGetVersion musaDeviceCanAccessPeer
        musaDeviceEnablePeerAccess musaDeviceReset musaGraphCreate musaGraphDestroy
        musaGraphInstantiate musaGraphExecDestroy musaGraphLaunch""",
    "libmusa.so": """muInit muDriverGetVersion muDeviceGet muDeviceGetCount muDeviceGetAttribute
        muDeviceGetName muGetErrorString muCtxGetCurrent muMemAlloc muMemFree muMemcpyHtoD
        muMemcpyDtoH""",
    "libmccl.so": """mcclGetVersion mcclGetUniqueId mcclCommInitRank mcclCommDestroy mcclCommAbort
        mcclCommCount mcclCommUserRank mcclGetErrorString mcclAllReduce mcclBroadcast
        mcclAllGather mcclReduceScatter mcclReduce mcclGroupStart mcclGroupEnd mcclSend
        mcclRecv""",
    "libmublas.so": """mublasCreate mublasDestroy mublasSetStream mublasGetStream mublasSgemm
        mublasSetMathMode mublasGetVersion""",
    "libmurand.so": """murandCreateGenerator murandDestroyGenerator
        murandSetPseudoRandomGeneratorSeed murandGenerateUniform murandGenerateNormal""",
}

CUDA_NAMES = {
    "libmusart.so": ["cudaMalloc", "cudaFree", "cudaMemcpy", "cudaGetDeviceCount"],
    "libmusa.so": ["cuInit", "cuMemAlloc", "cuDeviceGetCount"],
    "libmccl.so": ["ncclAllReduce", "ncclGetUniqueId", "ncclCommInitRank"],
    "libmublas.so": ["cublasCreate_v2", "cublasSgemm_v2", "cublasSgemm"],
    "libmurand.so": ["curandCreateGenerator", "curandGenerateUniform"],
}


class DeviceProp(ctypes.Structure):
    # The simulator's musaDeviceProp, as documented in libmusart.c.
    _fields_ = [
        ("name", ctypes.c_char * 256),
        ("totalGlobalMem", size_t),
        ("major", ctypes.c_int),
        ("minor", ctypes.c_int),
        ("multiProcessorCount", ctypes.c_int),
        ("warpSize", ctypes.c_int),
        ("maxThreadsPerBlock", ctypes.c_int),
        ("isMultiGpuBoard", ctypes.c_int),
        ("integrated", ctypes.c_int),
        ("canMapHostMemory", ctypes.c_int),
        ("unifiedAddressing", ctypes.c_int),
        ("pciDeviceID", ctypes.c_int),
    ]


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


@pytest.fixture(autouse=True)
def _sim_env(monkeypatch):
    # The libraries read the environment on every call; start each test from the defaults.
    for name in ("TORCHADA_SIM_DEVICES", "MUSA_VISIBLE_DEVICES", "TORCHADA_SIM_BOARD"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def musart():
    lib = sdk.load("musart")
    lib.musaGetErrorString.restype = ctypes.c_char_p
    lib.musaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, size_t, ctypes.c_int]
    lib.musaMemset.argtypes = [ctypes.c_void_p, ctypes.c_int, size_t]
    lib.musaMemsetAsync.argtypes = [ctypes.c_void_p, ctypes.c_int, size_t, ctypes.c_void_p]
    lib.musaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), size_t]
    lib.musaFree.argtypes = [ctypes.c_void_p]
    lib.musaEventRecord.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.musaEventElapsedTime.argtypes = [
        ctypes.POINTER(ctypes.c_float),
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    lib.musaEventDestroy.argtypes = [ctypes.c_void_p]
    lib.musaEventSynchronize.argtypes = [ctypes.c_void_p]
    lib.musaStreamDestroy.argtypes = [ctypes.c_void_p]
    lib.musaStreamSynchronize.argtypes = [ctypes.c_void_p]
    return lib


def _malloc(lib, size: int) -> int:
    ptr = ctypes.c_void_p()
    assert lib.musaMalloc(ctypes.byref(ptr), size) == musaSuccess
    return ptr.value


def _count(lib) -> tuple[int, int]:
    n = ctypes.c_int(-1)
    err = lib.musaGetDeviceCount(ctypes.byref(n))
    return err, n.value


# ---------------------------------------------------------------- files and symbols
def test_library_paths_share_one_directory():
    paths = sdk.library_paths()
    assert sorted(paths) == sorted(PREFIXES) == sorted(sdk.LIBRARIES)
    assert all(p.is_file() for p in paths.values())
    assert {p.parent for p in paths.values()} == {sdk.library_dir()}
    env = sdk.with_library_dir({"LD_LIBRARY_PATH": "/opt/x"})
    assert env["LD_LIBRARY_PATH"].split(":") == [str(sdk.library_dir()), "/opt/x"]
    assert sdk.load("libmublas.so")._name == str(paths["libmublas.so"])
    with pytest.raises(ValueError, match="not a simulated MUSA library"):
        sdk.load("cudart")


def test_loadable_by_name_from_ld_library_path():
    code = "import ctypes; ctypes.CDLL('libmusart.so').musaMalloc; ctypes.CDLL('libmccl.so')"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=sdk.with_library_dir(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("lib_name", sorted(PREFIXES))
def test_exports_its_own_names_and_no_cuda_names(lib_name):
    lib = sdk.load(lib_name)
    for name in EXPORTS[lib_name].split():
        assert getattr(lib, name) is not None
    for name in CUDA_NAMES[lib_name]:
        with pytest.raises(AttributeError):
            getattr(lib, name)


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs binutils' nm")
@pytest.mark.parametrize("lib_name", sorted(PREFIXES))
def test_dynamic_symbols_carry_only_the_library_prefix(lib_name):
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(sdk.library_paths()[lib_name])],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    functions = {line.split()[-1] for line in out.splitlines() if " T " in line}
    assert functions == set(EXPORTS[lib_name].split())
    assert all(f.startswith(PREFIXES[lib_name]) for f in functions)


# ---------------------------------------------------------------- runtime: memory
def test_memory_round_trip_host_device_host(musart):
    size = 4096
    src = (ctypes.c_ubyte * size)(*[(i * 7) % 251 for i in range(size)])
    dst = (ctypes.c_ubyte * size)()
    free0, total = size_t(), size_t()
    assert musart.musaMemGetInfo(ctypes.byref(free0), ctypes.byref(total)) == musaSuccess

    dev = _malloc(musart, size)
    assert dev % 256 == 0
    free1 = size_t()
    musart.musaMemGetInfo(ctypes.byref(free1), ctypes.byref(total))
    assert free0.value - free1.value == size

    assert musart.musaMemcpy(dev, src, size, H2D) == musaSuccess
    dev2 = _malloc(musart, size)
    assert musart.musaMemcpy(dev2, dev, size, D2D) == musaSuccess
    assert musart.musaMemset(dev2 + 100, 0xAB, 50) == musaSuccess
    assert musart.musaMemsetAsync(dev2, 0x01, 10, None) == musaSuccess
    assert musart.musaMemcpy(dst, dev2, size, D2H) == musaSuccess
    expected = bytearray(src)
    expected[100:150] = b"\xab" * 50
    expected[0:10] = b"\x01" * 10
    assert bytes(dst) == bytes(expected)

    assert musart.musaFree(dev) == musaSuccess
    assert musart.musaFree(dev2) == musaSuccess
    free2 = size_t()
    musart.musaMemGetInfo(ctypes.byref(free2), ctypes.byref(total))
    assert free2.value == free0.value
    assert musart.musaFree(None) == musaSuccess


def test_mem_get_info_is_the_board_memory(musart, monkeypatch):
    free, total = size_t(), size_t()
    musart.musaMemGetInfo(ctypes.byref(free), ctypes.byref(total))
    assert total.value == boards.BOARDS["S4000"]["total_memory"]
    assert 0 < free.value <= total.value
    monkeypatch.setenv("TORCHADA_SIM_BOARD", "mtt s80")
    musart.musaMemGetInfo(ctypes.byref(free), ctypes.byref(total))
    assert total.value == boards.BOARDS["S80"]["total_memory"]


def test_errors_are_reported_and_cleared(musart):
    musart.musaGetLastError()
    assert musart.musaGetLastError() == musaSuccess  # reading the error cleared it
    assert musart.musaFree(0x1000) == musaErrorInvalidValue  # not from musaMalloc
    assert musart.musaPeekAtLastError() == musaErrorInvalidValue
    assert musart.musaGetLastError() == musaErrorInvalidValue
    assert musart.musaGetLastError() == musaSuccess
    assert musart.musaMemcpy(None, None, 8, 9) == 21  # musaErrorInvalidMemcpyDirection
    assert musart.musaGetLastError() == 21
    huge = ctypes.c_void_p()
    assert musart.musaMalloc(ctypes.byref(huge), 1 << 50) == musaErrorMemoryAllocation
    assert huge.value is None
    assert musart.musaGetErrorString(musaSuccess) == b"no error"
    assert musart.musaGetErrorString(musaErrorMemoryAllocation) == b"out of memory"
    assert musart.musaGetErrorString(musaErrorNotSupported) == b"operation not supported"
    assert musart.musaGetErrorString(12345) == b"unrecognized error code"
    musart.musaGetLastError()


def test_pinned_host_memory(musart):
    ptr = ctypes.c_void_p()
    assert musart.musaMallocHost(ctypes.byref(ptr), 64) == musaSuccess
    ctypes.memset(ptr, 3, 64)
    assert ctypes.string_at(ptr, 4) == b"\x03" * 4
    assert musart.musaHostRegister(ptr, size_t(64), 0) == musaSuccess
    assert musart.musaHostUnregister(ptr) == musaSuccess
    assert musart.musaFreeHost(ptr) == musaSuccess


def test_ipc_is_not_supported(musart):
    handle = (ctypes.c_char * 64)()
    dev = _malloc(musart, 64)
    assert musart.musaIpcGetMemHandle(handle, ctypes.c_void_p(dev)) == musaErrorNotSupported
    out = ctypes.c_void_p(1)
    opened = musart.musaIpcOpenMemHandle(ctypes.byref(out), handle, 1)
    assert opened == musaErrorNotSupported and out.value is None
    assert musart.musaIpcCloseMemHandle(ctypes.c_void_p(dev)) == musaErrorNotSupported
    assert musart.musaGetLastError() == musaErrorNotSupported
    musart.musaFree(dev)


# ---------------------------------------------------------------- runtime: devices
def test_device_count_follows_the_simulator_environment(musart, monkeypatch):
    assert _count(musart) == (musaSuccess, 2)
    monkeypatch.setenv("TORCHADA_SIM_DEVICES", "4")
    assert _count(musart) == (musaSuccess, 4)
    monkeypatch.setenv("MUSA_VISIBLE_DEVICES", "3,1")
    assert _count(musart) == (musaSuccess, 2)
    monkeypatch.setenv("TORCHADA_SIM_DEVICES", "0")
    monkeypatch.delenv("MUSA_VISIBLE_DEVICES")
    assert _count(musart) == (musaErrorNoDevice, 0)
    musart.musaGetLastError()


@pytest.mark.parametrize(
    "physical, visible",
    [
        ("2", "1"),
        ("4", "2,0"),
        ("4", "0,0,1"),
        ("4", "1,9,2"),
        ("3", ""),
        ("3", "x"),
        ("8", " 5 ,6"),
    ],
)
def test_visible_devices_parse_like_the_python_simulator(musart, monkeypatch, physical, visible):
    from torchada._simulator.config import read_config

    env = {"TORCHADA_SIM_DEVICES": physical, "MUSA_VISIBLE_DEVICES": visible}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    expected = read_config(env).device_count
    err, n = _count(musart)
    assert n == expected
    assert err == (musaSuccess if expected else musaErrorNoDevice)
    musart.musaGetLastError()


def test_set_get_device_and_properties(musart, monkeypatch):
    dev = ctypes.c_int(-1)
    assert musart.musaSetDevice(1) == musaSuccess
    assert musart.musaGetDevice(ctypes.byref(dev)) == musaSuccess and dev.value == 1
    assert musart.musaSetDevice(2) == musaErrorInvalidDevice
    assert musart.musaGetLastError() == musaErrorInvalidDevice
    seen = []  # the current device is per thread, as in the real runtime
    t = threading.Thread(
        target=lambda: (musart.musaGetDevice(ctypes.byref(dev)), seen.append(dev.value))
    )
    t.start()
    t.join()
    assert seen == [0]
    musart.musaSetDevice(0)

    prop = DeviceProp()
    assert musart.musaGetDeviceProperties(ctypes.byref(prop), 1) == musaSuccess
    spec = boards.BOARDS["S4000"]
    assert prop.name.decode() == spec["name"]
    assert (prop.major, prop.minor) == spec["capability"]
    assert prop.totalGlobalMem == spec["total_memory"]
    assert prop.multiProcessorCount == spec["sm_count"]
    monkeypatch.setenv("TORCHADA_SIM_BOARD", "S5000")
    musart.musaGetDeviceProperties(ctypes.byref(prop), 0)
    assert prop.name == b"MTT S5000" and (prop.major, prop.minor) == (3, 1)
    assert prop.totalGlobalMem == boards.BOARDS["S5000"]["total_memory"]
    assert musart.musaGetDeviceProperties(ctypes.byref(prop), 5) == musaErrorInvalidDevice
    musart.musaGetLastError()


def test_versions_match_the_simulated_sdk(musart):
    v = ctypes.c_int()
    assert musart.musaRuntimeGetVersion(ctypes.byref(v)) == musaSuccess
    assert v.value == int(boards.MUSA_VERSION)
    assert musart.musaDriverGetVersion(ctypes.byref(v)) == musaSuccess
    assert v.value == int(boards.MUSA_VERSION)


def test_peer_access(musart):
    can = ctypes.c_int(-1)
    assert musart.musaDeviceCanAccessPeer(ctypes.byref(can), 0, 1) == musaSuccess and can.value == 1
    assert musart.musaDeviceCanAccessPeer(ctypes.byref(can), 1, 1) == musaSuccess and can.value == 0
    assert musart.musaDeviceCanAccessPeer(ctypes.byref(can), 0, 7) == musaErrorInvalidDevice

    def enable_twice(out):
        musart.musaSetDevice(1)
        out += [musart.musaDeviceEnablePeerAccess(0, 0), musart.musaDeviceEnablePeerAccess(0, 0)]
        out.append(musart.musaDeviceEnablePeerAccess(1, 0))

    codes: list = []
    t = threading.Thread(target=enable_twice, args=(codes,))
    t.start()
    t.join()
    assert codes == [musaSuccess, musaErrorPeerAccessAlreadyEnabled, musaErrorInvalidDevice]
    musart.musaGetLastError()


def test_streams_and_events(musart):
    stream, start, end = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    assert musart.musaStreamCreate(ctypes.byref(stream)) == musaSuccess and stream.value
    assert musart.musaEventCreate(ctypes.byref(start)) == musaSuccess
    assert musart.musaEventCreate(ctypes.byref(end)) == musaSuccess
    ms = ctypes.c_float(-1)
    assert musart.musaEventElapsedTime(ctypes.byref(ms), start, end) == 400  # not recorded
    assert musart.musaEventRecord(start, stream) == musaSuccess
    sum(range(20000))
    assert musart.musaEventRecord(end, stream) == musaSuccess
    assert musart.musaEventSynchronize(end) == musaSuccess
    assert musart.musaStreamSynchronize(stream) == musaSuccess
    assert musart.musaStreamSynchronize(None) == musaSuccess
    assert musart.musaDeviceSynchronize() == musaSuccess
    assert musart.musaEventElapsedTime(ctypes.byref(ms), start, end) == musaSuccess
    assert 0.0 <= ms.value < 5000.0
    for event in (start, end):
        assert musart.musaEventDestroy(event) == musaSuccess
    assert musart.musaStreamDestroy(stream) == musaSuccess
    assert musart.musaStreamDestroy(None) == musaErrorInvalidResourceHandle
    musart.musaGetLastError()


def test_backend_streams_and_events_are_runtime_handles(musart, musa_sim):
    # As on a real machine, torch_musa's musa_stream / musa_event are the runtime's handles.
    side = musa_sim.Stream()
    assert side.musa_stream and musa_sim.current_stream().musa_stream == 0  # legacy default
    assert musart.musaStreamSynchronize(side.musa_stream) == musaSuccess
    assert (
        musa_sim.Stream(
            stream_id=side.stream_id, device_index=side.device_index, device_type=side.device_type
        ).musa_stream
        == side.musa_stream
    )
    start, end = musa_sim.Event(enable_timing=True), musa_sim.Event(enable_timing=True)
    start.record(side)
    sum(range(20000))
    end.record(side)
    assert musart.musaEventSynchronize(end.musa_event) == musaSuccess
    ms = ctypes.c_float(-1)
    assert musart.musaEventElapsedTime(ctypes.byref(ms), start.musa_event, end.musa_event) == 0
    assert 0.0 <= ms.value < 5000.0 and abs(ms.value - start.elapsed_time(end)) < 50.0
    assert musart.musaEventSynchronize(side.musa_stream) == musaErrorInvalidResourceHandle
    # A stream the runtime made, wrapped by torch_musa, keeps its handle.
    raw = ctypes.c_void_p()
    assert musart.musaStreamCreate(ctypes.byref(raw)) == musaSuccess
    external = musa_sim.ExternalStream(raw.value)
    assert external.musa_stream == raw.value
    with musa_sim.stream(external):
        assert musa_sim.current_stream().musa_stream == raw.value
        assert musart.musaStreamSynchronize(musa_sim.current_stream().musa_stream) == 0
    assert musart.musaStreamDestroy(raw) == musaSuccess


# ---------------------------------------------------------------- driver
def test_driver_needs_init_first():
    # muInit is process-wide state: check the uninitialised driver in a fresh interpreter.
    code = (
        "import ctypes; lib = ctypes.CDLL('libmusa.so'); n = ctypes.c_int(); "
        "print(lib.muDeviceGetCount(ctypes.byref(n)), lib.muInit(0), "
        "lib.muDeviceGetCount(ctypes.byref(n)), n.value)"
    )
    env = sdk.with_library_dir()
    env["TORCHADA_SIM_DEVICES"] = "3"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["3", "0", "0", "3"]  # NOT_INITIALIZED, then 3 devices


def test_driver_devices_and_memory():
    drv = sdk.load("musa")
    drv.muMemcpyHtoD.argtypes = [ctypes.c_ulonglong, ctypes.c_void_p, size_t]
    drv.muMemcpyDtoH.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong, size_t]
    drv.muMemFree.argtypes = [ctypes.c_ulonglong]
    assert drv.muInit(1) == 1  # flags must be 0
    assert drv.muInit(0) == 0
    n, dev, value = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    assert drv.muDeviceGetCount(ctypes.byref(n)) == 0 and n.value == 2
    assert drv.muDeviceGet(ctypes.byref(dev), 1) == 0 and dev.value == 1
    assert drv.muDeviceGet(ctypes.byref(dev), 2) == 101
    name = ctypes.create_string_buffer(64)
    assert drv.muDeviceGetName(name, 64, 0) == 0 and name.value == b"MTT S4000"
    for attribute, expected in [(75, 2), (76, 2), (16, 48)]:
        assert drv.muDeviceGetAttribute(ctypes.byref(value), attribute, 0) == 0
        assert value.value == expected
    assert drv.muDeviceGetAttribute(ctypes.byref(value), 99999, 0) == 1
    ctx = ctypes.c_void_p(1)
    assert drv.muCtxGetCurrent(ctypes.byref(ctx)) == 0 and ctx.value is None
    msg = ctypes.c_char_p()
    assert drv.muGetErrorString(101, ctypes.byref(msg)) == 0
    assert msg.value == b"invalid device ordinal"
    assert drv.muGetErrorString(424242, ctypes.byref(msg)) == 1
    version = ctypes.c_int()
    assert drv.muDriverGetVersion(ctypes.byref(version)) == 0
    assert version.value == int(boards.MUSA_VERSION)

    dptr = ctypes.c_ulonglong()
    assert drv.muMemAlloc(ctypes.byref(dptr), size_t(32)) == 0 and dptr.value
    data = (ctypes.c_float * 8)(*range(8))
    back = (ctypes.c_float * 8)()
    assert drv.muMemcpyHtoD(dptr.value, data, 32) == 0
    assert drv.muMemcpyDtoH(back, dptr.value, 32) == 0
    assert list(back) == list(range(8))
    assert drv.muMemFree(dptr.value) == 0
    assert drv.muMemFree(dptr.value) == 1  # double free is caught


# ---------------------------------------------------------------- mublas
@pytest.fixture(scope="module")
def mublas():
    lib = sdk.load("mublas")
    fp = ctypes.POINTER(ctypes.c_float)
    i = ctypes.c_int
    lib.mublasSgemm.argtypes = [ctypes.c_void_p, i, i, i, i, i, fp, ctypes.c_void_p, i]
    lib.mublasSgemm.argtypes += [ctypes.c_void_p, i, fp, ctypes.c_void_p, i]
    lib.mublasSetStream.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.mublasSetMathMode.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.mublasDestroy.argtypes = [ctypes.c_void_p]
    lib.mublasGetVersion.argtypes = [ctypes.c_void_p, c_int_p]
    lib.mublasGetStream.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    handle = ctypes.c_void_p()
    assert lib.mublasCreate(ctypes.byref(handle)) == 0
    yield lib, handle
    assert lib.mublasDestroy(handle) == 0


def _column_major(mat: torch.Tensor, ld: int) -> torch.Tensor:
    """``mat`` (rows x cols) stored column-major with leading dimension ``ld`` >= rows."""
    rows, cols = mat.shape
    buf = torch.full((max(cols, 1), ld), float("nan"))  # padding must never be read
    buf[:cols, :rows] = mat.t()
    return buf


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(0, 7),
    n=st.integers(0, 7),
    k=st.integers(0, 7),
    ta=st.booleans(),
    tb=st.booleans(),
    pad=st.integers(0, 3),
    alpha=st.sampled_from([1.0, -0.5, 2.0, 0.0]),
    beta=st.sampled_from([0.0, 1.0, 0.25]),
    seed=st.integers(0, 2**16),
)
def test_sgemm_matches_torch_matmul(mublas, m, n, k, ta, tb, pad, alpha, beta, seed):
    lib, handle = mublas
    gen = torch.Generator().manual_seed(seed)
    op_a = torch.randn(m, k, generator=gen)
    op_b = torch.randn(k, n, generator=gen)
    c0 = torch.randn(m, n, generator=gen)
    a_stored = op_a.t() if ta else op_a  # what sits in memory before the op is applied
    b_stored = op_b.t() if tb else op_b
    lda, ldb, ldc = max(a_stored.shape[0], 1) + pad, max(b_stored.shape[0], 1) + pad, max(m, 1)
    a_buf, b_buf = _column_major(a_stored, lda), _column_major(b_stored, ldb)
    c_buf = _column_major(c0, ldc).contiguous()
    if beta == 0.0:
        c_buf[: max(n, 1), :m] = float("nan")  # beta == 0 must ignore what C held
    fa, fb = ctypes.c_float(alpha), ctypes.c_float(beta)
    status = lib.mublasSgemm(
        handle, int(ta), int(tb), m, n, k, ctypes.byref(fa), a_buf.data_ptr(), lda,
        b_buf.data_ptr(), ldb, ctypes.byref(fb), c_buf.data_ptr(), ldc,
    )  # fmt: skip
    assert status == 0
    expected = alpha * (op_a @ op_b) + (beta * c0 if beta else 0)
    got = c_buf[:n, :m].t()
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_sgemm_rejects_bad_arguments_and_handle_api(mublas):
    lib, handle = mublas
    one = ctypes.c_float(1.0)
    buf = torch.zeros(16)
    p = buf.data_ptr()
    # lda smaller than m
    assert lib.mublasSgemm(handle, 0, 0, 4, 2, 2, one, p, 3, p, 2, one, p, 4) == 7
    assert lib.mublasSgemm(handle, 5, 0, 1, 1, 1, one, p, 1, p, 1, one, p, 1) == 7
    assert lib.mublasSgemm(None, 0, 0, 1, 1, 1, one, p, 1, p, 1, one, p, 1) == 1
    version, stream = ctypes.c_int(), ctypes.c_void_p()
    assert lib.mublasGetVersion(handle, ctypes.byref(version)) == 0 and version.value > 0
    assert lib.mublasSetStream(handle, ctypes.c_void_p(0x1234)) == 0
    assert lib.mublasGetStream(handle, ctypes.byref(stream)) == 0 and stream.value == 0x1234
    assert lib.mublasSetMathMode(handle, 1) == 0


# ---------------------------------------------------------------- murand
@pytest.fixture(scope="module")
def murand():
    lib = sdk.load("murand")
    lib.murandSetPseudoRandomGeneratorSeed.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong]
    lib.murandGenerateUniform.argtypes = [ctypes.c_void_p, ctypes.c_void_p, size_t]
    lib.murandGenerateNormal.argtypes = [
        ctypes.c_void_p,
        ctypes.c_void_p,
        size_t,
        ctypes.c_float,
        ctypes.c_float,
    ]
    lib.murandDestroyGenerator.argtypes = [ctypes.c_void_p]
    return lib


def _generator(lib, seed: int, kind: int = 100) -> ctypes.c_void_p:
    gen = ctypes.c_void_p()
    assert lib.murandCreateGenerator(ctypes.byref(gen), kind) == 0
    assert lib.murandSetPseudoRandomGeneratorSeed(gen, seed) == 0
    return gen


def _uniform(lib, gen, n: int) -> torch.Tensor:
    out = torch.empty(n)
    assert lib.murandGenerateUniform(gen, out.data_ptr(), n) == 0
    return out


def test_murand_is_reproducible_by_seed(murand):
    a, b, c = _generator(murand, 1234), _generator(murand, 1234, 141), _generator(murand, 99)
    first = _uniform(murand, a, 1000)
    assert torch.equal(first, _uniform(murand, b, 1000))
    assert not torch.equal(first, _uniform(murand, c, 1000))
    # A call continues the stream; reseeding restarts it.
    assert torch.equal(torch.cat([_uniform(murand, a, 7), _uniform(murand, a, 9)]),
                       torch.cat([_uniform(murand, b, 16)]))  # fmt: skip
    murand.murandSetPseudoRandomGeneratorSeed(a, 1234)
    assert torch.equal(_uniform(murand, a, 1000), first)
    for gen in (a, b, c):
        assert murand.murandDestroyGenerator(gen) == 0


def test_murand_distributions(murand):
    gen = _generator(murand, 7)
    u = _uniform(murand, gen, 100_000)
    assert float(u.min()) > 0.0 and float(u.max()) <= 1.0
    assert abs(float(u.mean()) - 0.5) < 0.01 and abs(float(u.var()) - 1 / 12) < 0.005
    normal = torch.empty(100_000)
    assert murand.murandGenerateNormal(gen, normal.data_ptr(), normal.numel(), 3.0, 2.0) == 0
    assert abs(float(normal.mean()) - 3.0) < 0.03 and abs(float(normal.std()) - 2.0) < 0.03
    assert abs(float(((normal - 3.0) / 2.0).abs().le(1.0).float().mean()) - 0.6827) < 0.01
    assert murand.murandGenerateNormal(gen, normal.data_ptr(), 3, 0.0, 1.0) == 105  # odd n
    assert murand.murandCreateGenerator(ctypes.byref(ctypes.c_void_p()), 12345) == 103
    assert murand.murandDestroyGenerator(gen) == 0
    assert murand.murandGenerateUniform(None, normal.data_ptr(), 2) == 101


# ---------------------------------------------------------------- mccl (ranks of one process)
@pytest.fixture(scope="module")
def mccl():
    lib = sdk.load("mccl")
    lib.mcclGetErrorString.restype = ctypes.c_char_p
    lib.mcclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId]
    lib.mcclCommInitRank.argtypes += [ctypes.c_int]
    vp, i = ctypes.c_void_p, ctypes.c_int
    lib.mcclAllReduce.argtypes = [vp, vp, size_t, i, i, vp, vp]
    lib.mcclBroadcast.argtypes = [vp, vp, size_t, i, i, vp, vp]
    lib.mcclAllGather.argtypes = [vp, vp, size_t, i, vp, vp]
    lib.mcclReduceScatter.argtypes = [vp, vp, size_t, i, i, vp, vp]
    lib.mcclReduce.argtypes = [vp, vp, size_t, i, i, i, vp, vp]
    lib.mcclSend.argtypes = [vp, size_t, i, i, vp, vp]
    lib.mcclRecv.argtypes = [vp, size_t, i, i, vp, vp]
    for name in ("mcclCommDestroy", "mcclCommAbort"):
        getattr(lib, name).argtypes = [vp]
    lib.mcclCommCount.argtypes = [vp, c_int_p]
    lib.mcclCommUserRank.argtypes = [vp, c_int_p]
    return lib


def _comms(lib, n: int) -> list:
    uid = UniqueId()
    assert lib.mcclGetUniqueId(ctypes.byref(uid)) == 0
    comms = [ctypes.c_void_p() for _ in range(n)]
    for rank, comm in enumerate(comms):
        assert lib.mcclCommInitRank(ctypes.byref(comm), n, uid, rank) == 0
    return comms


MCCL_FLOAT32, MCCL_FLOAT16, MCCL_INT64, MCCL_BF16 = 7, 6, 4, 9
SUM, PROD, MAX, MIN, AVG = range(5)


def test_mccl_single_rank_and_queries(mccl):
    (comm,) = _comms(mccl, 1)
    n, r = ctypes.c_int(), ctypes.c_int()
    assert mccl.mcclCommCount(comm, ctypes.byref(n)) == 0 and n.value == 1
    assert mccl.mcclCommUserRank(comm, ctypes.byref(r)) == 0 and r.value == 0
    src, dst = torch.arange(5.0), torch.zeros(5)
    assert mccl.mcclAllReduce(src.data_ptr(), dst.data_ptr(), 5, MCCL_FLOAT32, SUM, comm, None) == 0
    assert torch.equal(dst, src)
    assert mccl.mcclCommDestroy(comm) == 0
    version = ctypes.c_int()
    assert mccl.mcclGetVersion(ctypes.byref(version)) == 0
    major, minor, patch = boards.MCCL_VERSION
    assert version.value == major * 10000 + minor * 100 + patch
    assert mccl.mcclGetErrorString(5) == b"invalid usage"


def _run_ranks(fn, n: int) -> list:
    results: list = [None] * n
    errors: list = []

    def run(rank):
        try:
            results[rank] = fn(rank)
        except Exception as err:  # noqa: BLE001 - re-raised below, with the rank
            errors.append((rank, err))

    threads = [threading.Thread(target=run, args=(r,), daemon=True) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a rank is still waiting for its peers"
    assert not errors, errors
    return results


@pytest.mark.parametrize(
    "dtype, code", [(torch.float32, MCCL_FLOAT32), (torch.float16, MCCL_FLOAT16),
                    (torch.bfloat16, MCCL_BF16), (torch.int64, MCCL_INT64)],
)  # fmt: skip
def test_mccl_collectives_between_threads(mccl, dtype, code):
    n = 3
    comms = _comms(mccl, n)
    inputs = [(torch.arange(6) * (r + 1) - 2).to(dtype) for r in range(n)]

    def rank_fn(rank):
        comm, x = comms[rank], inputs[rank]
        out = {}
        for op in (SUM, PROD, MAX, MIN, AVG):
            y = x.clone()  # in place, as torch's backends call it
            assert mccl.mcclAllReduce(y.data_ptr(), y.data_ptr(), 6, code, op, comm, None) == 0
            out[op] = y
        b = x.clone()
        assert mccl.mcclBroadcast(b.data_ptr(), b.data_ptr(), 6, code, 2, comm, None) == 0
        out["bcast"] = b
        g = torch.empty(6 * n, dtype=dtype)
        assert mccl.mcclAllGather(x.data_ptr(), g.data_ptr(), 6, code, comm, None) == 0
        out["gather"] = g
        rs = torch.empty(2, dtype=dtype)
        assert mccl.mcclReduceScatter(x.data_ptr(), rs.data_ptr(), 2, code, SUM, comm, None) == 0
        out["rs"] = rs
        return out

    results = _run_ranks(rank_fn, n)
    stacked = torch.stack([t.double() for t in inputs])
    total = stacked.sum(0)
    expected = {
        SUM: total,
        PROD: stacked.prod(0),
        MAX: stacked.max(0).values,
        MIN: stacked.min(0).values,
        AVG: torch.trunc(total / n) if not dtype.is_floating_point else total / n,
    }
    for rank, out in enumerate(results):
        for op, value in expected.items():
            torch.testing.assert_close(out[op], value.to(dtype), msg=f"op {op} rank {rank}")
        assert torch.equal(out["bcast"], inputs[2])
        assert torch.equal(out["gather"], torch.cat(inputs))
        torch.testing.assert_close(out["rs"], total[2 * rank : 2 * rank + 2].to(dtype))
    for comm in comms:
        assert mccl.mcclCommDestroy(comm) == 0


def test_mccl_group_lets_one_thread_drive_all_ranks(mccl):
    n = 2
    comms = _comms(mccl, n)
    bufs = [torch.full((4,), float(r + 1)) for r in range(n)]
    sends = [torch.full((3,), 10.0 * (r + 1)) for r in range(n)]
    recvs = [torch.zeros(3) for _ in range(n)]
    assert mccl.mcclGroupStart() == 0
    for r in range(n):
        p = bufs[r].data_ptr()
        assert mccl.mcclAllReduce(p, p, 4, MCCL_FLOAT32, SUM, comms[r], None) == 0
        peer = (r + 1) % n
        assert mccl.mcclSend(sends[r].data_ptr(), 3, MCCL_FLOAT32, peer, comms[r], None) == 0
        assert mccl.mcclRecv(recvs[r].data_ptr(), 3, MCCL_FLOAT32, peer, comms[r], None) == 0
    assert mccl.mcclGroupEnd() == 0
    assert all(torch.equal(b, torch.full((4,), 3.0)) for b in bufs)
    assert torch.equal(recvs[0], sends[1]) and torch.equal(recvs[1], sends[0])
    assert mccl.mcclGroupEnd() == 5  # no group open
    for comm in comms:
        mccl.mcclCommDestroy(comm)


def test_mccl_refuses_misuse(mccl):
    uid = UniqueId()
    mccl.mcclGetUniqueId(ctypes.byref(uid))
    foreign = UniqueId.from_buffer_copy(bytes(uid))
    ctypes.memmove(ctypes.addressof(foreign) + 8, (ctypes.c_int64 * 1)(1 << 40), 8)  # no such pid
    comm = ctypes.c_void_p()
    assert mccl.mcclCommInitRank(ctypes.byref(comm), 2, foreign, 0) == 5  # not simulated: no hang
    assert mccl.mcclCommInitRank(ctypes.byref(comm), 2, UniqueId(), 0) == 4  # not an id
    assert mccl.mcclCommInitRank(ctypes.byref(comm), 2, uid, 2) == 4  # rank out of range
    (single,) = _comms(mccl, 1)
    x = torch.zeros(2)
    assert mccl.mcclAllReduce(x.data_ptr(), x.data_ptr(), 2, 42, SUM, single, None) == 4
    assert mccl.mcclAllReduce(x.data_ptr(), x.data_ptr(), 2, MCCL_FLOAT32, 9, single, None) == 4
    assert mccl.mcclCommAbort(single) == 0


@pytest.mark.parametrize(
    "dtype, code", [(torch.float16, MCCL_FLOAT16), (torch.bfloat16, MCCL_BF16)]
)
def test_mccl_16_bit_sums_round_like_torch(mccl, dtype, code):
    # Every bit pattern, summed with a shuffled partner: covers subnormals, overflow to inf,
    # ties to even and nan.
    a = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    b = a[torch.randperm(a.numel(), generator=torch.Generator().manual_seed(0))].clone()
    x, y = a.clone(), b.clone()
    comms = _comms(mccl, 2)
    assert mccl.mcclGroupStart() == 0
    for comm, buf in zip(comms, (x, y)):
        p = buf.data_ptr()
        assert mccl.mcclAllReduce(p, p, buf.numel(), code, SUM, comm, None) == 0
    assert mccl.mcclGroupEnd() == 0
    expected = (a.float() + b.float()).to(dtype)
    torch.testing.assert_close(x, expected, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(x.view(torch.int16), y.view(torch.int16))
    for comm in comms:
        mccl.mcclCommDestroy(comm)


def test_mccl_reduce_writes_the_root_only(mccl):
    n, root = 3, 1
    comms = _comms(mccl, n)
    inputs = [torch.arange(4.0) + 10 * r for r in range(n)]

    def rank_fn(rank):
        out = torch.full((4,), -1.0)
        # NCCL lets ranks other than the root pass no receive buffer; rank 2 does.
        recv = None if rank == 2 else out.data_ptr()
        code = mccl.mcclReduce(
            inputs[rank].data_ptr(), recv, 4, MCCL_FLOAT32, SUM, root, comms[rank], None
        )
        assert code == 0
        return out

    results = _run_ranks(rank_fn, n)
    assert torch.equal(results[root], sum(inputs))
    assert torch.equal(results[0], torch.full((4,), -1.0))  # not the root: untouched
    for comm in comms:
        assert mccl.mcclCommDestroy(comm) == 0


def test_device_reset_frees_what_the_device_holds(musart):
    free0, total = size_t(), size_t()
    musart.musaMemGetInfo(ctypes.byref(free0), ctypes.byref(total))
    ptrs = [_malloc(musart, 1 << 20) for _ in range(3)]
    assert musart.musaDeviceReset() == musaSuccess
    free1 = size_t()
    musart.musaMemGetInfo(ctypes.byref(free1), ctypes.byref(total))
    assert free1.value == free0.value
    assert musart.musaFree(ptrs[0]) == musaErrorInvalidValue  # gone with the reset
