// Fixtures for cuda-ldmatrix-fragment-loads: kernels that must match and must not (expectation lines above each).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <cstdint>

__device__ __forceinline__ void mma_f16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%10, %11, %12, %13};\n"
               : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%10, %11, %12, %13};\n"
               : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// an fp16 GEMM mainloop: tiles staged in shared memory, every fragment register one 32-bit load
// at (row lane / 4, column 2 * (lane % 4)) of its 8x8 block
// skel: match cuda-ldmatrix-fragment-loads
__global__ void hgemm_scalar_fragments(const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C,
                                       int M, int N, int K) {
  __shared__ __align__(16) half sA[64][40];
  __shared__ __align__(16) half sB[64][40];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  float acc[2][8][4] = {};
  for (int k0 = 0; k0 < K; k0 += 32) {
    for (int i = threadIdx.x; i < 64 * 4; i += blockDim.x) {
      *reinterpret_cast<uint4*>(&sA[i / 4][(i % 4) * 8]) =
          *reinterpret_cast<const uint4*>(A + (int64_t)(blockIdx.y * 64 + i / 4) * K + k0 + (i % 4) * 8);
      *reinterpret_cast<uint4*>(&sB[i / 4][(i % 4) * 8]) =
          *reinterpret_cast<const uint4*>(B + (int64_t)(blockIdx.x * 64 + i / 4) * K + k0 + (i % 4) * 8);
    }
    __syncthreads();
    for (int kk = 0; kk < 32; kk += 16) {
      uint32_t a[2][4], b[8][2];
      for (int mi = 0; mi < 2; ++mi) {
        const int r = warp * 32 + mi * 16 + g;
        a[mi][0] = *reinterpret_cast<const uint32_t*>(&sA[r][kk + 2 * t]);
        a[mi][1] = *reinterpret_cast<const uint32_t*>(&sA[r + 8][kk + 2 * t]);
        a[mi][2] = *reinterpret_cast<const uint32_t*>(&sA[r][kk + 2 * t + 8]);
        a[mi][3] = *reinterpret_cast<const uint32_t*>(&sA[r + 8][kk + 2 * t + 8]);
      }
      for (int ni = 0; ni < 8; ++ni) {
        b[ni][0] = *(const uint32_t*)&sB[ni * 8 + g][kk + 2 * t];
        b[ni][1] = *(const uint32_t*)&sB[ni * 8 + g][kk + 2 * t + 8];
      }
      for (int mi = 0; mi < 2; ++mi)
        for (int ni = 0; ni < 8; ++ni) mma_f16(acc[mi][ni], a[mi], b[ni]);
    }
    __syncthreads();
  }
  for (int mi = 0; mi < 2; ++mi)
    for (int ni = 0; ni < 8; ++ni) {
      const int64_t r = blockIdx.y * 64 + warp * 32 + mi * 16 + g, c = blockIdx.x * 64 + ni * 8 + 2 * t;
      C[r * N + c] = acc[mi][ni][0];
      C[r * N + c + 1] = acc[mi][ni][1];
      C[(r + 8) * N + c] = acc[mi][ni][2];
      C[(r + 8) * N + c + 1] = acc[mi][ni][3];
    }
}

// the shape of ThunderKittens' register-tile load before it moved to ldmatrix: a 32-bit
// `ld.shared.b32` helper called four times per 16x16 tile, in an attention KV loop (bf16)
__device__ __forceinline__ void lds32(uint32_t& dst, uint32_t smem_addr) {
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(dst) : "r"(smem_addr));
}

// skel: match cuda-ldmatrix-fragment-loads
__global__ void attn_scores_lds_helper(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ Kc,
                                       float* __restrict__ S, int kv_len) {
  __shared__ __align__(16) __nv_bfloat16 sK[64][72];
  const int lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  uint32_t q[4][4];
  for (int d = 0; d < 4; ++d)
    for (int j = 0; j < 4; ++j)
      q[d][j] = *reinterpret_cast<const uint32_t*>(Q + (g + (j % 2) * 8) * 64 + d * 16 + 2 * t + (j / 2) * 8);
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(&sK[0][0]));
  for (int kv0 = 0; kv0 < kv_len; kv0 += 64) {
    for (int i = threadIdx.x; i < 64 * 8; i += blockDim.x)
      *reinterpret_cast<uint4*>(&sK[i / 8][(i % 8) * 8]) =
          *reinterpret_cast<const uint4*>(Kc + (int64_t)(kv0 + i / 8) * 64 + (i % 8) * 8);
    __syncthreads();
    for (int n = 0; n < 8; ++n) {
      float s[4] = {};
      for (int d = 0; d < 4; ++d) {
        uint32_t kf[2];
        lds32(kf[0], base + ((n * 8 + g) * 72 + d * 16 + 2 * t) * 2);
        lds32(kf[1], base + ((n * 8 + g) * 72 + d * 16 + 2 * t + 8) * 2);
        mma_bf16(s, q[d], kf);
      }
      S[(int64_t)g * kv_len + kv0 + n * 8 + 2 * t] = s[0];
    }
    __syncthreads();
  }
}

