// Fixtures for cuda-pragma-unroll-fixed-trip: loops left rolled whose variable indexes a per-thread
// array (match), the same kernel with every such loop unrolled (uses), and loops that must not be
// flagged: `#pragma unroll 1`, a shuffle tree, a thread-strided loop, a long loop, an array too large
// to unroll, an index that stays dynamic, a loop over global memory only, a serial top-k whose loop
// holds a runtime loop and a triangular one (ok). Self-written after the shapes of the history
// instances (bitsandbytes gemv tail, flashinfer fragment loads, torchao split-K reduction); written
// for `nvcc -arch=sm_90a -c`, not compiled where they were written (no nvcc there).

#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

// Split-K reduction: 8 partial sums per thread over a runtime number of splits; the inner loop
// over the 8 sums is left rolled.
// skel: match cuda-pragma-unroll-fixed-trip
__global__ void splitk_reduce_rolled(half* __restrict__ out, const float* __restrict__ partial, size_t mn,
                                     int splits) {
  const float* src = partial + (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  half* dst = out + (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  float sums[8];
  for (int j = 0; j < 8; ++j) sums[j] = 0.f;
  for (int s = 0; s < splits; ++s) {
    for (int j = 0; j < 8; ++j) sums[j] += src[j];
    src += mn;
  }
  for (int j = 0; j < 8; ++j) dst[j] = __float2half_rn(sums[j]);
}

// The same reduction with every loop over `sums` unrolled: the array is 8 registers.
// skel: uses cuda-pragma-unroll-fixed-trip
// skel: ok cuda-pragma-unroll-fixed-trip
__global__ void splitk_reduce_unrolled(half* __restrict__ out, const float* __restrict__ partial, size_t mn,
                                       int splits) {
  const float* src = partial + (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  half* dst = out + (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  float sums[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) sums[j] = 0.f;
  for (int s = 0; s < splits; ++s) {
#pragma unroll
    for (int j = 0; j < 8; ++j) sums[j] += src[j];
    src += mn;
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) dst[j] = __float2half_rn(sums[j]);
}

// A 4-bit GEMV's tail: the bulk path is unrolled, but the guarded tail that fills `local_a`
// element by element was left rolled (`kValues` is a template parameter).
// skel: match cuda-pragma-unroll-fixed-trip
template <typename T, int kValues>
__global__ void gemv_tail_rolled(const T* __restrict__ A, const unsigned char* __restrict__ B,
                                 const float* __restrict__ absmax, T* __restrict__ out, int K, int ldb) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  T local_a[kValues];
  float local_b[kValues];
  float acc = 0.f;
  for (int base = lane * kValues; base < K; base += 32 * kValues) {
    const float scale = absmax[(row * ldb + base) / 64];
#pragma unroll
    for (int i = 0; i < kValues / 2; ++i) {
      const unsigned char packed = B[(row * ldb + base) / 2 + i];
      local_b[2 * i] = float(packed >> 4) * scale;
      local_b[2 * i + 1] = float(packed & 0x0F) * scale;
    }
    for (int i = 0; i < kValues; i++) local_a[i] = base + i < K ? A[base + i] : T(0.f);
#pragma unroll
    for (int i = 0; i < kValues; i++) acc += float(local_a[i]) * local_b[i];
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) out[row] = T(acc);
}

// Each thread accumulates up to 8 columns, but the count comes in as a runtime argument: `acc[j]`
// is never a compile-time index, so `acc` lives in local memory inside the K loop.
// skel: match cuda-pragma-unroll-fixed-trip
__global__ void linear_cols_runtime(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                    int K, int N, int cols_per_thread) {
  const int row = blockIdx.y;
  const int col0 = blockIdx.x * blockDim.x * 8 + threadIdx.x;
  float acc[8] = {};
  for (int k = 0; k < K; ++k) {
    const float xv = x[row * K + k];
    for (int j = 0; j < cols_per_thread; ++j) {
      const int col = col0 + j * blockDim.x;
      if (col < N) acc[j] += xv * w[k * N + col];
    }
  }
  for (int j = 0; j < cols_per_thread; ++j) {
    const int col = col0 + j * blockDim.x;
    if (col < N) y[row * N + col] = acc[j];
  }
}

// Query fragments kept in registers across the KV loop, loaded from shared memory in a loop over
// `num_frags_x` (a template parameter) left rolled.
// skel: match cuda-pragma-unroll-fixed-trip
template <int num_frags_x, int num_frags_y>
__global__ void prefill_pin_q_rolled(const half* __restrict__ q, const half* __restrict__ k, float* __restrict__ s,
                                     int kv_len, int head_dim) {
  __shared__ half q_smem[num_frags_x * 16 * 128];
  uint32_t q_frag[num_frags_x][num_frags_y][4];
  for (int i = threadIdx.x; i < num_frags_x * 16 * head_dim; i += blockDim.x) q_smem[i] = q[i];
  __syncthreads();
  const int tx = threadIdx.x % 32;
  for (int fx = 0; fx < num_frags_x; ++fx) {
#pragma unroll
    for (int fy = 0; fy < num_frags_y; ++fy) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        q_frag[fx][fy][r] = reinterpret_cast<const uint32_t*>(q_smem)[(fx * 16 + tx / 4) * 64 + fy * 8 + r * 2];
      }
    }
  }
  for (int kv = 0; kv < kv_len; ++kv) {
    float dot = 0.f;
#pragma unroll
    for (int fx = 0; fx < num_frags_x; ++fx)
#pragma unroll
      for (int fy = 0; fy < num_frags_y; ++fy) dot += __uint_as_float(q_frag[fx][fy][0]) * __half2float(k[kv]);
    s[kv * blockDim.x + threadIdx.x] = dot;
  }
}

constexpr int kMaxTopK = 8;

// Top-k indices kept per lane; the loop writing them out runs to the runtime `topk` (at most
// kMaxTopK): local memory, but outside any loop, so how much it costs is left open.
// skel: match cuda-pragma-unroll-fixed-trip
__global__ void topk_write_runtime(const float* __restrict__ scores, int* __restrict__ ids, float* __restrict__ vals,
                                   int num_experts, int topk) {
  int top_idx[kMaxTopK];
  float top_val[kMaxTopK];
#pragma unroll
  for (int t = 0; t < kMaxTopK; ++t) {
    top_idx[t] = -1;
    top_val[t] = -1e30f;
  }
  const float* row = scores + blockIdx.x * num_experts;
  for (int e = threadIdx.x; e < num_experts; e += 32) {
    const float v = row[e];
    if (v > top_val[kMaxTopK - 1]) {
      top_val[kMaxTopK - 1] = v;
      top_idx[kMaxTopK - 1] = e;
    }
  }
  if (threadIdx.x == 0) {
    for (int t = 0; t < topk; ++t) {
      ids[blockIdx.x * topk + t] = top_idx[t];
      vals[blockIdx.x * topk + t] = top_val[t];
    }
  }
}

// `#pragma unroll 1`: the authors keep this loop rolled on purpose (code size).
// skel: ok cuda-pragma-unroll-fixed-trip
__global__ void keep_rolled_on_purpose(const float* __restrict__ x, float* __restrict__ y, int n) {
  float v[4];
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
#pragma unroll 1
  for (int j = 0; j < 4; ++j) v[j] = base + j < n ? x[base + j] : 0.f;
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (base + j < n) y[base + j] = 2.f * v[j];
}

// A warp reduction: a constant-trip loop with no array (nvcc unrolls it itself), and a
// thread-strided loop over global memory.
// skel: ok cuda-pragma-unroll-fixed-trip
__global__ void row_sum_strided(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float partial[32];
  float acc = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[blockIdx.x * cols + c];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int w = 0; w < blockDim.x / 32; ++w) total += partial[w];
    y[blockIdx.x] = total;
  }
}

