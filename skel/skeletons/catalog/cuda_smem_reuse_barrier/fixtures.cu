// Fixtures for cuda-smem-reuse-barrier: a shared buffer read after a barrier and written again (a second
// reduction on one cub TempStorage, the next trip of a loop, an epilogue reusing a tile) with no barrier
// between the read and the write (match); the same kernels with the barrier (uses), and buffers that need
// none (ok): a reduction tree with a barrier per step, two TempStorage objects, a double-buffered scratch,
// a warp's own slice. Self-written after the shapes of the history instances (flashinfer's sampling
// reductions, flash-attention's dK/dV epilogue over sK, lmdeploy's serial top-p walk).

#include <cstdint>
#include <cuda_runtime.h>
#include <cub/cub.cuh>

// Row min and row max through one TempStorage (a dual-pivot search's bounds): the second Reduce writes the
// warp aggregates while thread 0 may still be reading the first's.
// skel: match cuda-smem-reuse-barrier
template <int kThreads>
__global__ void row_min_max_cub(const float* __restrict__ x, float* __restrict__ out, int n) {
  using BlockReduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  float hi = -INFINITY, lo = INFINITY;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    hi = fmaxf(hi, x[(int64_t)blockIdx.x * n + i]);
    lo = fminf(lo, x[(int64_t)blockIdx.x * n + i]);
  }
  hi = BlockReduce(temp).Reduce(hi, cub::Max());
  lo = BlockReduce(temp).Reduce(lo, cub::Min());
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = lo;
    out[2 * blockIdx.x + 1] = hi;
  }
}

// A block sum per trip of a loop over chunks, on one TempStorage and no barrier in the loop.
// skel: match cuda-smem-reuse-barrier
template <int kThreads>
__global__ void chunk_sums_cub(const float* __restrict__ x, float* __restrict__ out, int chunks) {
  using BlockReduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  float total = 0.f;
  for (int c = 0; c < chunks; ++c) {
    const float v = x[((int64_t)blockIdx.x * chunks + c) * kThreads + threadIdx.x];
    total += BlockReduce(temp).Sum(v);
  }
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

// Persistent rows: per-warp partials in `partial[warp]`, a barrier, every thread reads them all; the next
// row's partials are written with no barrier after those reads.
// skel: match cuda-smem-reuse-barrier
__global__ void row_norms_persistent(const float* __restrict__ x, float* __restrict__ y, int rows, int n) {
  __shared__ float partial[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[(int64_t)row * n + i] * x[(int64_t)row * n + i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) partial[warp] = s;
    __syncthreads();
    float total = 0.f;
    for (int w = 0; w < warps; ++w) total += partial[w];
    const float r = rsqrtf(total / n + 1e-6f);
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[(int64_t)row * n + i] = x[(int64_t)row * n + i] * r;
  }
}

// Candidates staged per row, thread 0 walks them in order (a top-p cut); the next row overwrites them
// while thread 0 may still be walking.
// skel: match cuda-smem-reuse-barrier
__global__ void top_p_cut_rows(const float* __restrict__ probs, const float* __restrict__ p, int* __restrict__ cut,
                               int rows) {
  __shared__ float cand[1024];
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    cand[threadIdx.x] = probs[(int64_t)row * 1024 + threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
      float acc = 0.f;
      int n = 1024;
      for (int i = 0; i < 1024; ++i) {
        acc += cand[i];
        if (acc >= p[row]) {
          n = i + 1;
          break;
        }
      }
      cut[row] = n;
    }
  }
}

// A tile of K read by every thread in the main loop, then reused for the dK epilogue with no barrier
// after the last read.
// skel: match cuda-smem-reuse-barrier
__global__ void bwd_tile_epilogue(const float* __restrict__ k, const float* __restrict__ q, float* __restrict__ dk,
                                  int steps) {
  __shared__ float sK[64][65];
  const int r = threadIdx.x / 64, c = threadIdx.x % 64;  // 256 threads: 4 rows at a time
  for (int i = r; i < 64; i += 4) sK[i][c] = k[(int64_t)blockIdx.x * 4096 + i * 64 + c];
  __syncthreads();
  float acc = 0.f;
  for (int s = 0; s < steps; ++s) {
    const float qv = q[((int64_t)blockIdx.x * steps + s) * 64 + c];
    for (int j = 0; j < 64; ++j) acc += qv * sK[j][(c + s) % 64];
  }
  for (int i = r; i < 64; i += 4) sK[i][c] = acc * 0.5f;
  __syncthreads();
  for (int i = r; i < 64; i += 4) dk[(int64_t)blockIdx.x * 4096 + i * 64 + c] = sK[c][i];
}

