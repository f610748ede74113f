// Fixtures for cuda-fp32-partial-accumulation: 16-bit running sums carried across a run-time loop
// (match), the same kernels flushing a short half2 block into float (uses), and near misses: a float
// accumulator, a short fixed half2 chain returned to float, a running max, a half2 elementwise kernel
// (ok). Self-written after the shapes of exllamav2's `gemm_half_q_half_kernel` before and after
// 54e3cf9a09, llm-awq's GEMV (`psum` in half over the thread's K slice) and FasterTransformer's
// decoder attention; compiled with `nvcc -arch=sm_90 -c`.

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// One warp per row: each lane's half2 accumulator takes every product of its K slice.
// skel: match cuda-fp32-partial-accumulation
__global__ void gemv_half2_acc(const half* __restrict__ w, const half* __restrict__ x, float* __restrict__ y, int K,
                               int N) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const uint4* w8 = reinterpret_cast<const uint4*>(w + (size_t)row * K);
  const uint4* x8 = reinterpret_cast<const uint4*>(x);
  half2 acc = __float2half2_rn(0.f);
  for (int k8 = lane; k8 < K / 8; k8 += 32) {
    const uint4 wv = w8[k8], xv = x8[k8];
    const half2* w2 = reinterpret_cast<const half2*>(&wv);
    const half2* x2 = reinterpret_cast<const half2*>(&xv);
#pragma unroll
    for (int i = 0; i < 4; ++i) acc = __hfma2(w2[i], x2[i], acc);
  }
  float s = __low2float(acc) + __high2float(acc);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) y[row] = s;
}

// exllamav2's GPTQ kernel before 54e3cf9a09: the column results stay `half2` across the whole
// `while (k < end_k)` loop, each step adding a dot of 8 through a helper.
__device__ __forceinline__ half2 dot22_8(const half2 (&dq)[4], const half* a_ptr, half2 g_result, half qs_h) {
  half2 result = {};
  const half2* a2_ptr = reinterpret_cast<const half2*>(a_ptr);
#pragma unroll
  for (int i = 0; i < 4; i++) result = __hfma2(dq[i], *a2_ptr++, result);
  return __hfma2(result, __halves2half2(qs_h, qs_h), g_result);
}

// skel: match cuda-fp32-partial-accumulation
template <int m_count>
__global__ void gemm_half_q_half_sketch(const half* __restrict__ a, const uint32_t* __restrict__ b_q,
                                        const half* __restrict__ scales, half* __restrict__ c, int size_k, int size_n,
                                        int groupsize) {
  const int n = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  const int offset_k = blockIdx.z * 128;
  const int end_k = min(offset_k + 128, size_k);
  half2 block_c[m_count][4] = {};
  int k = offset_k;
  while (k < end_k) {
    const half qs = scales[(k / groupsize) * size_n + n];
    half2 dq[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t q = b_q[(k / 8 + i) * size_n + n + j];
        dq[j][i] = __halves2half2(__int2half_rn(q & 15), __int2half_rn(q >> 4 & 15));
      }
    for (int m = 0; m < m_count; m++) {
      block_c[m][0] = dot22_8(dq[0], a + m * size_k + k, block_c[m][0], qs);
      block_c[m][1] = dot22_8(dq[1], a + m * size_k + k, block_c[m][1], qs);
      block_c[m][2] = dot22_8(dq[2], a + m * size_k + k, block_c[m][2], qs);
      block_c[m][3] = dot22_8(dq[3], a + m * size_k + k, block_c[m][3], qs);
    }
    k += 8;
  }
  for (int m = 0; m < m_count; m++)
    for (int j = 0; j < 4; ++j) atomicAdd(c + m * size_n + n + j, __hadd(__low2half(block_c[m][j]), __high2half(block_c[m][j])));
}

// A bf16 dot per row accumulated in `__nv_bfloat16` over the row.
// skel: match cuda-fp32-partial-accumulation
__global__ void row_dot_bf16(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                             float* __restrict__ out, int dim) {
  __nv_bfloat16 acc = __float2bfloat16(0.f);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) acc = __hfma(a[(size_t)blockIdx.x * dim + i], b[i], acc);
  float s = __bfloat162float(acc);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// The GEMV with two-level accumulation: a half2 block of 8 products from zero, flushed into float.
