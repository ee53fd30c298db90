// Minimal NCCL all-reduce over one communicator per process.
#include <nccl.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/extension.h>

#include <vector>

#define NCCL_CHECK(cmd)                                                           \
  do {                                                                            \
    ncclResult_t r_ = (cmd);                                                      \
    TORCH_CHECK(r_ == ncclSuccess, "NCCL failure: ", ncclGetErrorString(r_));     \
  } while (0)

struct Comm {
  ncclComm_t comm = nullptr;
  int rank = 0;
  int world = 1;
};

std::vector<uint8_t> make_unique_id() {
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  return std::vector<uint8_t>(id.internal, id.internal + NCCL_UNIQUE_ID_BYTES);
}

Comm init(const std::vector<uint8_t>& raw, int rank, int world) {
  Comm c;
  ncclUniqueId id;
  std::copy(raw.begin(), raw.end(), id.internal);
  c10::cuda::CUDAGuard g(rank % torch::cuda::device_count());
  NCCL_CHECK(ncclCommInitRank(&c.comm, world, id, rank));
  c.rank = rank;
  c.world = world;
  return c;
}

static ncclDataType_t to_nccl(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return ncclFloat32;
    case at::kHalf: return ncclFloat16;
    case at::kBFloat16: return ncclBfloat16;
    case at::kLong: return ncclInt64;
    default: TORCH_CHECK(false, "unsupported dtype for NCCL");
  }
}

void all_reduce(Comm& c, torch::Tensor t, bool average) {
  auto stream = c10::cuda::getCurrentCUDAStream();
  NCCL_CHECK(ncclGroupStart());
  NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), to_nccl(t.scalar_type()),
                           average ? ncclAvg : ncclSum, c.comm, stream.stream()));
  NCCL_CHECK(ncclGroupEnd());
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  NCCL_CHECK(ncclCommFinalize(c.comm));
#endif
  cudaStreamSynchronize(stream.stream());
}

void destroy(Comm& c) {
  if (c.comm) NCCL_CHECK(ncclCommDestroy(c.comm));
  c.comm = nullptr;
}