// The min/max with the barrier CUB asks for between two uses of one TempStorage.
// skel: uses cuda-smem-reuse-barrier
// skel: ok cuda-smem-reuse-barrier
template <int kThreads>
__global__ void row_min_max_cub_synced(const float* __restrict__ x, float* __restrict__ out, int n) {
  using BlockReduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  float hi = -INFINITY, lo = INFINITY;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    hi = fmaxf(hi, x[(int64_t)blockIdx.x * n + i]);
    lo = fminf(lo, x[(int64_t)blockIdx.x * n + i]);
  }
  hi = BlockReduce(temp).Reduce(hi, cub::Max());
  __syncthreads();
  lo = BlockReduce(temp).Reduce(lo, cub::Min());
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = lo;
    out[2 * blockIdx.x + 1] = hi;
  }
}

// A softmax's statistics: the max broadcast through `s_max` puts a barrier between the two reductions on
// one TempStorage, so the second may reuse it.
// skel: ok cuda-smem-reuse-barrier
template <int kThreads>
__global__ void softmax_stats_cub(const float* __restrict__ x, float* __restrict__ stats, int n) {
  using BlockReduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float s_max;
  const float* row = x + (int64_t)blockIdx.x * n;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < n; i += kThreads) m = fmaxf(m, row[i]);
  m = BlockReduce(temp).Reduce(m, cub::Max());
  if (threadIdx.x == 0) s_max = m;
  __syncthreads();
  m = s_max;
  float s = 0.f;
  for (int i = threadIdx.x; i < n; i += kThreads) s += __expf(row[i] - m);
  s = BlockReduce(temp).Sum(s);
  if (threadIdx.x == 0) {
    stats[2 * blockIdx.x] = m;
    stats[2 * blockIdx.x + 1] = s;
  }
}

// skel: uses cuda-smem-reuse-barrier
// skel: ok cuda-smem-reuse-barrier
__global__ void row_norms_persistent_synced(const float* __restrict__ x, float* __restrict__ y, int rows, int n) {
  __shared__ float partial[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[(int64_t)row * n + i] * x[(int64_t)row * n + i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) partial[warp] = s;
    __syncthreads();
    float total = 0.f;
    for (int w = 0; w < warps; ++w) total += partial[w];
    __syncthreads();  // every thread has read the partials: the next row may overwrite them
    const float r = rsqrtf(total / n + 1e-6f);
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[(int64_t)row * n + i] = x[(int64_t)row * n + i] * r;
  }
}

// A shared-memory tree: the read and the write of one step share a statement, a barrier ends each step.
// skel: ok cuda-smem-reuse-barrier
__global__ void tree_sum(const float* __restrict__ x, float* __restrict__ out) {
  __shared__ float red[256];
  const int tid = threadIdx.x;
  red[tid] = x[blockIdx.x * 256 + tid];
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = red[0];
}

// Two reductions, two TempStorage objects: nothing is reused.
// skel: ok cuda-smem-reuse-barrier
template <int kThreads>
__global__ void min_max_two_storages(const float* __restrict__ x, float* __restrict__ out, int n) {
  using BlockReduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp_max;
  __shared__ typename BlockReduce::TempStorage temp_min;
  float hi = -INFINITY, lo = INFINITY;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    hi = fmaxf(hi, x[(int64_t)blockIdx.x * n + i]);
    lo = fminf(lo, x[(int64_t)blockIdx.x * n + i]);
  }
  hi = BlockReduce(temp_max).Reduce(hi, cub::Max());
  lo = BlockReduce(temp_min).Reduce(lo, cub::Min());
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = lo;
    out[2 * blockIdx.x + 1] = hi;
  }
}