// skel: uses cuda-fp32-partial-accumulation
// skel: ok cuda-fp32-partial-accumulation
__global__ void gemv_half2_flush(const half* __restrict__ w, const half* __restrict__ x, float* __restrict__ y, int K,
                                 int N) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const uint4* w8 = reinterpret_cast<const uint4*>(w + (size_t)row * K);
  const uint4* x8 = reinterpret_cast<const uint4*>(x);
  float acc = 0.f;
  for (int k8 = lane; k8 < K / 8; k8 += 32) {
    const uint4 wv = w8[k8], xv = x8[k8];
    const half2* w2 = reinterpret_cast<const half2*>(&wv);
    const half2* x2 = reinterpret_cast<const half2*>(&xv);
    half2 part = __hmul2(w2[0], x2[0]);
#pragma unroll
    for (int i = 1; i < 4; ++i) part = __hfma2(w2[i], x2[i], part);
    const float2 f = __half22float2(part);
    acc += f.x + f.y;
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) y[row] = acc;
}

// exllamav2 after 54e3cf9a09: the helper sums 8 products in half2 and returns them into a float.
__device__ __forceinline__ float dot22_8_f(const half2 (&dq)[4], const half* a_ptr, float g_result, float qs_f) {
  half2 result = {};
  const half2* a2_ptr = reinterpret_cast<const half2*>(a_ptr);
#pragma unroll
  for (int i = 0; i < 4; i++) result = __hfma2(dq[i], *a2_ptr++, result);
  const float result_f = __half2float(__low2half(result)) + __half2float(__high2half(result));
  return fmaf(result_f, qs_f, g_result);
}

// skel: uses cuda-fp32-partial-accumulation
// skel: ok cuda-fp32-partial-accumulation
__global__ void gemm_half_q_half_float_acc(const half* __restrict__ a, const half2* __restrict__ dq_in,
                                           const float* __restrict__ scales, float* __restrict__ c, int size_k) {
  float block_c[4] = {};
  int k = 0;
  while (k < size_k) {
    half2 dq[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) dq[i] = dq_in[k / 2 + i];
    block_c[0] = dot22_8_f(dq, a + k, block_c[0], scales[k / 128]);
    k += 8;
  }
  c[blockIdx.x * blockDim.x + threadIdx.x] = block_c[0];
}

// A float accumulator over converted halves: already exact enough, nothing to fix.
// skel: ok cuda-fp32-partial-accumulation
__global__ void row_dot_float(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ out,
                              int dim) {
  float acc = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x)
    acc += __half2float(a[(size_t)blockIdx.x * dim + i]) * __half2float(b[i]);
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

// A running max in half across the row: no rounding accumulates.
// skel: ok cuda-fp32-partial-accumulation
__global__ void row_absmax_half(const half* __restrict__ x, half* __restrict__ out, int dim) {
  half m = __float2half(0.f);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) m = __hmax(m, __habs(x[(size_t)blockIdx.x * dim + i]));
  out[blockIdx.x * blockDim.x + threadIdx.x] = m;
}

// A fixed 8-term half2 dot per thread (one 16-byte load each): the block is the whole sum.
// skel: ok cuda-fp32-partial-accumulation
__global__ void dot8_per_thread(const uint4* __restrict__ a, const uint4* __restrict__ b, float* __restrict__ out,
                                int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint4 av = a[i], bv = b[i];
  const half2* a2 = reinterpret_cast<const half2*>(&av);
  const half2* b2 = reinterpret_cast<const half2*>(&bv);
  half2 r = __float2half2_rn(0.f);
#pragma unroll
  for (int j = 0; j < 4; ++j) r = __hfma2(a2[j], b2[j], r);
  out[i] = __low2float(r) + __high2float(r);
}

// Elementwise half2 math in a grid-stride loop: no value is carried from one trip to the next.
// skel: ok cuda-fp32-partial-accumulation
__global__ void axpy_half2(half2* __restrict__ y, const half2* __restrict__ x, half2 alpha, int n2) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n2; i += gridDim.x * blockDim.x)
    y[i] = __hfma2(alpha, x[i], y[i]);
}
