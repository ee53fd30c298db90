// The simulated device's operators: its generators, the PrivateUse1 hooks interface, the kernels
// a backend must own (empty, copies, views, resize, set_), the boxed fallback to the CPU kernels,
// and the autocast lists. ATen and the operator library, without Python.

#include "sim_internal.h"

// The operators it calls, each by its own header: ATen/ATen.h would declare all of them (and
// doubles this file's compile).
#include <ATen/core/Tensor.h>
#include <ATen/ops/_local_scalar_dense.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros_like.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/autocast_mode.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/record_function.h>
#include <c10/core/GeneratorImpl.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

namespace torchada_sim {

// ---------------------------------------------------------------- generators
// torch_musa's generator is a Philox one: its state is (seed, offset), get_offset/set_offset work,
// and pickling a generator saves both. CPU kernels (reached through the fallback) only accept CPU
// generators, so each kernel that draws gets a CPU generator of its own seeded from (seed,
// offset), and the offset advances: the stream is a function of (seed, offset), as on the device,
// so set_offset and set_state replay draws exactly. The state is 16 bytes, seed then offset.
struct SimGenerator final : c10::GeneratorImpl {
  explicit SimGenerator(c10::DeviceIndex idx)
      : c10::GeneratorImpl(c10::Device(kMusa, idx),
                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        seed_(c10::detail::getNonDeterministicRandom()) {}
  void set_current_seed(uint64_t seed) override {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t current_seed() const override { return seed_; }
  uint64_t seed() override {
    auto s = c10::detail::getNonDeterministicRandom();
    set_current_seed(s);
    return s;
  }
  void set_offset(uint64_t offset) override {
    TORCH_CHECK(offset % 4 == 0, "offset must be a multiple of 4");
    offset_ = offset;
  }
  uint64_t get_offset() const override { return offset_; }
  void set_state(const c10::TensorImpl& new_state) override {
    TORCH_CHECK(new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>() &&
                    new_state.device().type() == c10::kCPU,
                "RNG state must be a torch.ByteTensor");
    TORCH_CHECK(new_state.numel() == kStateSize, "RNG state is wrong size");
    const auto* bytes = new_state.data_dtype_initialized<uint8_t>();
    std::memcpy(&seed_, bytes, sizeof(seed_));
    std::memcpy(&offset_, bytes + sizeof(seed_), sizeof(offset_));
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    auto state = at::empty({kStateSize}, at::TensorOptions().dtype(at::kByte));
    auto* bytes = state.data_ptr<uint8_t>();
    std::memcpy(bytes, &seed_, sizeof(seed_));
    std::memcpy(bytes + sizeof(seed_), &offset_, sizeof(offset_));
    return state.getIntrusivePtr();
  }
  // A CPU generator for one kernel's draws. Called with this generator's mutex held.
  at::Generator for_kernel() {
    // splitmix64 of (seed, offset): neighbouring offsets give unrelated streams.
    uint64_t z = seed_ + (offset_ + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    offset_ += 4;  // Philox generators advance in multiples of 4
    return at::make_generator<at::CPUGeneratorImpl>(z ^ (z >> 31));
  }
  static c10::DeviceType device_type() { return kMusa; }

 private:
  static constexpr int64_t kStateSize = 16;
  uint64_t seed_;
  uint64_t offset_ = 0;

  SimGenerator* clone_impl() const override {
    auto* g = new SimGenerator(device().index());
    g->seed_ = seed_;
    g->offset_ = offset_;
    return g;
  }
};

std::array<at::Generator, kMaxDevices> g_default_generators;
std::once_flag g_generators_once;

const at::Generator& default_generator(c10::DeviceIndex idx) {
  std::call_once(g_generators_once, [] {
    for (int i = 0; i < g_device_count; ++i) {
      g_default_generators[i] = at::make_generator<SimGenerator>(static_cast<c10::DeviceIndex>(i));
    }
  });
  if (idx < 0) idx = t_current_device;
  check_device(idx);
  return g_default_generators[idx];
}

at::Generator make_generator(c10::DeviceIndex idx) {
  if (idx >= 0) check_device(idx);
  return at::make_generator<SimGenerator>(idx < 0 ? t_current_device : idx);
}

// ---------------------------------------------------------------- hooks interface
struct SimHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return g_device_count > 0; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex idx) const override {
    return default_generator(idx);
  }
  at::Generator getNewGenerator(c10::DeviceIndex idx) const override { return make_generator(idx); }
  at::Device getDeviceFromPtr(void* data) const override {
    return c10::Device(kMusa, device_of_block(data, t_current_device));
  }
  bool isPinnedPtr(const void* data) const override { return is_pinned_ptr(data); }
  at::Allocator* getPinnedMemoryAllocator() const override { return pinned_allocator(); }
  bool hasPrimaryContext(c10::DeviceIndex idx) const override {
    return g_initialized.load() && idx >= 0 && idx < g_device_count;
  }
  void init() const override { g_initialized = true; }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(g_device_count);
  }
  void setCurrentDevice(c10::DeviceIndex d) const override {
    check_device(d);
    t_current_device = d;
  }
  c10::DeviceIndex getCurrentDevice() const override { return t_current_device; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    auto old = t_current_device;
    if (d >= 0) setCurrentDevice(d);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override {
    return exchangeDevice(d);
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    auto* impl = storage.unsafeGetStorageImpl();
    c10::DeviceIndex d = storage.device().index();
    auto fresh = allocator_for(d)->allocate(newsize);
    size_t keep = std::min(newsize, storage.nbytes());
    if (keep && storage.data()) std::memcpy(fresh.get(), storage.data(), keep);
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};

SimHooks* g_hooks = nullptr;

void register_hooks() {
  if (!g_hooks) {
    g_hooks = new SimHooks();
    at::RegisterPrivateUse1HooksInterface(g_hooks);
  }
}

// ---------------------------------------------------------------- kernels
c10::DeviceIndex device_index_or_current(std::optional<c10::Device> device) {
  if (device && device->has_index()) return device->index();
  return t_current_device;
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> /*layout*/,
                               std::optional<at::Device> device, std::optional<bool> pin_memory,
                               std::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(!pin_memory.value_or(false), "Only dense CPU tensors can be pinned");
  auto d = device_index_or_current(device);
  constexpr c10::DispatchKeySet ks(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_generic(size, allocator_for(d), ks,
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout> /*layout*/,
                         std::optional<at::Device> device, std::optional<bool> /*pin_memory*/) {
  auto d = device_index_or_current(device);
  constexpr c10::DispatchKeySet ks(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_strided_generic(size, stride, allocator_for(d), ks,
                                           c10::dtype_or_default(dtype));
}

// A CPU tensor aliasing the same bytes (host memory backs every simulated device), with the same
// lazy conjugate / negative bits.
at::Tensor host_alias(const at::Tensor& t) {
  auto alias = at::from_blob(t.data_ptr(), t.sizes(), t.strides(),
                             t.options().device(c10::DeviceType::CPU));
  alias._set_conj(t.is_conj());
  alias._set_neg(t.is_neg());
  return alias;
}

// Every copy touching a musa tensor: the CPU copy on host aliases resolves the lazy bits,
// broadcasts and converts dtypes.
void host_copy(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  auto dst_h = dst.is_cpu() ? dst : host_alias(dst);
  auto src_h = src.is_cpu() ? src : host_alias(src);
  dst_h.copy_(src_h, non_blocking);
}

// A backend's own copy_ (as torch_musa has): torch's generic one sends PrivateUse1 copies through
// _copy_from, which the Conjugate/Negative fallbacks intercept to materialize the source by a
// clone, itself a copy_: a lazy conj() or _neg_view() of a musa tensor recursed until the stack
// overflowed.
at::Tensor& copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  host_copy(self, src, non_blocking);
  return self;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  if (self.numel() > 0) host_copy(dst, self, /*non_blocking=*/false);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  // The CPU fallback writes mutated arguments back from their host aliases (_to_cpu below):
  // when the kernel wrote in place, the bytes are there already.
  if (self.data_ptr() == dst.data_ptr() && self.sizes() == dst.sizes() &&
      self.strides() == dst.strides() && self.dtype() == dst.dtype()) {
    return dst;
  }
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

// What the CPU fallback runs CPU kernels on: host aliases of the musa tensors, not copies (host
// memory backs every simulated device, so a kernel reads its inputs and writes in-place and out=
// results where they are). Results the kernel allocates are still copied to the device.
// The alias's storage is resizable: a kernel that resizes an out= argument gets fresh CPU memory,
// and the fallback then resizes the musa tensor and copies the result into it.
at::Tensor fallback_alias(const at::Tensor& t) {
  const auto& musa = t.storage();
  c10::Storage storage(c10::Storage::use_byte_size_t(), musa.nbytes(),
                       c10::DataPtr(musa.mutable_data(), c10::Device(c10::DeviceType::CPU)),
                       c10::GetCPUAllocator(), /*resizable=*/true);
  // Built directly, not with empty() + set_(): two dispatcher calls per operand per op otherwise.
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  impl->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  return at::Tensor(std::move(impl));
}

std::vector<at::Tensor> to_cpu(at::TensorList tensors) {
  // Complex operators and lazy negative views get copies of all their tensors, as from torch's
  // own fallback: behind the conjugate fallback (dot of a conj() and its base) the CPU kernels
  // read wrong values through aliases.
  bool copy = false;
  for (const auto& t : tensors) {
    copy = copy || (t.defined() && (t.is_complex() || t.is_conj() || t.is_neg()));
  }
  std::vector<at::Tensor> out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) {
    if (!t.defined() || t.device().type() != kMusa) {
      out.push_back(t);
    } else {
      out.push_back(copy ? t.cpu() : fallback_alias(t));
    }
  }
  return out;
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  // Same shape: keep the strides (the fallback resizes strided views it writes back into).
  if (self.sizes() == size && !memory_format) return self;
  impl->set_sizes_contiguous(size);
  auto needed = at::detail::computeStorageNbytesContiguous(size, self.dtype().itemsize(),
                                                           impl->storage_offset());
  auto& storage = impl->unsafe_storage();
  if (storage.nbytes() < needed) {
    g_hooks->resizePrivateUse1Bytes(storage, needed);
  }
  if (memory_format && *memory_format != at::MemoryFormat::Preserve) {
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                        c10::IntArrayRef size, c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, source, storage_offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  std::optional<at::IntArrayRef> stride_opt =
      stride.data() != nullptr ? std::optional<at::IntArrayRef>(stride) : std::nullopt;
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size, stride_opt,
                               /*resize_storage=*/false);
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  int64_t n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage(self, std::move(source), 0, {n}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& src) {
  return set_storage(self, src.storage(), src.storage_offset(), src.sizes(), src.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, allocator_for(self.device().index()),
                       /*resizable=*/true);
  return set_storage(self, storage, 0, {0}, {});
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  return at::_local_scalar_dense(host_alias(self));
}

void record_stream(at::Tensor& /*self*/, c10::Stream /*s*/) {}

std::vector<at::Tensor> to_host(std::initializer_list<at::Tensor> ts) {
  std::vector<at::Tensor> out;
  for (auto& t : ts) out.push_back(t.defined() ? t.cpu() : t);
  return out;
}

at::Tensor to_device_of(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t.to(like.device()) : t;
}

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                                    c10::IntArrayRef padding, c10::IntArrayRef dilation,
                                    bool transposed, c10::IntArrayRef output_padding,
                                    int64_t groups) {
  std::optional<at::Tensor> bias_h;
  if (bias && bias->defined()) bias_h = bias->cpu();
  auto out = at::convolution(input.cpu(), weight.cpu(), bias_h, stride, padding, dilation,
                             transposed, output_padding, groups);
  return out.to(input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
    c10::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  std::vector<int64_t> bias_sizes{transposed ? weight.size(1) * groups : weight.size(0)};
  auto r = at::convolution_backward(grad_output.cpu(), input.cpu(), weight.cpu(), bias_sizes,
                                    stride, padding, dilation, transposed, output_padding, groups,
                                    output_mask);
  return {to_device_of(std::get<0>(r), input), to_device_of(std::get<1>(r), input),
          to_device_of(std::get<2>(r), input)};
}

// The fused LSTM cell RNN modules take on a non-CPU device; same maths as the CUDA kernel, with the
// activated gates kept as the workspace for backward.
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  auto gates = input_gates.cpu() + hidden_gates.cpu();
  if (input_bias && input_bias->defined()) gates = gates + input_bias->cpu();
  if (hidden_bias && hidden_bias->defined()) gates = gates + hidden_bias->cpu();
  auto chunks = gates.chunk(4, 1);
  auto i = chunks[0].sigmoid(), f = chunks[1].sigmoid(), g = chunks[2].tanh(),
       o = chunks[3].sigmoid();
  auto cy = f * cx.cpu() + i * g;
  auto hy = o * cy.tanh();
  auto workspace = at::cat({i, f, g, o}, 1);
  auto dev = input_gates.device();
  return {hy.to(dev), cy.to(dev), workspace.to(dev)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward_impl(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  auto dev = workspace.device();
  auto ws = workspace.cpu();
  auto chunks = ws.chunk(4, 1);
  auto i = chunks[0], f = chunks[1], g = chunks[2], o = chunks[3];
  auto cy_h = cy.cpu(), cx_h = cx.cpu();
  auto tanh_cy = cy_h.tanh();
  auto ghy = grad_hy && grad_hy->defined() ? grad_hy->cpu() : at::zeros_like(tanh_cy);
  auto gcy = grad_cy && grad_cy->defined() ? grad_cy->cpu() : at::zeros_like(tanh_cy);
  auto gc = gcy + ghy * o * (1 - tanh_cy * tanh_cy);
  auto gi = gc * g * i * (1 - i);
  auto gf = gc * cx_h * f * (1 - f);
  auto gg = gc * i * (1 - g * g);
  auto go = ghy * tanh_cy * o * (1 - o);
  auto grad_gates = at::cat({gi, gf, gg, go}, 1);
  auto grad_cx = gc * f;
  at::Tensor grad_bias;
  if (has_bias) grad_bias = grad_gates.sum(0, /*keepdim=*/false).to(dev);
  return {grad_gates.to(dev), grad_cx.to(dev), grad_bias};
}

// The common case of the fallback without at::native::cpu_fallback's generality (its _to_cpu and
// _copy_from_and_resize round trips through the dispatcher): tensor and tensor-list arguments
// (the optimizers' _foreach_* kernels), some on a musa device, and returns that are new tensors or
// lists of them, or the written arguments themselves. Returns false, touching nothing, for
// anything else (returned views, complex or lazily conjugated/negated operands), which the full
// fallback then runs.
namespace {

bool musa_tensor(const at::Tensor& t) { return t.defined() && t.device().type() == kMusa; }

// Whether the lean path may take this musa operand (see to_cpu: these get copies).
bool lean_operand(const at::Tensor& t, c10::DeviceIndex& device) {
  if (!musa_tensor(t)) return true;
  if (t.is_complex() || t.is_conj() || t.is_neg()) return false;
  if (device < 0) device = t.device().index();
  return true;
}

bool tensor_list_type(const c10::TypePtr& type) {
  if (type->kind() != c10::TypeKind::ListType) return false;
  return type->castRaw<c10::ListType>()->getElementType()->kind() == c10::TypeKind::TensorType;
}

// A result the CPU kernel returned: the musa operand it aliases, or a copy on `device` (a result
// the kernel allocated, strides kept).
at::Tensor lean_result(const at::Tensor& r, c10::ArrayRef<at::Tensor> aliases,
                       c10::ArrayRef<at::Tensor> originals, c10::DeviceIndex device) {
  if (!r.defined() || r.device().type() == kMusa) return r;
  for (size_t i = 0; i < aliases.size(); ++i) {
    if (musa_tensor(originals[i]) && r.is_same(aliases[i])) return originals[i];
  }
  // A sparse (or other non-strided) result goes to the device as torch's fallback sends it, so a
  // layout the device lacks fails as it would there ("Could not run ... 'Sparsemusa' backend").
  if (r.layout() != c10::kStrided) return r.to(c10::Device(kMusa, device));
  auto out = empty_strided(r.sizes(), r.strides(), r.scalar_type(), std::nullopt,
                           c10::Device(kMusa, device), std::nullopt);
  if (r.numel() > 0) fallback_alias(out).copy_(r);
  return out;
}

}  // namespace

bool lean_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  for (const auto& r : schema.returns()) {
    if (r.type()->kind() != c10::TypeKind::TensorType && !tensor_list_type(r.type())) return false;
    if (r.alias_info() != nullptr && !r.alias_info()->isWrite()) return false;  // a view
  }
  const auto& args = schema.arguments();
  const size_t n = args.size();
  const size_t base = stack->size() - n;
  c10::DeviceIndex device = -1;
  bool lists = false;
  for (size_t i = 0; i < n; ++i) {
    const auto& iv = (*stack)[base + i];
    if (iv.isTensor()) {
      if (!lean_operand(iv.toTensor(), device)) return false;
    } else if (iv.isTensorList()) {
      lists = true;
      for (const auto& element : iv.toListRef()) {
        if (!lean_operand(element.toTensor(), device)) return false;
      }
    } else if (iv.isList()) {
      for (const auto& element : iv.toListRef()) {
        if (element.isTensor()) return false;  // optional-tensor lists: the full fallback
      }
    }
  }
  if (device < 0) return false;  // no musa operand: where would results go?

  // Operands in argument order, list elements flattened; list arguments remember where their
  // elements start.
  c10::SmallVector<at::Tensor, 16> originals, aliases;
  c10::SmallVector<size_t, 8> first(n + 1, 0);
  c10::SmallVector<c10::IValue, 4> original_lists;
  if (lists) original_lists.resize(n);
  for (size_t i = 0; i < n; ++i) {
    first[i] = originals.size();
    auto& iv = (*stack)[base + i];
    if (iv.isTensor()) {
      const auto& t = iv.toTensor();
      if (!musa_tensor(t)) continue;
      originals.push_back(t);
      aliases.push_back(fallback_alias(t));
      iv = c10::IValue(aliases.back());
    } else if (lists && iv.isTensorList()) {
      auto list = iv.toTensorList();
      c10::List<at::Tensor> host;
      host.reserve(list.size());
      for (const at::Tensor t : list) {
        originals.push_back(t);
        aliases.push_back(musa_tensor(t) ? fallback_alias(t) : t);
        host.push_back(aliases.back());
      }
      original_lists[i] = std::move(iv);
      iv = c10::IValue(std::move(host));
    }
  }
  first[n] = originals.size();
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);

  // Written arguments were written where they are, unless the kernel resized them (a resized
  // alias has fresh host memory): then the musa tensor is resized and gets the result.
  for (size_t i = 0; i < n; ++i) {
    const auto* info = args[i].alias_info();
    if (info == nullptr || !info->isWrite()) continue;
    for (size_t k = first[i]; k < first[i + 1]; ++k) {
      if (musa_tensor(originals[k])) copy_from_and_resize(aliases[k], originals[k]);
    }
  }
  const size_t returns = schema.returns().size();
  for (size_t j = stack->size() - returns; j < stack->size(); ++j) {
    auto& iv = (*stack)[j];
    if (iv.isTensor()) {
      iv = c10::IValue(lean_result(iv.toTensor(), aliases, originals, device));
      continue;
    }
    if (!iv.isTensorList()) continue;
    // A written list argument returned: the caller's own list.
    const auto* info = schema.returns()[j - (stack->size() - returns)].alias_info();
    if (info != nullptr && info->isWrite()) {
      for (size_t i = 0; i < n; ++i) {
        if (lists && args[i].alias_info() != nullptr && *args[i].alias_info() == *info &&
            original_lists[i].isTensorList()) {
          iv = original_lists[i];
          break;
        }
      }
      continue;
    }
    auto list = iv.toTensorList();
    c10::List<at::Tensor> results;
    results.reserve(list.size());
    for (const at::Tensor r : list) results.push_back(lean_result(r, aliases, originals, device));
    iv = c10::IValue(std::move(results));
  }
  return true;
}

// Boxed fallback: CPU kernels reject musa generators, so swap in the owned CPU generator (and use
// the device's default generator where the caller gave none, as a real backend would).
void sim_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t n = args.size();
  const size_t base = stack->size() - n;
  // Without an explicit generator, draw from the default generator of the tensors' device.
  c10::DeviceIndex gen_device = t_current_device;
  for (size_t i = 0; i < n; ++i) {
    const auto& iv = (*stack)[base + i];
    if (iv.isTensor() && iv.toTensor().defined() && iv.toTensor().device().type() == kMusa) {
      gen_device = iv.toTensor().device().index();
      break;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const auto& type = args[i].type();
    bool is_gen = type->kind() == c10::TypeKind::GeneratorType;
    if (!is_gen && type->kind() == c10::TypeKind::OptionalType) {
      is_gen = type->castRaw<c10::OptionalType>()->getElementType()->kind() ==
               c10::TypeKind::GeneratorType;
    }
    if (!is_gen) continue;
    auto& iv = (*stack)[base + i];
    at::Generator gen;
    if (iv.isGenerator() && iv.toGenerator().device().type() == kMusa) {
      gen = iv.toGenerator();
    } else if (iv.isNone()) {
      gen = default_generator(gen_device);
    }
    if (gen.defined()) {
      std::lock_guard<std::mutex> lock(gen.mutex());
      iv = c10::IValue(static_cast<SimGenerator*>(gen.unsafeGetGeneratorImpl())->for_kernel());
    }
  }
  // A device kernel is one operator to the profiler: the CPU ops the fallback runs for it
  // (copies, the CPU kernel) would show up nested under it, twice where the op names match.
  // (Turning recording off rebuilds the thread's callback set: only when someone records.)
  std::optional<at::DisableRecordFunctionGuard> no_profiling;
  if (at::hasCallbacks()) no_profiling.emplace();
  if (!lean_fallback(op, stack)) at::native::cpu_fallback(op, stack);
}

// native_dropout takes no generator argument: its CPU kernel, reached through the fallback, would
// draw from the CPU default generator. A device kernel draws from its device's default generator
// (torch.musa.manual_seed / set_rng_state govern dropout masks), so the mask is drawn here with
// bernoulli_ on the musa tensor, whose generator the fallback resolves. Same results otherwise.
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train) {
  if (input.numel() == 0) {
    return {input, at::empty_like(input)};
  }
  if (train.has_value() && !*train) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  const double p1m = 1. - p;
  const double scale = p1m == 0 ? 0. : 1. / p1m;
  auto mask = at::empty_like(input, input.options().dtype(at::kBool));
  mask.bernoulli_(p1m);
  return {input.mul(mask).mul_(scale), mask};
}

at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&,
                                       const std::optional<at::Tensor>&, int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
              "autocast.\nMany models use a sigmoid layer right before the binary cross entropy "
              "layer.\nIn this case, combine the two layers using "
              "torch.nn.functional.binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss."
              "  binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.");
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("copy_", copy_);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_to_cpu", to_cpu);
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("view", at::native::view);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("unfold", at::native::unfold);
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("view_as_complex", at::native::view_as_complex);
  m.impl("resize_", resize_);
  m.impl("set_.source_Storage_storage_offset", set_storage);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_", set_empty);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("record_stream", record_stream);
  m.impl("convolution_overrideable", convolution_overrideable);
  m.impl("convolution_backward_overrideable", convolution_backward_overrideable);
  m.impl("_thnn_fused_lstm_cell", fused_lstm_cell);
  m.impl("_thnn_fused_lstm_cell_backward_impl", fused_lstm_cell_backward_impl);
  m.impl("native_dropout", native_dropout);
}

// Ops whose composite kernel would call an out= variant with a wrongly shaped output: run the whole
// functional op through the fallback instead (as a real backend's own kernel would).
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mse_loss", torch::CppFunction::makeFromBoxedFunction<&sim_fallback>());
  // Their composite kernels call a DispatchStub for the output's device type, which only CPU has.
  for (const char* name : {"kaiser_window", "kaiser_window.periodic", "kaiser_window.beta"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&sim_fallback>());
  }
  // torch_musa has its own group-norm kernels; torch's composite one views the input and fails
  // on channels-last tensors (diffusers' UNets), which the CPU kernel handles.
  for (const char* name : {"native_group_norm", "native_group_norm_backward"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&sim_fallback>());
  }
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&sim_fallback>());
}