// already ldmatrix (Marlin's `ldsm4`, flashinfer's `ldmatrix_m8n8x4`): one instruction per 16x16 tile
__device__ __forceinline__ void ldsm4(uint32_t (&r)[4], const void* smem_ptr) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// skel: ok cuda-ldmatrix-fragment-loads
// skel: uses cuda-ldmatrix-fragment-loads
__global__ void hgemm_ldmatrix(const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C, int K) {
  __shared__ __align__(16) half sA[16][40];
  __shared__ __align__(16) half sB[16][40];
  const int lane = threadIdx.x % 32;
  float acc[2][4] = {};
  for (int k0 = 0; k0 < K; k0 += 32) {
    if (threadIdx.x < 64) {
      const int r = threadIdx.x / 4, ch = (threadIdx.x % 4) * 8;
      *reinterpret_cast<uint4*>(&sA[r][ch]) = *reinterpret_cast<const uint4*>(A + (int64_t)r * K + k0 + ch);
      *reinterpret_cast<uint4*>(&sB[r][ch]) = *reinterpret_cast<const uint4*>(B + (int64_t)r * K + k0 + ch);
    }
    __syncthreads();
    for (int kk = 0; kk < 32; kk += 16) {
      uint32_t a[4], b4[4];
      ldsm4(a, &sA[lane % 16][kk + (lane / 16) * 8]);
      ldsm4(b4, &sB[(lane / 16) * 8 + lane % 8][kk + ((lane / 8) % 2) * 8]);
      const uint32_t b0[2] = {b4[0], b4[1]}, b1[2] = {b4[2], b4[3]};
      mma_f16(acc[0], a, b0);
      mma_f16(acc[1], a, b1);
    }
    __syncthreads();
  }
  C[lane] = acc[0][0] + acc[1][0];
}

// WMMA: the fragments are loaded by `load_matrix_sync`, the library's own (ldmatrix-based) load
// skel: ok cuda-ldmatrix-fragment-loads
__global__ void hgemm_wmma(const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C, int K) {
  using namespace nvcuda;
  __shared__ __align__(32) half sA[16][24];
  __shared__ __align__(32) half sB[16][24];
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.f);
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = threadIdx.x; i < 16 * 16; i += 32) {
      sA[i / 16][i % 16] = A[(int64_t)(i / 16) * K + k0 + i % 16];
      sB[i / 16][i % 16] = B[(int64_t)(i / 16) * K + k0 + i % 16];
    }
    __syncwarp();
    wmma::load_matrix_sync(fa, &sA[0][0], 24);
    wmma::load_matrix_sync(fb, &sB[0][0], 24);
    wmma::mma_sync(fc, fa, fb, fc);
    __syncwarp();
  }
  wmma::store_matrix_sync(C, fc, 16, wmma::mem_row_major);
}

// tf32 mma.sync on fp32 tiles: each fragment element is one 32-bit float, which `ldmatrix`'s
// 16-bit 8x8 matrices do not deliver in this layout
// skel: ok cuda-ldmatrix-fragment-loads
__global__ void sgemm_tf32_mma(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int K) {
  __shared__ float sA[16][12];
  __shared__ float sB[8][12];
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  float c[4] = {};
  for (int k0 = 0; k0 < K; k0 += 8) {
    for (int i = lane; i < 16 * 8; i += 32) sA[i / 8][i % 8] = A[(int64_t)(i / 8) * K + k0 + i % 8];
    for (int i = lane; i < 8 * 8; i += 32) sB[i / 8][i % 8] = B[(int64_t)(i / 8) * K + k0 + i % 8];
    __syncwarp();
    const uint32_t a0 = *reinterpret_cast<const uint32_t*>(&sA[g][t]);
    const uint32_t a1 = *reinterpret_cast<const uint32_t*>(&sA[g + 8][t]);
    const uint32_t a2 = *reinterpret_cast<const uint32_t*>(&sA[g][t + 4]);
    const uint32_t a3 = *reinterpret_cast<const uint32_t*>(&sA[g + 8][t + 4]);
    const uint32_t b0 = *reinterpret_cast<const uint32_t*>(&sB[g][t]);
    const uint32_t b1 = *reinterpret_cast<const uint32_t*>(&sB[g][t + 4]);
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    __syncwarp();
  }
  C[lane * 4] = c[0];
}

// fragments read straight from global memory (a small-M decode GEMM with no staging): ldmatrix
// reads shared memory only, so there is nothing to replace
// skel: ok cuda-ldmatrix-fragment-loads
__global__ void gemv_mma_global_fragments(const half* __restrict__ X, const half* __restrict__ W, float* __restrict__ Y,
                                          int K) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t n0 = (int64_t)blockIdx.x * 8;
  float c[4] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    uint32_t a[4], b[2];
    a[0] = *reinterpret_cast<const uint32_t*>(&X[(int64_t)g * K + k0 + 2 * t]);
    a[1] = 0u;
    a[2] = *reinterpret_cast<const uint32_t*>(&X[(int64_t)g * K + k0 + 2 * t + 8]);
    a[3] = 0u;
    b[0] = *reinterpret_cast<const uint32_t*>(&W[(n0 + g) * K + k0 + 2 * t]);
    b[1] = *reinterpret_cast<const uint32_t*>(&W[(n0 + g) * K + k0 + 2 * t + 8]);
    mma_f16(c, a, b);
  }
  Y[g * 8 + 2 * t] = c[0];
}

// half2 reads from shared memory in a row reduction, no tensor cores: 32-bit loads, no fragments
// skel: ok cuda-ldmatrix-fragment-loads
__global__ void row_sum_half2_smem(const half* __restrict__ x, float* __restrict__ out, int d) {
  __shared__ __align__(16) half row[4096];
  for (int i = threadIdx.x; i < d; i += blockDim.x) row[i] = x[(int64_t)blockIdx.x * d + i];
  __syncthreads();
  float acc = 0.f;
  for (int i = threadIdx.x; i < d / 2; i += blockDim.x) {
    const half2 v = *reinterpret_cast<const half2*>(&row[2 * i]);
    acc += __low2float(v) + __high2float(v);
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
  if (threadIdx.x % 32 == 0) atomicAdd(out + blockIdx.x, acc);
}
