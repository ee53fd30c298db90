// Device code: the simulator has no MUSA compiler, so building this must fail, after porting.
#include <cuda_runtime.h>

__global__ void fill_kernel(float* out, float value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}
