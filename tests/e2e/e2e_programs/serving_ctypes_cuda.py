"""ctypes wrappers of the CUDA runtime and NCCL in the style of serving frameworks (a table of
exported functions with their restype and argtypes, a checking call helper), finding the
libraries one of three ways: `env` (a path in VLLM_CUDART_SO_PATH / VLLM_NCCL_SO_PATH, or the
bare "libnccl.so.2" when unset), `find_library` (ctypes.util.find_library), `maps` (the path of a
loaded libcudart read from /proc/self/maps). Then: device memory set, copied to and from torch
tensors, an IPC handle, and an all-reduce, send and receive between two ranks (one thread each)
on torch's current streams. Prints one JSON line."""

import ctypes
import ctypes.util
import json
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, List, Optional

import torch

cudaError_t = ctypes.c_int
cudaMemcpyKind = ctypes.c_int
ncclResult_t = ctypes.c_int
ncclComm_t = ctypes.c_void_p
cudaStream_t = ctypes.c_void_p
buffer_type = ctypes.c_void_p


class cudaIpcMemHandle_t(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 64)]


class ncclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


@dataclass
class Function:
    name: str
    restype: Any
    argtypes: List[Any]


def find_loaded_library(lib_name: str) -> Optional[str]:
    with open("/proc/self/maps") as f:
        for line in f:
            if lib_name in line:
                return line[line.index("/") :].strip()
    return None


class CudaRTLibrary:
    exported_functions = [
        Function("cudaSetDevice", cudaError_t, [ctypes.c_int]),
        Function("cudaDeviceSynchronize", cudaError_t, []),
        Function("cudaDeviceReset", cudaError_t, []),
        Function("cudaGetErrorString", ctypes.c_char_p, [cudaError_t]),
        Function("cudaMalloc", cudaError_t, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]),
        Function("cudaFree", cudaError_t, [ctypes.c_void_p]),
        Function("cudaMemset", cudaError_t, [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]),
        Function(
            "cudaMemcpy",
            cudaError_t,
            [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, cudaMemcpyKind],
        ),
        Function(
            "cudaIpcGetMemHandle",
            cudaError_t,
            [ctypes.POINTER(cudaIpcMemHandle_t), ctypes.c_void_p],
        ),
        Function(
            "cudaIpcOpenMemHandle",
            cudaError_t,
            [ctypes.POINTER(ctypes.c_void_p), cudaIpcMemHandle_t, ctypes.c_uint],
        ),
    ]

    def __init__(self, so_file: str) -> None:
        self.lib = ctypes.CDLL(so_file)
        self.funcs = {}
        for func in self.exported_functions:
            f = getattr(self.lib, func.name)
            f.restype = func.restype
            f.argtypes = func.argtypes
            self.funcs[func.name] = f

    def check(self, result: int) -> None:
        if result != 0:
            raise RuntimeError(f"CUDART error: {self.funcs['cudaGetErrorString'](result).decode()}")

    def cudaSetDevice(self, device: int) -> None:
        self.check(self.funcs["cudaSetDevice"](device))

    def cudaDeviceSynchronize(self) -> None:
        self.check(self.funcs["cudaDeviceSynchronize"]())

    def cudaMalloc(self, size: int) -> ctypes.c_void_p:
        ptr = ctypes.c_void_p()
        self.check(self.funcs["cudaMalloc"](ctypes.byref(ptr), size))
        return ptr

    def cudaFree(self, ptr: ctypes.c_void_p) -> None:
        self.check(self.funcs["cudaFree"](ptr))

    def cudaMemset(self, ptr: ctypes.c_void_p, value: int, count: int) -> None:
        self.check(self.funcs["cudaMemset"](ptr, value, count))

    def cudaMemcpy(self, dst: Any, src: Any, count: int) -> None:
        self.check(self.funcs["cudaMemcpy"](dst, src, count, 4))  # cudaMemcpyDefault

    def cudaIpcGetMemHandle(self, ptr: ctypes.c_void_p) -> cudaIpcMemHandle_t:
        handle = cudaIpcMemHandle_t()
        self.check(self.funcs["cudaIpcGetMemHandle"](ctypes.byref(handle), ptr))
        return handle

    def cudaIpcOpenMemHandle(self, handle: cudaIpcMemHandle_t) -> ctypes.c_void_p:
        ptr = ctypes.c_void_p()
        self.check(self.funcs["cudaIpcOpenMemHandle"](ctypes.byref(ptr), handle, 1))
        return ptr