// A per-thread histogram over up to 256 experts: the array is too large to unroll into registers
// (the runtime `num_experts` bound would unroll to 256 copies).
// skel: ok cuda-pragma-unroll-fixed-trip
__global__ void expert_histogram(const int* __restrict__ topk_ids, int* __restrict__ counts, int n, int num_experts) {
  int local[256];
  for (int e = 0; e < num_experts; ++e) local[e] = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) local[topk_ids[i]] += 1;
  for (int e = 0; e < num_experts; ++e)
    if (local[e]) atomicAdd(&counts[e], local[e]);
}

// A long literal loop: 64 trips unrolled would be 64 copies of the body.
// skel: ok cuda-pragma-unroll-fixed-trip
__global__ void long_window(const float* __restrict__ x, float* __restrict__ y, int n) {
  float window[64];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int t = 0; t < 64; ++t) window[t] = i + t < n ? x[i + t] : 0.f;
  float m = window[0];
  for (int t = 1; t < 64; ++t) m = fmaxf(m, window[t]);
  if (i < n) y[i] = m;
}

// The index also depends on the lane: unrolling the loop would not make it a constant.
// skel: ok cuda-pragma-unroll-fixed-trip
__global__ void rotate_by_lane(const float* __restrict__ x, float* __restrict__ y) {
  float v[8];
  const int lane = threadIdx.x % 8;
  const float* src = x + (blockIdx.x * blockDim.x + threadIdx.x) * 8;
#pragma unroll
  for (int j = 0; j < 8; ++j) v[j] = src[j];
  float out = 0.f;
  for (int j = 0; j < 4; ++j) out += v[(lane + j) % 8];
  y[blockIdx.x * blockDim.x + threadIdx.x] = out;
}

// Only global memory inside the short loops: nothing for the pragma to keep in registers.
// skel: ok cuda-pragma-unroll-fixed-trip
__global__ void scale_eight(const float* __restrict__ x, const float* __restrict__ s, float* __restrict__ y, int n) {
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  for (int j = 0; j < 8; ++j)
    if (base + j < n) y[base + j] = x[base + j] * s[(base + j) / 128];
}

// One thread picks the top-k by repeated scans: the loop over `top_k` holds a runtime loop over the
// experts (unrolling it would copy that loop 32 times), and the inner check `j < k` is triangular.
// A different algorithm, not a pragma, is what this needs.
// skel: ok cuda-pragma-unroll-fixed-trip
__global__ void serial_topk_scan(const float* __restrict__ scores, int* __restrict__ ids, int experts, int top_k) {
  if (threadIdx.x != 0) return;
  const float* row = scores + blockIdx.x * experts;
  int picked[32];
  for (int k = 0; k < top_k; ++k) {
    int best = 0;
    float best_v = -1e30f;
    for (int e = 0; e < experts; ++e) {
      bool taken = false;
      for (int j = 0; j < k; ++j) taken |= picked[j] == e;
      if (!taken && row[e] > best_v) {
        best_v = row[e];
        best = e;
      }
    }
    picked[k] = best;
    ids[blockIdx.x * top_k + k] = best;
  }
}
