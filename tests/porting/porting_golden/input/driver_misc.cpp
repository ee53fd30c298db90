// Driver API, random numbers, FFT and solver handles in one translation unit.
#include <cuda.h>
#include <curand.h>
#include <curand_kernel.h>
#include <cufft.h>
#include <cusolverDn.h>
#include <cusparse.h>
#include <thrust/device_vector.h>
#include <thrust/sort.h>
#include <thrust/system/cuda/execution_policy.h>
#include <cub/cub.cuh>
#include <cuda/std/atomic>
#include <cutlass/cutlass.h>

__global__ void init_rng(curandStatePhilox4_32_10_t* states, unsigned long long seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  curand_init(seed, i, 0, &states[i]);
}

__global__ void sample(curandStatePhilox4_32_10_t* states, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = curand_uniform(&states[i]) + curand_normal(&states[i]);
}

void fill_uniform(float* d, size_t n, cudaStream_t s) {
  curandGenerator_t gen;
  curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10);
  curandSetStream(gen, s);
  curandSetPseudoRandomGeneratorSeed(gen, 1234ULL);
  if (curandGenerateUniform(gen, d, n) != CURAND_STATUS_SUCCESS) return;
  curandDestroyGenerator(gen);
}

void fft(cufftComplex* data, int n, cudaStream_t s) {
  cufftHandle plan;
  if (cufftPlan1d(&plan, n, CUFFT_C2C, 1) != CUFFT_SUCCESS) return;
  cufftSetStream(plan, s);
  cufftExecC2C(plan, data, data, CUFFT_FORWARD);
  cufftDestroy(plan);
}

int cholesky(float* a, int n, cudaStream_t s) {
  cusolverDnHandle_t h;
  cusolverDnCreate(&h);
  cusolverDnSetStream(h, s);
  int lwork = 0;
  cusolverDnSpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, a, n, &lwork);
  float* work;
  int* info;
  cudaMalloc(&work, lwork * sizeof(float));
  cudaMalloc(&info, sizeof(int));
  cusolverStatus_t st = cusolverDnSpotrf(h, CUBLAS_FILL_MODE_LOWER, n, a, n, work, lwork, info);
  cudaFree(work);
  cudaFree(info);
  cusolverDnDestroy(h);
  return st == CUSOLVER_STATUS_SUCCESS ? 0 : 1;
}

void sort_keys(thrust::device_vector<int>& v, cudaStream_t s) {
  thrust::sort(thrust::cuda::par.on(s), v.begin(), v.end());
  size_t temp = 0;
  cub::DeviceRadixSort::SortKeys(nullptr, temp, (int*)nullptr, (int*)nullptr, 0);
}

using ArchTag = cutlass::arch::Sm80;

int context_info() {
  CUcontext ctx;
  CUresult r = cuCtxGetCurrent(&ctx);
  if (r != CUDA_SUCCESS) return -1;
  CUstream st;
  cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
  cuStreamSynchronize(st);
  cuStreamDestroy(st);
  cusparseHandle_t sp;
  cusparseCreate(&sp);
  cusparseDestroy(sp);
  return cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 1;
}
