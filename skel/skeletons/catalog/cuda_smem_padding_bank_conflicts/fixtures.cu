// Fixtures for cuda-smem-padding-bank-conflicts: shared tiles with unpadded power-of-two rows
// accessed down a column by a warp (match), the same tiles padded or XOR-swizzled (uses), and
// near misses: tiles accessed only along rows, a warp-uniform row index, a row length that is
// conflict-free already, a 1-D reduction buffer (ok). Self-written after the shapes of the
// history instances (aiter's transpose_add, ColossalAI's bias-gradient column sums, flash-attention's
// split-KV combine) and NVIDIA's transpose example; compiled with `nvcc -arch=sm_90 -c`.

#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

// The classic tiled transpose with rows of 32 floats: the read `tile[threadIdx.x][...]` puts the
// 32 lanes of a warp on one bank.
// skel: match cuda-smem-padding-bank-conflicts
__global__ void transpose_unpadded(float* out, const float* in, int rows, int cols) {
  __shared__ float tile[32][32];
  const int x = blockIdx.x * 32 + threadIdx.x;
  const int y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(int64_t)(y + j) * cols + x];
  __syncthreads();
  const int ox = blockIdx.y * 32 + threadIdx.x;
  const int oy = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (ox < rows && oy + j < cols) out[(int64_t)(oy + j) * rows + ox] = tile[threadIdx.x][threadIdx.y + j];
}

// The same transpose with the row padded to 33 floats: conflict-free.
// skel: ok cuda-smem-padding-bank-conflicts
// skel: uses cuda-smem-padding-bank-conflicts
__global__ void transpose_padded(float* out, const float* in, int rows, int cols) {
  __shared__ float tile[32][32 + 1];
  const int x = blockIdx.x * 32 + threadIdx.x;
  const int y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(int64_t)(y + j) * cols + x];
  __syncthreads();
  const int ox = blockIdx.y * 32 + threadIdx.x;
  const int oy = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (ox < rows && oy + j < cols) out[(int64_t)(oy + j) * rows + ox] = tile[threadIdx.x][threadIdx.y + j];
}

// Bias gradient: each thread sums a column stripe, stores its partial down a column of the tile
// (`tile[threadIdx.x][threadIdx.y]`), then a warp reduces a row with shuffles.
// skel: match cuda-smem-padding-bank-conflicts
__global__ void bias_grad_column_sums(float* bias_grad, const float* grad, int rows, int cols) {
  __shared__ float tile[32][32];
  const int col = blockIdx.x * 32 + threadIdx.x;
  float local_sum = 0.f;
  for (int r = threadIdx.y; r < rows; r += 32)
    if (col < cols) local_sum += grad[(int64_t)r * cols + col];
  tile[threadIdx.x][threadIdx.y] = local_sum;
  __syncthreads();
  float sum = tile[threadIdx.y][threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o);
  if (threadIdx.x == 0 && blockIdx.x * 32 + threadIdx.y < cols) bias_grad[blockIdx.x * 32 + threadIdx.y] = sum;
}

// A bf16 tile of 64-element rows (128 bytes) read down a column, its size a template parameter:
// how bad the conflict is depends on kTile (64 here at the launch: 32-way), not known from the kernel.
// skel: match cuda-smem-padding-bank-conflicts
template <int kTile>
__global__ void transpose_bf16_template(__nv_bfloat16* out, const __nv_bfloat16* in, int rows, int cols) {
  __shared__ __nv_bfloat16 tile[kTile][kTile];
  const int lane = threadIdx.x;
  for (int r = threadIdx.y; r < kTile; r += blockDim.y)
    for (int c = lane; c < kTile; c += 32)
      tile[r][c] = in[(int64_t)(blockIdx.y * kTile + r) * cols + blockIdx.x * kTile + c];
  __syncthreads();
  for (int c = threadIdx.y; c < kTile; c += blockDim.y)
    for (int r = lane; r < kTile; r += 32)
      out[(int64_t)(blockIdx.x * kTile + c) * rows + blockIdx.y * kTile + r] = tile[r][c];
}

// A swizzled tile: the column index XOR-ed with the row keeps 16-byte rows and spreads the column.
// skel: ok cuda-smem-padding-bank-conflicts
// skel: uses cuda-smem-padding-bank-conflicts
__global__ void transpose_xor_swizzle(float* out, const float* in, int n) {
  __shared__ float tile[32][32];
  const int x = blockIdx.x * 32 + threadIdx.x;
  const int y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) {
    const int r = threadIdx.y + j;
    tile[r][threadIdx.x ^ r] = in[(int64_t)(y + j) * n + x];
  }
  __syncthreads();
  for (int j = 0; j < 32; j += 8) {
    const int c = threadIdx.y + j;
    out[(int64_t)(blockIdx.x * 32 + c) * n + blockIdx.y * 32 + threadIdx.x] = tile[threadIdx.x][c ^ threadIdx.x];
  }
}

