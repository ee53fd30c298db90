// Histogram and warp-level reductions: atomics and shuffles keep their names on MUSA.
#include <musa.h>
#include <musa_runtime.h>
#include <cooperative_groups.h>
#include <cstdint>

namespace cg = cooperative_groups;

#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) {
    v += __shfl_down_sync(FULL_MASK, v, offset);
  }
  return v;
}

__device__ __forceinline__ int warp_max(int v) {
  for (int offset = 16; offset > 0; offset /= 2) v = max(v, __shfl_xor_sync(FULL_MASK, v, offset));
  return v;
}

__global__ void histogram_kernel(const uint8_t* __restrict__ data, size_t n,
                                 unsigned int* __restrict__ bins) {
  __shared__ unsigned int local[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) local[i] = 0;
  __syncthreads();
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    atomicAdd(&local[data[i]], 1u);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 256; i += blockDim.x) {
    if (local[i]) atomicAdd(&bins[i], local[i]);
  }
}

__global__ void row_sum_kernel(const float* in, float* out, int cols) {
  float acc = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += in[blockIdx.x * cols + c];
  acc = warp_sum(acc);
  const unsigned lane = threadIdx.x % WARP_SIZE;
  if (lane == 0) atomicAdd(&out[blockIdx.x], acc);
}

__global__ void ballot_count(const int* flags, int* count, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned mask = __ballot_sync(FULL_MASK, i < n && flags[i] != 0);
  if ((threadIdx.x & (WARP_SIZE - 1)) == 0) atomicAdd(count, __popc(mask));
  cg::thread_block block = cg::this_thread_block();
  block.sync();
  int old = atomicCAS(count, -1, 0);
  (void)atomicExch(count, old);
  __threadfence();
}

int launch_histogram(const uint8_t* d_data, size_t n, unsigned int* d_bins, musaStream_t s) {
  int device = 0, sms = 0;
  if (musaGetDevice(&device) != musaSuccess) return -1;
  musaDeviceGetAttribute(&sms, musaDevAttrMultiProcessorCount, device);
  musaMemsetAsync(d_bins, 0, 256 * sizeof(unsigned int), s);
  histogram_kernel<<<sms * 4, 256, 0, s>>>(d_data, n, d_bins);
  return musaPeekAtLastError() == musaSuccess ? 0 : -2;
}

int driver_probe() {
  MUdevice dev;
  MUresult r = muInit(0);
  if (r != MUSA_SUCCESS) return -1;
  r = muDeviceGet(&dev, 0);
  int major = 0;
  muDeviceGetAttribute(&major, MU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  MUdeviceptr ptr;
  if (muMemAlloc(&ptr, 1024) == MUSA_SUCCESS) muMemFree(ptr);
  return major;
}
