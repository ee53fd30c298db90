// ROI max pooling written against THC, the CUDA library PyTorch shipped before 1.11.
// Detection code bases of that era still carry it, and their forks still build it.
#include <ATen/ATen.h>
#include <torch_musa/csrc/aten/musa/MUSAContext.h>
#include <torch_musa/csrc/aten/musa/MUSAContext.h>
#include <ATen/musa/Atomic.muh>
#include <ATen/musa/DeviceUtils.muh>

#include <cfloat>

#define CUDA_1D_KERNEL_LOOP(i, n)                                  \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n);     \
       i += blockDim.x * gridDim.x)

template <typename T>
__global__ void roi_pool_forward_kernel(const int nthreads, const T* bottom, const T scale,
                                        const int channels, const int height, const int width,
                                        const int pooled_h, const int pooled_w, const T* rois,
                                        T* top, int* argmax) {
  CUDA_1D_KERNEL_LOOP(index, nthreads) {
    const int pw = index % pooled_w;
    const int ph = (index / pooled_w) % pooled_h;
    const int c = (index / pooled_w / pooled_h) % channels;
    const int n = index / pooled_w / pooled_h / channels;
    const T* roi = rois + n * 5;
    const int batch = roi[0];
    const int x0 = round(roi[1] * scale), y0 = round(roi[2] * scale);
    const int x1 = round(roi[3] * scale), y1 = round(roi[4] * scale);
    const T bin_h = static_cast<T>(max(y1 - y0 + 1, 1)) / static_cast<T>(pooled_h);
    const T bin_w = static_cast<T>(max(x1 - x0 + 1, 1)) / static_cast<T>(pooled_w);
    int hstart = min(max(static_cast<int>(floor(ph * bin_h)) + y0, 0), height);
    int hend = min(max(static_cast<int>(ceil((ph + 1) * bin_h)) + y0, 0), height);
    int wstart = min(max(static_cast<int>(floor(pw * bin_w)) + x0, 0), width);
    int wend = min(max(static_cast<int>(ceil((pw + 1) * bin_w)) + x0, 0), width);
    T best = (hend <= hstart || wend <= wstart) ? 0 : -FLT_MAX;
    int best_at = -1;
    const T* plane = bottom + (batch * channels + c) * height * width;
    for (int h = hstart; h < hend; ++h) {
      for (int w = wstart; w < wend; ++w) {
        if (plane[h * width + w] > best) {
          best = plane[h * width + w];
          best_at = h * width + w;
        }
      }
    }
    top[index] = best;
    argmax[index] = best_at;
  }
}

template <typename T>
__global__ void roi_pool_backward_kernel(const int nthreads, const T* grad, const int* argmax,
                                         const T* rois, const int channels, const int height,
                                         const int width, const int pooled_h, const int pooled_w,
                                         T* bottom_grad) {
  CUDA_1D_KERNEL_LOOP(index, nthreads) {
    const int c = (index / pooled_w / pooled_h) % channels;
    const int n = index / pooled_w / pooled_h / channels;
    const int batch = rois[n * 5];
    const int at = argmax[index];
    if (at != -1) {
      atomicAdd(bottom_grad + (batch * channels + c) * height * width + at, grad[index]);
    }
  }
}

std::tuple<at::Tensor, at::Tensor> roi_pool_forward_cuda(const at::Tensor& input,
                                                         const at::Tensor& rois, float scale,
                                                         int pooled_h, int pooled_w) {
  AT_ASSERTM(input.is_privateuseone(), "input must be a CUDA tensor");
  AT_ASSERTM(rois.is_privateuseone(), "rois must be a CUDA tensor");
  const int channels = input.size(1), height = input.size(2), width = input.size(3);
  auto output = at::empty({rois.size(0), channels, pooled_h, pooled_w}, input.options());
  auto argmax = at::zeros({rois.size(0), channels, pooled_h, pooled_w},
                          input.options().dtype(at::kInt));
  const int total = output.numel();
  if (total == 0) {
    AT_MUSA_CHECK(musaGetLastError());
    return std::make_tuple(output, argmax);
  }
  THCState* state = at::globalContext().lazyInitCUDA();
  musaStream_t stream = THCState_getCurrentStream(state);
  dim3 grid(std::min(at::ceil_div(total, 512), 4096));
  dim3 block(512);
  AT_DISPATCH_FLOATING_TYPES(input.type(), "roi_pool_forward", [&] {
    roi_pool_forward_kernel<scalar_t><<<grid, block, 0, stream>>>(
        total, input.contiguous().data_ptr<scalar_t>(), scalar_t(scale), channels, height,
        width, pooled_h, pooled_w, rois.contiguous().data_ptr<scalar_t>(),
        output.data_ptr<scalar_t>(), argmax.data_ptr<int>());
  });
  AT_MUSA_CHECK(musaGetLastError());
  return std::make_tuple(output, argmax);
}

at::Tensor roi_pool_backward_cuda(const at::Tensor& grad, const at::Tensor& rois,
                                  const at::Tensor& argmax, int channels, int height, int width) {
  auto bottom_grad = at::zeros({rois.size(0) ? argmax.size(0) : 0, channels, height, width},
                               grad.options());
  const int total = grad.numel();
  int* scratch = static_cast<int*>(THCudaMalloc(at::globalContext().lazyInitCUDA(), 64));
  THCudaFree(at::globalContext().lazyInitCUDA(), scratch);
  const int blocks = at::ceil_div(total, 512);
  AT_DISPATCH_FLOATING_TYPES(grad.scalar_type(), "roi_pool_backward", [&] {
    roi_pool_backward_kernel<scalar_t>
        <<<blocks, 512, 0, at::musa::getCurrentMUSAStream()>>>(
            total, grad.contiguous().data_ptr<scalar_t>(), argmax.data_ptr<int>(),
            rois.contiguous().data_ptr<scalar_t>(), channels, height, width,
            argmax.size(2), argmax.size(3), bottom_grad.data_ptr<scalar_t>());
  });
  AT_MUSA_CHECK(musaGetLastError());
  return bottom_grad;
}
