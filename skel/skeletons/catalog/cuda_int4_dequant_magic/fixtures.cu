// Fixtures for cuda-int4-dequant-magic: kernels that must match and must not (expectation lines above each).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

// AWQ-style W4A16 GEMV (one warp per output column block): each int32 holds 8 nibbles of one
// column, unpacked with a shift, a mask and `__int2half_rn` one value at a time, then the
// group's zero and scale; the value feeds the dot product right away
// skel: match cuda-int4-dequant-magic
__global__ void w4a16_gemv_shift_mask(const half* __restrict__ x, const uint32_t* __restrict__ qweight,
                                      const half* __restrict__ scales, const half* __restrict__ zeros,
                                      half* __restrict__ y, int K, int N, int group_size) {
  const int n = blockIdx.x * blockDim.y + threadIdx.y;
  if (n >= N) return;
  float acc = 0.f;
  for (int kp = threadIdx.x; kp < K / 8; kp += 32) {
    const uint32_t q = qweight[(int64_t)n * (K / 8) + kp];
    const int g = kp * 8 / group_size;
    const half s = scales[(int64_t)n * (K / group_size) + g];
    const half z = zeros[(int64_t)n * (K / group_size) + g];
    for (int j = 0; j < 8; ++j) {
      const half w = __hmul(__hsub(__int2half_rn((q >> (4 * j)) & 0xF), z), s);
      acc += __half2float(x[kp * 8 + j]) * __half2float(w);
    }
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
  if (threadIdx.x == 0) y[n] = __float2half(acc);
}

// GPTQ-style fp32 GEMV: the nibble is extracted into an int first, then cast to float with the
// symmetric zero point 8 subtracted

// skel: match cuda-int4-dequant-magic
__global__ void gptq_gemv_fp32(const float* __restrict__ x, const uint32_t* __restrict__ qw,
                               const float* __restrict__ scales, float* __restrict__ y, int K, int N) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= N) return;
  float acc = 0.f;
  for (int kp = 0; kp < K / 8; ++kp) {
    const uint32_t q = qw[(int64_t)kp * N + col];
    const float s = scales[(kp * 8 / 128) * N + col];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int v = (q >> (j * 4)) & 0xF;
      acc += x[kp * 8 + j] * (static_cast<float>(v) - 8.f) * s;
    }
  }
  y[col] = acc;
}

// the shape of llm-awq's first TinyChat GEMV (`gemv_kernel_g128`): the low nibble cast with a
// C cast, then the word shifted down in place for the next one; 32 weights a lane per trip
// skel: match cuda-int4-dequant-magic
__global__ void awq_gemv_cast_low_nibble(const float4* __restrict__ inputs, const uint32_t* __restrict__ weight,
                                         const half* __restrict__ scales, half* __restrict__ outputs, int IC) {
  const int oc = blockIdx.y * blockDim.y + threadIdx.y;
  float psum = 0.f;
  for (int g = 0; g < IC / 1024; ++g) {
    uint32_t packed[4];
    *reinterpret_cast<float4*>(packed) = *reinterpret_cast<const float4*>(weight + (int64_t)oc * (IC / 8) + g * 128 +
                                                                           threadIdx.x * 4);
    const float s = __half2float(scales[(int64_t)oc * (IC / 128) + g * 8 + threadIdx.x / 4]);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      uint32_t w = packed[i];
      half xs[8];
      *reinterpret_cast<float4*>(xs) = inputs[g * 128 + threadIdx.x * 4 + i];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float wf = (float)(w & 0xF);
        psum += s * (wf - 8.f) * __half2float(xs[j]);
        w = w >> 4;
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) psum += __shfl_xor_sync(0xffffffff, psum, o);
  if (threadIdx.x == 0) outputs[oc] = __float2half(psum);
}

// a standalone dequantiser (the unfused path: unpack to a bf16 copy a GEMM reads back): the
// subject is there, but 2 bytes stored per 0.5 byte read bound it, not the conversions
// skel: match cuda-int4-dequant-magic
__global__ void dequant_int4_to_bf16(const uint32_t* __restrict__ qw, const __nv_bfloat16* __restrict__ scales,
                                     __nv_bfloat16* __restrict__ out, int64_t n_packed, int group_size) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n_packed) return;
  const uint32_t q = qw[i];
  const float s = __bfloat162float(scales[i * 8 / group_size]);
  for (int j = 0; j < 8; ++j) {
    out[i * 8 + j] = __float2bfloat16((float)((int)((q >> (4 * j)) & 0xF) - 8) * s);
  }
}