// Rows only: lane l always on column l, the row index warp-uniform (`threadIdx.y`, a loop counter).
// skel: ok cuda-smem-padding-bank-conflicts
__global__ void stage_rows(float* out, const float* in, int cols) {
  __shared__ float buf[8][32];
  const int col = blockIdx.x * 32 + threadIdx.x;
  buf[threadIdx.y][threadIdx.x] = in[(int64_t)(blockIdx.y * 8 + threadIdx.y) * cols + col];
  __syncthreads();
  float acc = 0.f;
  for (int r = 0; r < 8; ++r) acc += buf[r][threadIdx.x];
  if (threadIdx.y == 0) out[(int64_t)blockIdx.y * cols + col] = acc;
}

// Per-warp partials indexed [warp][lane]: the next-to-last index is a warp number, the same on all lanes.
// skel: ok cuda-smem-padding-bank-conflicts
__global__ void warp_partials(float* out, const float* in, int n) {
  __shared__ float partial[8][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[warp][lane] = i < n ? in[i] : 0.f;
  __syncthreads();
  if (warp == 0) {
    float s = 0.f;
    for (int w = 0; w < 8; ++w) s += partial[w][lane];
    out[blockIdx.x * 32 + lane] = s;
  }
}

// Per-row partials of a 4-row GEMV: `red[lane][warp]` goes down a column, but only 4 lanes (the
// rows) do, under `lane < 4`: a 4-way conflict at most, on one store per warp.
// skel: ok cuda-smem-padding-bank-conflicts
__global__ void gemv4_row_partials(float* y, const float* w, const float* x, int K) {
  __shared__ float red[4][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k = threadIdx.x; k < K; k += blockDim.x)
    for (int r = 0; r < 4; ++r) acc[r] += w[(blockIdx.x * 4 + r) * K + k] * x[k];
  for (int o = 16; o > 0; o >>= 1)
    for (int r = 0; r < 4; ++r) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
  if (lane < 4) red[lane][warp] = acc[lane];
  __syncthreads();
  if (threadIdx.x < 4) {
    float s = 0.f;
    for (int w2 = 0; w2 < blockDim.x / 32; ++w2) s += red[threadIdx.x][w2];
    y[blockIdx.x * 4 + threadIdx.x] = s;
  }
}

// Rows of 17 floats: the column access is conflict-free already.
// skel: ok cuda-smem-padding-bank-conflicts
__global__ void odd_row_tile(float* out, const float* in, int n) {
  __shared__ float tile[32][17];
  const int lane = threadIdx.x % 32;
  for (int c = 0; c < 17; ++c) tile[lane][c] = in[(blockIdx.x * 32 + lane) * 17 + c];
  __syncwarp();
  float s = 0.f;
  for (int c = 0; c < 17; ++c) s += tile[lane][c];
  if (blockIdx.x * 32 + lane < n) out[blockIdx.x * 32 + lane] = s;
}

// A 1-D reduction buffer: no rows, no columns.
// skel: ok cuda-smem-padding-bank-conflicts
__global__ void block_sum(float* out, const float* in, int n) {
  __shared__ float red[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  red[threadIdx.x] = i < n ? in[i] : 0.f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = red[0];
}

// Split-KV combine (flash-attention's shape): the LSE tile is padded by one (`kBlockM + 1`).
// skel: ok cuda-smem-padding-bank-conflicts
// skel: uses cuda-smem-padding-bank-conflicts
template <int kMaxSplits, int kBlockM>
__global__ void combine_lse_padded(float* out_lse, const float* lse_accum, int num_splits, int rows) {
  __shared__ float sLSE[kMaxSplits][kBlockM + 1];
  for (int s = threadIdx.y; s < kMaxSplits; s += blockDim.y)
    sLSE[s][threadIdx.x] = s < num_splits ? lse_accum[s * rows + blockIdx.x * kBlockM + threadIdx.x] : -INFINITY;
  __syncthreads();
  float m = -INFINITY;
  for (int s = 0; s < kMaxSplits; ++s) m = fmaxf(m, sLSE[s][threadIdx.x]);
  if (threadIdx.y == 0) out_lse[blockIdx.x * kBlockM + threadIdx.x] = m;
}
