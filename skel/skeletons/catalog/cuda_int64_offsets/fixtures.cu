// Fixtures for cuda-int64-offsets: 32-bit block-index x size products in global addresses (match),
// the same kernels computing them in 64 bits (uses), and products that cannot grow: a constant
// multiplier, a flat index bounded by an `int` count, a per-row table (ok). Self-written after the
// shapes of the history instances (exllamav2's quantize kernels, aiter's RoPE entry kernels,
// lmdeploy's grid-stride activation) and of a paged KV-cache gather; compiled with
// `nvcc -arch=sm_90 -c`.

#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

// A KV-cache row gather: the slot read from the table times the row length, in `int`.
// skel: match cuda-int64-offsets
__global__ void gather_cache_rows_int32(uint8_t* out, const uint8_t* cache, const int* slot_table, int row_bytes) {
  const int t = blockIdx.x;
  const int slot = slot_table[t];
  for (int c = threadIdx.x; c < row_bytes; c += blockDim.x) out[t * row_bytes + c] = cache[slot * row_bytes + c];
}

// The same gather with 64-bit row indices.
// skel: ok cuda-int64-offsets
// skel: uses cuda-int64-offsets
__global__ void gather_cache_rows_int64(uint8_t* out, const uint8_t* cache, const int* slot_table, int row_bytes) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slot_table[t];
  for (int c = threadIdx.x; c < row_bytes; c += blockDim.x) out[t * row_bytes + c] = cache[slot * row_bytes + c];
}

// Round-to-nearest quantisation of a [rows, columns] weight: `int idx = row * columns + column`.
// skel: match cuda-int64-offsets
__global__ void quantize_rtn_int32(const float* weights, const float* scale, uint16_t* out_q, int rows, int columns,
                                   int qmax) {
  const int column = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y;
  if (column >= columns) return;
  const int idx = row * columns + column;
  float q = rintf(weights[idx] / scale[column]);
  out_q[idx] = (uint16_t)fminf(fmaxf(q, 0.f), (float)qmax);
}

// The exllamav2 fix: the index computed in 64 bits from the start.
// skel: ok cuda-int64-offsets
// skel: uses cuda-int64-offsets
__global__ void quantize_rtn_int64(const float* weights, const float* scale, uint16_t* out_q, int rows, int columns,
                                   int qmax) {
  const int column = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y;
  if (column >= columns) return;
  const uint64_t idx = (uint64_t)row * (uint64_t)columns + (uint64_t)column;
  float q = rintf(weights[idx] / scale[column]);
  out_q[idx] = (uint16_t)fminf(fmaxf(q, 0.f), (float)qmax);
}

// RoPE over [seq, batch, heads, dim]: 32-bit sequence and batch indices times runtime strides.
// skel: match cuda-int64-offsets
__global__ void rope_sbhd_int32(half* out, const half* in, const float* freqs, int stride_s, int stride_b,
                                int size_f) {
  const int32_t sid = blockIdx.x;
  const int32_t bid = blockIdx.y;
  const int32_t offset = sid * stride_s + bid * stride_b;
  const float f = freqs[sid * size_f + threadIdx.x % size_f];
  out[offset + threadIdx.x] = __float2half(__half2float(in[offset + threadIdx.x]) * cosf(f));
}

// A grid-stride activation over m * n elements, the index and the bound in `int` (lmdeploy's bug).
// skel: match cuda-int64-offsets
__global__ void gelu_grid_stride_int32(half* out, const half* in, int m, int n) {
  for (int id = blockIdx.x * blockDim.x + threadIdx.x; id < m * n; id += blockDim.x * gridDim.x) {
    const float x = __half2float(in[id]);
    out[id] = __float2half(0.5f * x * (1.f + tanhf(0.79788456f * (x + 0.044715f * x * x * x))));
  }
}

// The fixed loop: a 64-bit index and bound.
// skel: ok cuda-int64-offsets
// skel: uses cuda-int64-offsets
__global__ void gelu_grid_stride_int64(half* out, const half* in, int m, int n) {
  for (int64_t id = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; id < 1LL * m * n;
       id += (int64_t)blockDim.x * gridDim.x) {
    const float x = __half2float(in[id]);
    out[id] = __float2half(0.5f * x * (1.f + tanhf(0.79788456f * (x + 0.044715f * x * x * x))));
  }
}

// The cast comes after the product: `(int64_t)(row * cols)` casts the wrapped value.
// skel: match cuda-int64-offsets
__global__ void row_scale_cast_too_late(float* y, const float* x, const float* s, int cols) {
  const int row = blockIdx.x;
  const int64_t base = (int64_t)(row * cols);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[base + c] = x[base + c] * s[row];
}

// A flat index over an `int` element count: in bounds it fits in `int`, nothing to widen.
// skel: ok cuda-int64-offsets
__global__ void scale_flat_int_count(float* y, const float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}

// A constant multiplier: 256 elements per block, bounded by an `int` count.
// skel: ok cuda-int64-offsets
__global__ void add_tiles_const(float* y, const float* x, int n) {
  const int base = blockIdx.x * 256;
  for (int j = threadIdx.x; j < 256; j += blockDim.x)
    if (base + j < n) y[base + j] += x[base + j];
}

// Per-row tables only: the block index is below the number of rows.
// skel: ok cuda-int64-offsets
__global__ void rstd_per_row(float* rstd, const float* sum_sq, float eps, int cols) {
  if (threadIdx.x == 0) rstd[blockIdx.x] = rsqrtf(sum_sq[blockIdx.x] / cols + eps);
}

// The row base promoted once; the in-row offsets stay 32-bit.
// skel: ok cuda-int64-offsets
// skel: uses cuda-int64-offsets
__global__ void row_scale_promoted_base(float* y, const float* x, const float* s, int cols) {
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] * s[row];
}