class NCCLLibrary:
    exported_functions = [
        Function("ncclGetErrorString", ctypes.c_char_p, [ncclResult_t]),
        Function("ncclGetVersion", ncclResult_t, [ctypes.POINTER(ctypes.c_int)]),
        Function("ncclGetUniqueId", ncclResult_t, [ctypes.POINTER(ncclUniqueId)]),
        Function(
            "ncclCommInitRank",
            ncclResult_t,
            [ctypes.POINTER(ncclComm_t), ctypes.c_int, ncclUniqueId, ctypes.c_int],
        ),
        Function(
            "ncclAllReduce",
            ncclResult_t,
            [
                buffer_type,
                buffer_type,
                ctypes.c_size_t,
                ctypes.c_int,
                ctypes.c_int,
                ncclComm_t,
                cudaStream_t,
            ],
        ),
        Function(
            "ncclSend",
            ncclResult_t,
            [buffer_type, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ncclComm_t, cudaStream_t],
        ),
        Function(
            "ncclRecv",
            ncclResult_t,
            [buffer_type, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ncclComm_t, cudaStream_t],
        ),
        Function("ncclGroupStart", ncclResult_t, []),
        Function("ncclGroupEnd", ncclResult_t, []),
        Function("ncclCommDestroy", ncclResult_t, [ncclComm_t]),
    ]

    def __init__(self, so_file: str) -> None:
        self.lib = ctypes.CDLL(so_file)
        self.funcs = {}
        for func in self.exported_functions:
            f = getattr(self.lib, func.name)
            f.restype = func.restype
            f.argtypes = func.argtypes
            self.funcs[func.name] = f

    def check(self, result: int) -> None:
        if result != 0:
            raise RuntimeError(f"NCCL error: {self.funcs['ncclGetErrorString'](result).decode()}")

    def ncclGetVersion(self) -> str:
        version = ctypes.c_int()
        self.check(self.funcs["ncclGetVersion"](ctypes.byref(version)))
        major, rest = divmod(version.value, 10000)
        minor, patch = divmod(rest, 100)
        return f"{major}.{minor}.{patch}"

    def ncclGetUniqueId(self) -> ncclUniqueId:
        unique_id = ncclUniqueId()
        self.check(self.funcs["ncclGetUniqueId"](ctypes.byref(unique_id)))
        return unique_id

    def ncclCommInitRank(self, world_size: int, unique_id: ncclUniqueId, rank: int) -> Any:
        comm = ncclComm_t()
        self.check(self.funcs["ncclCommInitRank"](ctypes.byref(comm), world_size, unique_id, rank))
        return comm

    def ncclAllReduce(self, send, recv, count, dtype, op, comm, stream) -> None:
        self.check(self.funcs["ncclAllReduce"](send, recv, count, dtype, op, comm, stream))

    def ncclSend(self, buf, count, dtype, dest, comm, stream) -> None:
        self.check(self.funcs["ncclSend"](buf, count, dtype, dest, comm, stream))

    def ncclRecv(self, buf, count, dtype, src, comm, stream) -> None:
        self.check(self.funcs["ncclRecv"](buf, count, dtype, src, comm, stream))

    def ncclCommDestroy(self, comm) -> None:
        self.check(self.funcs["ncclCommDestroy"](comm))


def locate(route: str):
    if route == "env":
        return os.environ["VLLM_CUDART_SO_PATH"], os.environ.get(
            "VLLM_NCCL_SO_PATH", "libnccl.so.2"
        )
    if route == "find_library":
        return ctypes.util.find_library("cudart"), ctypes.util.find_library("nccl")
    if route == "maps":
        torch.cuda.init()  # as serving engines do before looking
        return find_loaded_library("libcudart"), ctypes.util.find_library("nccl")
    raise SystemExit(f"unknown route {route!r}")


def main() -> None:
    route = sys.argv[1]
    cudart_path, nccl_path = locate(route)
    assert cudart_path, f"no CUDA runtime found by {route}"
    rt = CudaRTLibrary(cudart_path)
    nccl = NCCLLibrary(nccl_path)

    rt.cudaSetDevice(0)
    n = 256
    ptr = rt.cudaMalloc(n * 4)
    rt.cudaMemset(ptr, 0, n * 4)
    src = torch.arange(n, dtype=torch.float32, device="cuda")
    rt.cudaMemcpy(ptr, ctypes.c_void_p(src.data_ptr()), n * 4)  # device to device
    dst = torch.empty(n, dtype=torch.float32, device="cuda")
    rt.cudaMemcpy(ctypes.c_void_p(dst.data_ptr()), ptr, n * 4)
    host = torch.empty(n, dtype=torch.float32)
    rt.cudaMemcpy(ctypes.c_void_p(host.data_ptr()), ptr, n * 4)
    rt.cudaDeviceSynchronize()
    try:
        handle = rt.cudaIpcGetMemHandle(ptr)
        opened = rt.cudaIpcOpenMemHandle(handle)
        ipc = "opened" if opened.value else "null"
    except RuntimeError as err:
        ipc = str(err)
    rt.cudaFree(ptr)

    unique_id = nccl.ncclGetUniqueId()
    results, errors = {}, []

    def rank_main(rank: int) -> None:
        try:
            torch.cuda.set_device(rank)
            rt.cudaSetDevice(rank)
            comm = nccl.ncclCommInitRank(2, unique_id, rank)
            stream = torch.cuda.current_stream()
            x = torch.full((8,), float(rank + 1), device=f"cuda:{rank}")
            out = torch.empty_like(x)
            nccl.ncclAllReduce(x.data_ptr(), out.data_ptr(), 8, 7, 0, comm, stream.cuda_stream)
            peer = 1 - rank
            got = torch.zeros(4, device=f"cuda:{rank}")
            mine = torch.full((4,), 10.0 * (rank + 1), device=f"cuda:{rank}")
            nccl.funcs["ncclGroupStart"]()
            nccl.ncclSend(mine.data_ptr(), 4, 7, peer, comm, stream.cuda_stream)
            nccl.ncclRecv(got.data_ptr(), 4, 7, peer, comm, stream.cuda_stream)
            nccl.funcs["ncclGroupEnd"]()
            stream.synchronize()
            nccl.ncclCommDestroy(comm)
            results[rank] = {
                "device": str(out.device),
                "all_reduce": out.tolist(),
                "received": got.tolist(),
            }
        except Exception as err:  # reported, not swallowed: the JSON carries it
            errors.append(f"rank {rank}: {type(err).__name__}: {err}")

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    print(
        json.dumps(
            {
                "route": route,
                "cudart": os.path.basename(cudart_path),
                "nccl": os.path.basename(nccl_path),
                "round_trip": torch.equal(dst, src) and torch.equal(host, src.cpu()),
                "ipc": ipc,
                "nccl_version": nccl.ncclGetVersion(),
                "ranks": results,
                "errors": errors,
            }
        )
    )


if __name__ == "__main__":
    main()
