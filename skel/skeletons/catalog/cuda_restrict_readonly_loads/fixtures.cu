// Fixtures for cuda-restrict-readonly-loads: read-only pointer parameters with no `__restrict__`
// read in a loop that also stores through an unqualified output, or after such a store (match);
// the same kernels qualified or reading through `__ldg` (uses), and near misses: reads that all
// precede the one store, an in-place update, a restrict-qualified output, an input passed to a
// helper, a reduction stored once (ok). Self-written after the shapes of the history instances
// (exllamav2 GEMM and Q4 cache kernels, bitsandbytes blockwise dequant) and of sglang/vLLM
// elementwise kernels; compiled with `nvcc -arch=sm_90 -c`.

#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

constexpr int kItems = 8;

// int8 -> bf16 row dequantisation, 8 columns per thread in an unrolled loop: each copy's loads
// wait behind the previous copy's store, and `scale[row]` is reloaded after each.
// skel: match cuda-restrict-readonly-loads
__global__ void dequant_rows_unqualified(__nv_bfloat16* out, const int8_t* q, const float* scale, int cols) {
  const int64_t row = blockIdx.y;
  const int col0 = blockIdx.x * blockDim.x * kItems + threadIdx.x;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int col = col0 + j * blockDim.x;
    if (col < cols) out[row * cols + col] = __float2bfloat16(float(q[row * cols + col]) * scale[row]);
  }
}

// The same kernel with every pointer qualified: the loads issue before the stores.
// skel: ok cuda-restrict-readonly-loads
// skel: uses cuda-restrict-readonly-loads
__global__ void dequant_rows_restrict(__nv_bfloat16* __restrict__ out, const int8_t* __restrict__ q,
                                      const float* __restrict__ scale, int cols) {
  const int64_t row = blockIdx.y;
  const int col0 = blockIdx.x * blockDim.x * kItems + threadIdx.x;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int col = col0 + j * blockDim.x;
    if (col < cols) out[row * cols + col] = __float2bfloat16(float(q[row * cols + col]) * scale[row]);
  }
}

// Neox-style rotary embedding over a head of kHeadDim (a template parameter): the cos/sin cache
// and the positions are read inside the loop that writes the rotated query; its bound is a
// compile-time constant, so nvcc unrolls it (by 4 at kHeadDim = 128: four serialised rounds).
// skel: match cuda-restrict-readonly-loads
template <int kHeadDim>
__global__ void rotary_neox_unqualified(half* q_out, const half* q, const float* cos_sin_cache,
                                        const int64_t* positions, int num_heads) {
  const int token = blockIdx.x;
  const int head = threadIdx.y;
  const half* src = q + (int64_t(token) * num_heads + head) * kHeadDim;
  half* dst = q_out + (int64_t(token) * num_heads + head) * kHeadDim;
  for (int i = threadIdx.x; i < kHeadDim / 2; i += 32) {
    const float c = cos_sin_cache[positions[token] * kHeadDim + i];
    const float s = cos_sin_cache[positions[token] * kHeadDim + kHeadDim / 2 + i];
    const float x1 = __half2float(src[i]), x2 = __half2float(src[i + kHeadDim / 2]);
    dst[i] = __float2half(x1 * c - x2 * s);
    dst[i + kHeadDim / 2] = __float2half(x2 * c + x1 * s);
  }
}

// A grid-stride bias-add: a runtime loop (not unrolled either way) whose `bias` read is
// reloaded after every store; conditional on what those reloads cost.
// skel: match cuda-restrict-readonly-loads
__global__ void add_bias_grid_stride(float* y, const float* x, const float* bias, int64_t n, int cols) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = x[i] + bias[i % cols];
  }
}

// Two outputs written one after the other: the second input's load comes after the first store.
// skel: match cuda-restrict-readonly-loads
__global__ void split_gate_up(float* gate_out, float* up_out, const float* gate_up, int d) {
  const int64_t row = blockIdx.x;
  const int i = blockIdx.y * blockDim.x + threadIdx.x;
  if (i >= d) return;
  gate_out[row * d + i] = gate_up[row * 2 * d + i];
  up_out[row * d + i] = gate_up[row * 2 * d + d + i];
}

// One element per thread: both loads come before the only store, nothing to reorder.
// skel: ok cuda-restrict-readonly-loads
__global__ void silu_mul_one_per_thread(__nv_bfloat16* out, const __nv_bfloat16* x, const __nv_bfloat16* gate,
                                        int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float a = __bfloat162float(x[i]);
    out[i] = __float2bfloat16(a / (1.f + __expf(-a)) * __bfloat162float(gate[i]));
  }
}

// In place: `x` is read and written, so it is no read-only input (restrict would be a false promise).
// skel: ok cuda-restrict-readonly-loads
__global__ void scale_inplace(float* x, int n, float s) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4 + j;
    if (i < n) x[i] = x[i] * s;
  }
}

// The output is `__restrict__`: the reads cannot see its stores, the compiler may already reorder.
// skel: ok cuda-restrict-readonly-loads
__global__ void dequant_rows_out_restrict(__nv_bfloat16* __restrict__ out, const int8_t* q, const float* scale,
                                          int cols) {
  const int64_t row = blockIdx.y;
  const int col0 = blockIdx.x * blockDim.x * kItems + threadIdx.x;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int col = col0 + j * blockDim.x;
    if (col < cols) out[row * cols + col] = __float2bfloat16(float(q[row * cols + col]) * scale[row]);
  }
}

__device__ __forceinline__ float load_scaled(const float* p, int i, float s) { return p[i] * s; }

// The input goes whole to a helper: whether it is written there is not visible in the kernel.
// skel: ok cuda-restrict-readonly-loads
__global__ void scale_through_helper(float* y, const float* x, int n, float s) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4 + j;
    if (i < n) y[i] = load_scaled(x, i, s);
  }
}

// A GEMV row: the K loop only reads, the single store comes after it.
// skel: ok cuda-restrict-readonly-loads
__global__ void gemv_rows(float* y, const float* w, const float* x, int K) {
  const int64_t row = blockIdx.x;
  float acc = 0.f;
  for (int k = threadIdx.x; k < K; k += 32) acc += w[row * K + k] * x[k];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0) y[row] = acc;
}

// The code-book lookup reads through the read-only path with `__ldg` (bitsandbytes' fix).
// skel: ok cuda-restrict-readonly-loads
// skel: uses cuda-restrict-readonly-loads
__global__ void dequant_codebook_ldg(float* out, const unsigned char* A, const float* code, const float* absmax,
                                     int n) {
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  const float amax = __ldg(&absmax[base / 64]);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (base + j < n) out[base + j] = __ldg(&code[__ldg(&A[base + j])]) * amax;
  }
}
