"""cuda-programmatic-dependent-launch: a small decode kernel (residual add + RMSNorm of one row
per CTA) launched plainly → launched with the PDL attribute, waiting in-kernel for its
predecessor only where it reads the predecessor's output.

A template only: the CUDA sources below are what `skel skeletons show` / `skel suggest` print
(`before_cuda` → `after_cuda`); there is no harness, so this pair is not run or timed here.
Both sides compile with `nvcc -arch=sm_90a -c`. PDL needs sm_90+; without the attribute (or
on older GPUs) `cudaGridDependencySynchronize()` returns at once.
"""

before_cuda = r"""
#include <cuda_runtime.h>

// y = rmsnorm(x + residual) * weight; one CTA per row, 4 elements per thread.
__global__ void add_rmsnorm(const float* __restrict__ x, float* __restrict__ residual,
                            const float* __restrict__ weight, float* __restrict__ y, int hidden, float eps) {
  __shared__ float warp_sums[32];
  __shared__ float inv_rms;
  const int row = blockIdx.x;
  float w[4], v[4], ss = 0.f;
  for (int j = 0; j < 4; ++j) {
    const int d = threadIdx.x + j * blockDim.x;
    w[j] = d < hidden ? weight[d] : 0.f;
    v[j] = d < hidden ? x[row * hidden + d] + residual[row * hidden + d] : 0.f;  // x: the previous kernel's output
    ss += v[j] * v[j];
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    ss = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x == 0) inv_rms = rsqrtf(ss / hidden + eps);
  }
  __syncthreads();
  for (int j = 0; j < 4; ++j) {
    const int d = threadIdx.x + j * blockDim.x;
    if (d < hidden) {
      residual[row * hidden + d] = v[j];
      y[row * hidden + d] = v[j] * inv_rms * w[j];
    }
  }
}

void launch_add_rmsnorm(const float* x, float* residual, const float* weight, float* y, int rows, int hidden,
                        float eps, cudaStream_t stream) {
  const int threads = 1024;  // 4 x 1024 covers hidden <= 4096
  add_rmsnorm<<<rows, threads, 0, stream>>>(x, residual, weight, y, hidden, eps);
}
"""

after_cuda = r"""
#include <cuda_runtime.h>

// y = rmsnorm(x + residual) * weight; one CTA per row, 4 elements per thread.
__global__ void add_rmsnorm(const float* __restrict__ x, float* __restrict__ residual,
                            const float* __restrict__ weight, float* __restrict__ y, int hidden, float eps) {
  __shared__ float warp_sums[32];
  __shared__ float inv_rms;
  const int row = blockIdx.x;
  float w[4], v[4], ss = 0.f;
  for (int j = 0; j < 4; ++j) {  // the weight is nobody's output: load it before waiting
    const int d = threadIdx.x + j * blockDim.x;
    w[j] = d < hidden ? weight[d] : 0.f;
  }
  cudaGridDependencySynchronize();  // griddepcontrol.wait: the previous kernel's x is complete and visible
  for (int j = 0; j < 4; ++j) {
    const int d = threadIdx.x + j * blockDim.x;
    v[j] = d < hidden ? x[row * hidden + d] + residual[row * hidden + d] : 0.f;
    ss += v[j] * v[j];
  }
  cudaTriggerProgrammaticLaunchCompletion();  // griddepcontrol.launch_dependents: the next kernel may start
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    ss = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x == 0) inv_rms = rsqrtf(ss / hidden + eps);
  }
  __syncthreads();
  for (int j = 0; j < 4; ++j) {
    const int d = threadIdx.x + j * blockDim.x;
    if (d < hidden) {
      residual[row * hidden + d] = v[j];
      y[row * hidden + d] = v[j] * inv_rms * w[j];
    }
  }
}

void launch_add_rmsnorm(const float* x, float* residual, const float* weight, float* y, int rows, int hidden,
                        float eps, cudaStream_t stream) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(rows);
  cfg.blockDim = dim3(1024);  // 4 x 1024 covers hidden <= 4096
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaLaunchKernelEx(&cfg, add_rmsnorm, x, residual, weight, y, hidden, eps);
}
"""