// torch registers an autograd fallback for AutogradPrivateUse1 itself only from 2.8 or 2.9 on;
// before that an out-of-tree backend registers one, or every operator without an autograd kernel
// of its own (c10d's collectives among them) refuses musa tensors. Registered at load, where torch
// has none, and kept for the process.
const bool g_autograd_fallback = [] {
  const auto key = c10::DispatchKey::AutogradPrivateUse1;
  if (c10::Dispatcher::singleton().hasBackendFallbackForDispatchKey(key)) return false;
  auto* library = new torch::Library(torch::Library::IMPL, "_", key, __FILE__, __LINE__);
  library->fallback(torch::CppFunction::makeFallthrough());
  return true;
}();

}  // namespace torchada_sim


// The autocast kernel macros name ATen types unqualified: they expect to expand in at::autocast.
namespace at::autocast {
TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define TORCHADA_SIM_LOWER(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(TORCHADA_SIM_LOWER)
  KERNEL_PRIVATEUSEONE(convolution_overrideable, lower_precision_fp)
#define TORCHADA_SIM_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(TORCHADA_SIM_FP32)
#define TORCHADA_SIM_FP32_OPT(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(TORCHADA_SIM_FP32_OPT)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
#define TORCHADA_SIM_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(TORCHADA_SIM_PROMOTE)
  m.impl("binary_cross_entropy", TORCH_FN(torchada_sim::binary_cross_entropy_banned));
}

// Ops outside the lists run unchanged under autocast (torch registers this only for in-tree keys).
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}
}  // namespace at::autocast