// already the magic-number form: nibbles ORed into the mantissa of fp16 1024 (0x6400) with a
// lop3, then one packed subtract/fma per pair (llm-awq / Marlin `dequant`)
__device__ __forceinline__ void dequant8_magic(uint32_t q, half2 (&w)[4]) {
  const uint32_t top = q >> 8;
  uint32_t h[4];
  asm("lop3.b32 %0, %1, %2, %3, 0xea;\n" : "=r"(h[0]) : "r"(q), "n"(0x000f000f), "n"(0x64006400));
  asm("lop3.b32 %0, %1, %2, %3, 0xea;\n" : "=r"(h[1]) : "r"(q), "n"(0x00f000f0), "n"(0x64006400));
  asm("lop3.b32 %0, %1, %2, %3, 0xea;\n" : "=r"(h[2]) : "r"(top), "n"(0x000f000f), "n"(0x64006400));
  asm("lop3.b32 %0, %1, %2, %3, 0xea;\n" : "=r"(h[3]) : "r"(top), "n"(0x00f000f0), "n"(0x64006400));
  const uint32_t sub = 0x64086408, mul = 0x2c002c00, add = 0xd480d480;
  w[0] = __hsub2(*reinterpret_cast<half2*>(&h[0]), *reinterpret_cast<const half2*>(&sub));
  w[1] = __hfma2(*reinterpret_cast<half2*>(&h[1]), *reinterpret_cast<const half2*>(&mul),
                 *reinterpret_cast<const half2*>(&add));
  w[2] = __hsub2(*reinterpret_cast<half2*>(&h[2]), *reinterpret_cast<const half2*>(&sub));
  w[3] = __hfma2(*reinterpret_cast<half2*>(&h[3]), *reinterpret_cast<const half2*>(&mul),
                 *reinterpret_cast<const half2*>(&add));
}

// skel: ok cuda-int4-dequant-magic
// skel: uses cuda-int4-dequant-magic
__global__ void w4a16_gemv_magic(const half2* __restrict__ x2, const uint32_t* __restrict__ qweight,
                                 const half2* __restrict__ scales2, half* __restrict__ y, int K, int N) {
  const int n = blockIdx.x * blockDim.y + threadIdx.y;
  if (n >= N) return;
  half2 acc = __float2half2_rn(0.f);
  for (int kp = threadIdx.x; kp < K / 8; kp += 32) {
    half2 w[4];
    dequant8_magic(qweight[(int64_t)n * (K / 8) + kp], w);
    const half2 s = scales2[(int64_t)n * (K / 128) + kp * 8 / 128];
    for (int j = 0; j < 4; ++j) acc = __hfma2(x2[kp * 4 + j], __hmul2(w[j], s), acc);
  }
  float a = __low2float(acc) + __high2float(acc);
  for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffff, a, o);
  if (threadIdx.x == 0) y[n] = __float2half(a);
}

// int8 weights read as `int8_t` and converted one per element: no packed field to unpack (the
// int8 magic needs a byte permute, and an int8 KV/weight stream is bound by its bytes)
// skel: ok cuda-int4-dequant-magic
__global__ void int8_weight_gemv(const float* __restrict__ x, const int8_t* __restrict__ w,
                                 const float* __restrict__ scale, float* __restrict__ y, int K, int N) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += x[k] * static_cast<float>(w[(int64_t)k * N + col]);
  y[col] = acc * scale[col];
}

// NF4 / FP4 codes unpacked with a shift and a mask, but turned into values through a lookup
// table (bitsandbytes-style): not an int-to-float conversion, the magic number has nothing to do
__constant__ float kNF4[16];
// skel: ok cuda-int4-dequant-magic
__global__ void nf4_dequant_lut(const uint8_t* __restrict__ q, const float* __restrict__ absmax,
                                half* __restrict__ out, int64_t n_bytes, int blocksize) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n_bytes) return;
  const uint8_t b = q[i];
  const float m = absmax[i * 2 / blocksize];
  out[2 * i] = __float2half(kNF4[b >> 4] * m);
  out[2 * i + 1] = __float2half(kNF4[b & 0x0F] * m);
}

// bits of a packed mask word tested one by one (a bit-packed attention mask): a shift and a
// mask, but the field is a predicate, never converted to a float
// skel: ok cuda-int4-dequant-magic
__global__ void apply_packed_mask(float* __restrict__ scores, const uint32_t* __restrict__ mask_bits, int64_t n) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t word = mask_bits[i / 32];
  if (((word >> (i % 32)) & 0x1) == 0) scores[i] = -INFINITY;
}

// GPTQ -> interleaved repacking: nibbles moved between words with shifts and masks, never
// converted (the offline step that lets the magic form read pairs in order)
// skel: ok cuda-int4-dequant-magic
__global__ void repack_int4_interleaved(const uint32_t* __restrict__ src, uint32_t* __restrict__ dst, int64_t n) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t q = src[i];
  uint32_t out = 0;
  for (int j = 0; j < 8; ++j) {
    const uint32_t v = (q >> (4 * j)) & 0xF;
    const int slot = (j % 2) * 4 + j / 2;
    out |= v << (4 * slot);
  }
  dst[i] = out;
}
