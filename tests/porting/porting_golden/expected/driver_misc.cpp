// Driver API, random numbers, FFT and solver handles in one translation unit.
#include <musa.h>
#include <murand.h>
#include <murand_kernel.h>
#include <mufft.h>
#include <musolver.h>
#include <musparse.h>
#include <thrust/device_vector.h>
#include <thrust/sort.h>
#include <thrust/system/musa/execution_policy.h>
#include <cub/cub.cuh>
#include <cuda/std/atomic>
#include <cutlass/cutlass.h>

__global__ void init_rng(murandStatePhilox4_32_10_t* states, unsigned long long seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  murand_init(seed, i, 0, &states[i]);
}

__global__ void sample(murandStatePhilox4_32_10_t* states, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = murand_uniform(&states[i]) + murand_normal(&states[i]);
}

void fill_uniform(float* d, size_t n, musaStream_t s) {
  murandGenerator_t gen;
  murandCreateGenerator(&gen, MURAND_RNG_PSEUDO_PHILOX4_32_10);
  murandSetStream(gen, s);
  murandSetPseudoRandomGeneratorSeed(gen, 1234ULL);
  if (murandGenerateUniform(gen, d, n) != MURAND_STATUS_SUCCESS) return;
  murandDestroyGenerator(gen);
}

void fft(mufftComplex* data, int n, musaStream_t s) {
  mufftHandle plan;
  if (mufftPlan1d(&plan, n, MUFFT_C2C, 1) != MUFFT_SUCCESS) return;
  mufftSetStream(plan, s);
  mufftExecC2C(plan, data, data, MUFFT_FORWARD);
  mufftDestroy(plan);
}

int cholesky(float* a, int n, musaStream_t s) {
  musolverDnHandle_t h;
  musolverDnCreate(&h);
  musolverDnSetStream(h, s);
  int lwork = 0;
  musolverDnSpotrf_bufferSize(h, MUBLAS_FILL_MODE_LOWER, n, a, n, &lwork);
  float* work;
  int* info;
  musaMalloc(&work, lwork * sizeof(float));
  musaMalloc(&info, sizeof(int));
  musolverStatus_t st = musolverDnSpotrf(h, MUBLAS_FILL_MODE_LOWER, n, a, n, work, lwork, info);
  musaFree(work);
  musaFree(info);
  musolverDnDestroy(h);
  return st == MUSOLVER_STATUS_SUCCESS ? 0 : 1;
}

void sort_keys(thrust::device_vector<int>& v, musaStream_t s) {
  thrust::sort(thrust::musa::par.on(s), v.begin(), v.end());
  size_t temp = 0;
  cub::DeviceRadixSort::SortKeys(nullptr, temp, (int*)nullptr, (int*)nullptr, 0);
}

using ArchTag = cutlass::arch::Sm80;

int context_info() {
  MUcontext ctx;
  MUresult r = muCtxGetCurrent(&ctx);
  if (r != MUSA_SUCCESS) return -1;
  MUstream st;
  muStreamCreate(&st, MU_STREAM_NON_BLOCKING);
  muStreamSynchronize(st);
  muStreamDestroy(st);
  musparseHandle_t sp;
  musparseCreate(&sp);
  musparseDestroy(sp);
  return muCtxSynchronize() == MUSA_SUCCESS ? 0 : 1;
}
