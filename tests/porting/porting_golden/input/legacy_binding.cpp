// Host side of a THC-era extension: argument checks and dispatch to the CUDA kernels.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <THC/THC.h>

#include <tuple>

std::tuple<at::Tensor, at::Tensor> roi_pool_forward_cuda(const at::Tensor& input,
                                                         const at::Tensor& rois, float scale,
                                                         int pooled_h, int pooled_w);

// Old-style checks through the deprecated type() accessor.
#define CHECK_CUDA(x) AT_ASSERTM(x.type().is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) AT_ASSERTM(x.is_contiguous(), #x " must be contiguous")

std::tuple<at::Tensor, at::Tensor> roi_pool_forward(const at::Tensor& input,
                                                    const at::Tensor& rois, double scale,
                                                    int64_t pooled_h, int64_t pooled_w) {
  if (input.type().is_cuda()) {
    CHECK_CUDA(rois);
    CHECK_CONTIGUOUS(input);
    int count = 0;
    THCudaCheck(cudaGetDeviceCount(&count));
    return roi_pool_forward_cuda(input, rois, static_cast<float>(scale),
                                 static_cast<int>(pooled_h), static_cast<int>(pooled_w));
  }
  AT_ERROR("roi_pool_forward is only implemented on the GPU");
}

// The device a result is allocated on, as the older dispatch code spelled it.
at::Tensor zeros_like_on_device(const at::Tensor& ref) {
  auto options = at::TensorOptions().dtype(ref.scalar_type()).device(at::kCUDA, ref.get_device());
  return at::zeros(ref.sizes(), options);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("roi_pool_forward", &roi_pool_forward, "ROI max pooling (CUDA)");
}