// Double-buffered partials: trip `row` writes `partial[it & 1]`, so the next trip's writes go to the other
// half while the slow readers finish; one barrier per trip suffices.
// skel: ok cuda-smem-reuse-barrier
__global__ void row_norms_double_buffered(const float* __restrict__ x, float* __restrict__ y, int rows, int n) {
  __shared__ float partial[2][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  int it = 0;
  for (int row = blockIdx.x; row < rows; row += gridDim.x, ++it) {
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[(int64_t)row * n + i] * x[(int64_t)row * n + i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) partial[it & 1][warp] = s;
    __syncthreads();
    float total = 0.f;
    for (int w = 0; w < warps; ++w) total += partial[it & 1][w];
    const float r = rsqrtf(total / n + 1e-6f);
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[(int64_t)row * n + i] = x[(int64_t)row * n + i] * r;
  }
}

// A warp's own slice, ordered with __syncwarp(): no other warp reads it, no block barrier is missing.
// skel: ok cuda-smem-reuse-barrier
__global__ void warp_tile_transpose(const float* __restrict__ x, float* __restrict__ y, int tiles) {
  __shared__ float tile[8][32][33];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int t = blockIdx.x * 8 + warp; t < tiles; t += gridDim.x * 8) {
    for (int r = 0; r < 32; ++r) tile[warp][r][lane] = x[(int64_t)t * 1024 + r * 32 + lane];
    __syncwarp();
    for (int r = 0; r < 32; ++r) y[(int64_t)t * 1024 + r * 32 + lane] = tile[warp][lane][r];
    __syncwarp();
  }
}

// RMSNorm's two-level sum: warp 0 reads the partials and its lane 0 writes the total into slot 0, all in
// warp 0's own branch after the shuffles; the barrier before the broadcast read follows.
// skel: ok cuda-smem-reuse-barrier
__global__ void rms_norm_two_level(const float* __restrict__ x, float* __restrict__ y, int d, float eps) {
  __shared__ float smem[32];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32, warps = blockDim.x / 32;
  float sum_sq = 0.f;
  for (int i = threadIdx.x; i < d; i += blockDim.x) sum_sq += x[(int64_t)blockIdx.x * d + i] * x[(int64_t)blockIdx.x * d + i];
  for (int o = 16; o > 0; o >>= 1) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, o);
  smem[ty] = sum_sq;
  __syncthreads();
  if (ty == 0) {
    sum_sq = tx < warps ? smem[tx] : 0.f;
    for (int o = 16; o > 0; o >>= 1) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, o);
    smem[0] = sum_sq;
  }
  __syncthreads();
  const float r = rsqrtf(smem[0] / d + eps);
  for (int i = threadIdx.x; i < d; i += blockDim.x) y[(int64_t)blockIdx.x * d + i] = x[(int64_t)blockIdx.x * d + i] * r;
}

// One sort or the other on one TempStorage, chosen at compile time: the two calls are never both run.
// skel: ok cuda-smem-reuse-barrier
template <int kThreads, bool kWithValues>
__global__ void sort_keys_maybe_values(int* __restrict__ keys_out, int* __restrict__ vals_out, const int* __restrict__ in) {
  using Sort = cub::BlockRadixSort<int, kThreads, 4, int>;
  __shared__ typename Sort::TempStorage temp;
  int keys[4], vals[4];
  for (int j = 0; j < 4; ++j) {
    keys[j] = in[(blockIdx.x * kThreads + threadIdx.x) * 4 + j];
    vals[j] = threadIdx.x * 4 + j;
  }
  if constexpr (kWithValues) {
    Sort(temp).Sort(keys, vals);
  } else {
    Sort(temp).Sort(keys);
  }
  for (int j = 0; j < 4; ++j) {
    keys_out[(blockIdx.x * kThreads + threadIdx.x) * 4 + j] = keys[j];
    vals_out[(blockIdx.x * kThreads + threadIdx.x) * 4 + j] = vals[j];
  }
}

// Ping-pong buffers named by a variable: trip `it` reads `stage[cur]` and fills `stage[nxt]`, `nxt = cur ^ 1`.
// skel: ok cuda-smem-reuse-barrier
__global__ void ping_pong_rows(const float* __restrict__ x, float* __restrict__ y, int rows) {
  __shared__ float stage[2][256];
  int cur = 0;
  stage[cur][threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  for (int row = 0; row < rows; ++row) {
    const int nxt = cur ^ 1;
    const float v = stage[cur][255 - threadIdx.x];
    if (row + 1 < rows) stage[nxt][threadIdx.x] = x[(int64_t)(row + 1) * 256 + threadIdx.x];
    y[(int64_t)row * 256 + threadIdx.x] = v;
    __syncthreads();
    cur = nxt;
  }
}
