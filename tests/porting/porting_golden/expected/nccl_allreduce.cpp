// Minimal NCCL all-reduce over one communicator per process.
#include <mccl.h>
#include <musa_runtime.h>
#include <torch_musa/csrc/core/MUSAStream.h>
#include <torch/extension.h>

#include <vector>

#define NCCL_CHECK(cmd)                                                           \
  do {                                                                            \
    mcclResult_t r_ = (cmd);                                                      \
    TORCH_CHECK(r_ == mcclSuccess, "NCCL failure: ", mcclGetErrorString(r_));     \
  } while (0)

struct Comm {
  mcclComm_t comm = nullptr;
  int rank = 0;
  int world = 1;
};

std::vector<uint8_t> make_unique_id() {
  mcclUniqueId id;
  NCCL_CHECK(mcclGetUniqueId(&id));
  return std::vector<uint8_t>(id.internal, id.internal + MCCL_UNIQUE_ID_BYTES);
}

Comm init(const std::vector<uint8_t>& raw, int rank, int world) {
  Comm c;
  mcclUniqueId id;
  std::copy(raw.begin(), raw.end(), id.internal);
  c10::musa::MUSAGuard g(rank % torch::cuda::device_count());
  NCCL_CHECK(mcclCommInitRank(&c.comm, world, id, rank));
  c.rank = rank;
  c.world = world;
  return c;
}

static mcclDataType_t to_nccl(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return mcclFloat32;
    case at::kHalf: return mcclFloat16;
    case at::kBFloat16: return mcclBfloat16;
    case at::kLong: return mcclInt64;
    default: TORCH_CHECK(false, "unsupported dtype for NCCL");
  }
}

void all_reduce(Comm& c, torch::Tensor t, bool average) {
  auto stream = c10::musa::getCurrentMUSAStream();
  NCCL_CHECK(mcclGroupStart());
  NCCL_CHECK(mcclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), to_nccl(t.scalar_type()),
                           average ? mcclAvg : mcclSum, c.comm, stream.stream()));
  NCCL_CHECK(mcclGroupEnd());
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  NCCL_CHECK(mcclCommFinalize(c.comm));
#endif
  musaStreamSynchronize(stream.stream());
}

void destroy(Comm& c) {
  if (c.comm) NCCL_CHECK(mcclCommDestroy(c.comm));
  c.comm = nullptr;
}
