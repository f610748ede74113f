// Fixtures for cuda-fast-math-intrinsics: precise float transcendentals in a kernel's loops (match),
// the same kernels on SFU intrinsics (uses), and near misses: a loss kernel, a double-precision
// kernel, a per-row `logf` outside any loop, an `exp2f` softmax (already one SFU op) (ok).
// Self-written after the shapes of flashinfer's decode kernel before "fastmath" (6ab4380ec8), a
// Mamba-style selective scan and exllamav2's GeLU; compiled with `nvcc -arch=sm_90 -c`.

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// A selective scan: per time step, exp(dt * A) for each of 16 states held in registers.
// skel: match cuda-fast-math-intrinsics
__global__ void selective_scan_precise(const float* __restrict__ u, const float* __restrict__ delta,
                                       const float* __restrict__ A, const float* __restrict__ Bm,
                                       const float* __restrict__ Cm, float* __restrict__ y, int L, int D) {
  const int d = blockIdx.x * blockDim.x + threadIdx.x;
  const int b = blockIdx.y;
  if (d >= D) return;
  float a[16], h[16] = {};
#pragma unroll
  for (int n = 0; n < 16; ++n) a[n] = A[d * 16 + n];
  for (int t = 0; t < L; ++t) {
    const float ut = u[((size_t)b * L + t) * D + d];
    const float dt = delta[((size_t)b * L + t) * D + d];
    float bt[16], ct[16];
#pragma unroll
    for (int n = 0; n < 16; ++n) {
      bt[n] = Bm[((size_t)b * L + t) * 16 + n];
      ct[n] = Cm[((size_t)b * L + t) * 16 + n];
    }
    float out = 0.f;
#pragma unroll
    for (int n = 0; n < 16; ++n) {
      h[n] = expf(dt * a[n]) * h[n] + dt * bt[n] * ut;
      out += h[n] * ct[n];
    }
    y[((size_t)b * L + t) * D + d] = out;
  }
}

// flashinfer's decode before "fastmath": the online-softmax update in a helper called per key, and
// the rotary frequencies with `powf`, the angles with `sinf`/`cosf`.
__device__ __forceinline__ void update_md(float x, float& m, float& d, float* o, const float* v) {
  const float m_prev = m;
  m = fmaxf(m, x);
  const float scale = exp(m_prev - m);
  d = d * scale + exp(x - m);
#pragma unroll
  for (int i = 0; i < 4; ++i) o[i] = o[i] * scale + v[i] * exp(x - m);
}

// skel: match cuda-fast-math-intrinsics
__global__ void decode_rope_precise(const half* __restrict__ q, const half* __restrict__ k, const half* __restrict__ v,
                                    float* __restrict__ out, int seq_len, float rope_rcp_theta) {
  const int tx = threadIdx.x;
  float inv_freq[4], qv[4], o[4] = {};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    inv_freq[i] = powf(rope_rcp_theta, float(2 * ((tx * 4 + i) % 64)) / 128.f);
    qv[i] = __half2float(q[blockIdx.x * 128 + tx * 4 + i]);
  }
  float m = -1e30f, d = 0.f;
  for (int j = 0; j < seq_len; ++j) {
    float kv[4], vv[4], x = 0.f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float ang = float(j) * inv_freq[i];
      kv[i] = __half2float(k[(size_t)j * 128 + tx * 4 + i]) * cosf(ang) + sinf(ang);
      vv[i] = __half2float(v[(size_t)j * 128 + tx * 4 + i]);
      x += qv[i] * kv[i];
    }
    for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
    update_md(x, m, d, o, vv);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) out[blockIdx.x * 128 + tx * 4 + i] = o[i] / d;
}

// The selective scan on `__expf`.
// skel: uses cuda-fast-math-intrinsics
// skel: ok cuda-fast-math-intrinsics
__global__ void selective_scan_fast(const float* __restrict__ u, const float* __restrict__ delta,
                                    const float* __restrict__ A, const float* __restrict__ Bm,
                                    const float* __restrict__ Cm, float* __restrict__ y, int L, int D) {
  const int d = blockIdx.x * blockDim.x + threadIdx.x;
  const int b = blockIdx.y;
  if (d >= D) return;
  float a[16], h[16] = {};
#pragma unroll
  for (int n = 0; n < 16; ++n) a[n] = A[d * 16 + n];
  for (int t = 0; t < L; ++t) {
    const float ut = u[((size_t)b * L + t) * D + d];
    const float dt = delta[((size_t)b * L + t) * D + d];
    float out = 0.f;
#pragma unroll
    for (int n = 0; n < 16; ++n) {
      h[n] = __expf(dt * a[n]) * h[n] + dt * Bm[((size_t)b * L + t) * 16 + n] * ut;
      out += h[n] * Cm[((size_t)b * L + t) * 16 + n];
    }
    y[((size_t)b * L + t) * D + d] = out;
  }
}

// A cross-entropy loss: log-sum-exp over the vocabulary, accuracy first.
// skel: ok cuda-fast-math-intrinsics
__global__ void cross_entropy_loss_fwd(const float* __restrict__ logits, const int64_t* __restrict__ target,
                                       float* __restrict__ loss, int V) {
  const float* row = logits + (size_t)blockIdx.x * V;
  float m = -INFINITY, s = 0.f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    const float x = row[i];
    const float m_new = fmaxf(m, x);
    s = s * expf(m - m_new) + expf(x - m_new);
    m = m_new;
  }
  if (threadIdx.x == 0) loss[blockIdx.x] = logf(s) + m - row[target[blockIdx.x]];
}

// A double-precision reference kernel: the authors chose precision.
// skel: ok cuda-fast-math-intrinsics
__global__ void gelu_reference_fp64(const double* __restrict__ x, double* __restrict__ y, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const double v = x[i];
    y[i] = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  }
}

// RMS statistics: the only transcendental-like call is on the per-row sum, outside any loop.
// skel: ok cuda-fast-math-intrinsics
__global__ void row_log_norm(const float* __restrict__ x, float* __restrict__ out, int dim) {
  __shared__ float partial[32];
  float s = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) s += x[(size_t)blockIdx.x * dim + i] * x[(size_t)blockIdx.x * dim + i];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int w = 0; w < blockDim.x / 32; ++w) total += partial[w];
    out[blockIdx.x] = 0.5f * logf(total / dim);
  }
}

// A softmax on exp2f with log2(e) folded into the scale: already one MUFU.EX2 per element.
// skel: ok cuda-fast-math-intrinsics
__global__ void softmax_exp2(const float* __restrict__ x, float* __restrict__ y, float row_max, float scale_log2e,
                             int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = exp2f((x[i] - row_max) * scale_log2e);
}
