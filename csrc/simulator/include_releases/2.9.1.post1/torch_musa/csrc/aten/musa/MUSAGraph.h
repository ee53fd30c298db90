// at::musa::MUSAGraph as torch_musa 2.9.1.post1 declares it (csrc/aten/musa/MUSAGraph.h),
// unchanged in 2.11.0.post2: the simulated release's header, with the members in its order and
// of its types, so that code compiled against it sees the object as it is laid out. Against
// 2.7.1's: capture_ended_ comes between has_graph_ and has_graph_exec_, capture_dev_ is a
// c10::DeviceIndex, keep_graph_ is last.
#pragma once

#include <ATen/Tensor.h>
#include <c10/core/Device.h>
#include <c10/util/flat_hash_map.h>

#include <string>

#include <musa_runtime_api.h>

#include "torch_musa/csrc/aten/musa/MUSAGeneratorImpl.h"
#include "torch_musa/csrc/core/MUSAGraphsC10Utils.h"
#include "torch_musa/csrc/core/MUSAStream.h"

namespace at::musa {

MempoolId_t graph_pool_handle();

struct MUSAGraph {
  MUSAGraph(bool keep_graph = false);
  ~MUSAGraph();

  void capture_begin(MempoolId_t pool = {0, 0});
  void capture_end();
  void instantiate();
  void reinstantiate_graph();
  void replay();
  void reset();
  MempoolId_t pool();
  void enable_debug_mode();
  void debug_dump(const std::string& debug_path);
  musaGraph_t raw_musa_graph();
  musaGraphExec_t raw_musa_graph_exec();

 protected:
  musaGraph_t graph_ = nullptr;
  musaGraphExec_t graph_exec_ = nullptr;
  // Set to true by capture_end once musaStreamEndCapture succeeded.
  bool has_graph_ = false;
  // Set to true by capture_end once musaStreamEndCapture succeeded; reset() clears it.
  bool capture_ended_ = false;
  // Set to true once musaGraphInstantiate succeeded.
  bool has_graph_exec_ = false;
  CaptureId_t capture_id_ = -1;
  MempoolId_t mempool_id_;
  at::musa::MUSAStream capture_stream_;
  ska::flat_hash_map<c10::intrusive_ptr<at::MUSAGeneratorState>, uint64_t>
      captured_generator_states_;
  static constexpr c10::DeviceIndex UNDEFINED_DEVICE = -1;
  c10::DeviceIndex capture_dev_{UNDEFINED_DEVICE};
  bool keep_graph_;
};

}  // namespace at::musa
