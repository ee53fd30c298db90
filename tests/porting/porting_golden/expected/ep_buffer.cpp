// Host side of an expert-parallel buffer: peers exchange device memory through IPC handles.
#include <torch_musa/csrc/aten/musa/MUSAContext.h>
#include <ATen/musa/MUSADataType.h>
#include <musa_runtime.h>
#include <torch/python.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ep_configs.muh"

namespace ep {

struct Buffer {
  int rank = 0, num_ranks = 1, device_id = 0;
  void* buffer_ptrs[NUM_MAX_PEERS] = {nullptr};
  musaIpcMemHandle_t ipc_handles[NUM_MAX_PEERS];
  at::musa::MUSAStream comm_stream = at::musa::getStreamFromPool(true);

  Buffer(int rank, int num_ranks, int64_t num_bytes) : rank(rank), num_ranks(num_ranks) {
    CUDA_CHECK(musaGetDevice(&device_id));
    CUDA_CHECK(musaMalloc(&buffer_ptrs[rank], num_bytes));
    CUDA_CHECK(musaIpcGetMemHandle(&ipc_handles[rank], buffer_ptrs[rank]));
    CUDA_CHECK(musaMemsetAsync(buffer_ptrs[rank], 0, num_bytes, comm_stream));
  }

  // What the other ranks need to open this rank's buffer.
  pybind11::bytearray get_local_ipc_handle() const {
    return {ipc_handles[rank].reserved, MUSA_IPC_HANDLE_SIZE};
  }

  void sync(const std::vector<std::optional<pybind11::bytearray>>& all_handles) {
    for (int i = 0; i < num_ranks; ++i) {
      auto handle_str = std::string(all_handles[i].value());
      TORCH_CHECK(handle_str.size() == MUSA_IPC_HANDLE_SIZE, "bad IPC handle from rank ", i);
      if (i == rank) continue;
      std::memcpy(ipc_handles[i].reserved, handle_str.c_str(), MUSA_IPC_HANDLE_SIZE);
      CUDA_CHECK(musaIpcOpenMemHandle(&buffer_ptrs[i], ipc_handles[i],
                                      musaIpcMemLazyEnablePeerAccess));
    }
  }

  torch::Tensor get_local_buffer_tensor(const pybind11::object& dtype, int64_t offset) const {
    auto casted = torch::python::detail::py_object_to_dtype(dtype);
    auto* base = static_cast<uint8_t*>(buffer_ptrs[rank]) + offset;
    return torch::from_blob(base, {1}, torch::TensorOptions().dtype(casted).device(at::kMUSA));
  }

  torch::Tensor counters(int n) const {
    return torch::empty({n}, torch::dtype(torch::kInt32).device(torch::kMUSA));
  }

  // The kernels take the element type as a runtime data type.
  musaDataType_t data_type(const torch::Tensor& x) const {
    return at::musa::ScalarTypeToMusaDataType(x.scalar_type());
  }

  // Launches may not overlap the previous kernel: programmatic serialization is left off.
  void launch_hint(musaLaunchAttribute* attr) const {
    attr->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr->val.programmaticStreamSerializationAllowed = 0;
  }

  int64_t runtime_version() const { return CUDART_VERSION; }
};

}  // namespace ep
