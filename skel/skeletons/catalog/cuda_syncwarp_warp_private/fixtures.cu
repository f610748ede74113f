// Fixtures for cuda-syncwarp-warp-private: block barriers inside loops that order only a warp's own
// slice of shared memory (match), the same loops with `__syncwarp()` (uses), and barriers that do
// order traffic between warps (ok): a block-wide tile, a read of another warp's slice, a slice
// handed to an opaque helper, a barrier outside any loop. Self-written after the shapes of the
// history instances (flashinfer's per-warp output exchange, bitsandbytes' one-warp wmma tail).

#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

// Batched 32x32 transposes: each warp stages a tile in its own slice (`tile[warp]`), in a loop over
// tiles, with a block barrier after the write and after the read.
// skel: match cuda-syncwarp-warp-private
__global__ void __launch_bounds__(256) warp_tile_transpose(const float* __restrict__ x, float* __restrict__ y,
                                                          int tiles) {
  __shared__ float tile[8][32][33];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  for (int base = blockIdx.x * 8; base < tiles; base += gridDim.x * 8) {  // uniform over the block
    const int t = base + warp;
    if (t < tiles)
      for (int r = 0; r < 32; ++r) tile[warp][r][lane] = x[(int64_t)t * 1024 + r * 32 + lane];
    __syncthreads();
    if (t < tiles)
      for (int r = 0; r < 32; ++r) y[(int64_t)t * 1024 + r * 32 + lane] = tile[warp][lane][r];
    __syncthreads();
  }
}

// A flat per-warp scratch (`red[warp_id * 32 + lane]`) in a loop over rows: each warp reduces its own
// rows through shared memory; the block barrier only orders the warp's own slots.
// skel: match cuda-syncwarp-warp-private
template <int kWarps>
__global__ void rows_max_per_warp(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float red[kWarps * 32];
  const int warp_id = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  for (int row0 = blockIdx.x * kWarps; row0 < rows; row0 += gridDim.x * kWarps) {
    const int row = min(row0 + warp_id, rows - 1);  // the last rows computed twice: no early exit
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, x[(int64_t)row * cols + c]);
    red[warp_id * 32 + lane] = m;
    __syncthreads();
    if (lane == 0) {
      float r = red[warp_id * 32];
      for (int i = 1; i < 32; ++i) r = fmaxf(r, red[warp_id * 32 + i]);
      y[row] = r;
    }
    __syncthreads();
  }
}

// A pointer to the warp's slice taken once (`half* stage = smem + warp * 16 * 16`), then a wmma-style
// staging loop: store the accumulator tile, barrier, read it back by rows.
// skel: match cuda-syncwarp-warp-private
__global__ void stage_rows_per_warp(const half* __restrict__ a, half* __restrict__ out, int steps) {
  extern __shared__ half smem[];
  const int warp = threadIdx.x / warpSize;
  const int lane = threadIdx.x % warpSize;
  half* stage = smem + warp * 16 * 16;
  for (int s = 0; s < steps; ++s) {
    const half* src = a + ((int64_t)(blockIdx.x * blockDim.x / 32 + warp) * steps + s) * 256;
    for (int i = lane; i < 256; i += 32) stage[i] = __hmul(src[i], __float2half(0.5f));
    __syncthreads();
    if (lane < 16) {
      half acc = __float2half(0.f);
      for (int j = 0; j < 16; ++j) acc = __hadd(acc, stage[lane * 16 + j]);
      out[((int64_t)(blockIdx.x * blockDim.x / 32 + warp) * steps + s) * 16 + lane] = acc;
    }
    __syncthreads();
  }
}

// The transpose with warp barriers: each warp waits only for its own lanes.
// skel: uses cuda-syncwarp-warp-private
// skel: ok cuda-syncwarp-warp-private
__global__ void __launch_bounds__(256) warp_tile_transpose_syncwarp(const float* __restrict__ x,
                                                                   float* __restrict__ y, int tiles) {
  __shared__ float tile[8][32][33];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  for (int t = blockIdx.x * 8 + warp; t < tiles; t += gridDim.x * 8) {
    const float* src = x + (int64_t)t * 1024;
    float* dst = y + (int64_t)t * 1024;
    for (int r = 0; r < 32; ++r) tile[warp][r][lane] = src[r * 32 + lane];
    __syncwarp();
    for (int r = 0; r < 32; ++r) dst[r * 32 + lane] = tile[warp][lane][r];
    __syncwarp();
  }
}

// A shared-memory GEMM tile: every thread of the block reads what the others wrote.
// skel: ok cuda-syncwarp-warp-private
__global__ void sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int N) {
  __shared__ float sA[16][16];
  __shared__ float sB[16][16];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < N; k0 += 16) {
    sA[ty][tx] = A[row * N + k0 + tx];
    sB[ty][tx] = B[(k0 + ty) * N + col];
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc += sA[ty][k] * sB[k][tx];
    __syncthreads();
  }
  C[row * N + col] = acc;
}

// Each warp writes its own slot, but then every thread reads all warps' slots (the partials of a
// block reduction, inside a loop over rows): the barrier orders traffic between warps.
// skel: ok cuda-syncwarp-warp-private
template <int kWarps>
__global__ void rows_sum_cross_warp(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float partial[kWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[(int64_t)row * cols + c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) partial[warp] = s;
    __syncthreads();
    float total = 0.f;
    for (int w = 0; w < kWarps; ++w) total += partial[w];
    if (threadIdx.x == 0) y[row] = total;
    __syncthreads();
  }
}

// Warps exchange slices: warp w reads the slice of warp w ^ 1 (a butterfly between warp pairs).
// skel: ok cuda-syncwarp-warp-private
__global__ void swap_warp_pairs(const float* __restrict__ x, float* __restrict__ y, int steps) {
  __shared__ float buf[8][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int s = 0; s < steps; ++s) {
    buf[warp][lane] = v;
    __syncthreads();
    v = 0.5f * (v + buf[warp ^ 1][lane]);
    __syncthreads();
  }
  y[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

__device__ void block_copy_async(float* dst, const float* src, int n);

// The whole shared buffer goes to a helper (a cooperative copy): which threads write it is not
// visible here, so the barrier stays.
// skel: ok cuda-syncwarp-warp-private
__global__ void staged_by_helper(const float* __restrict__ x, float* __restrict__ y, int steps) {
  __shared__ float buf[8][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float acc = 0.f;
  for (int s = 0; s < steps; ++s) {
    block_copy_async(&buf[0][0], x + (int64_t)(blockIdx.x * steps + s) * 256, 256);
    __syncthreads();
    acc += buf[warp][lane];
    __syncthreads();
  }
  y[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// A warp-private slice behind one barrier outside any loop: paid once per block, nothing to win.
// skel: ok cuda-syncwarp-warp-private
__global__ void warp_slice_once(const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float tile[4][32][33];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* src = x + (int64_t)(blockIdx.x * 4 + warp) * 1024;
  for (int r = 0; r < 32; ++r) tile[warp][r][lane] = src[r * 32 + lane];
  __syncthreads();
  float* dst = y + (int64_t)(blockIdx.x * 4 + warp) * 1024;
  for (int r = 0; r < 32; ++r) dst[r * 32 + lane] = tile[warp][lane][r];
}
