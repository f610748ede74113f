"""inline-asm-elementwise: int4 → fp16 weight dequantisation. Shift, mask and convert every
nibble (`(w >> 4*i) & 0xF`, `.to(tl.float16)`) → the packed PTX trick: one `lop3` ORs two
nibbles into the mantissas of the fp16 constant 1024 and one `sub.f16x2` (or `fma.rn.f16x2`
for the high nibbles) leaves both values, two per instruction and no int-to-float converts.

qweight is int32 [K, N // 8]: nibble i of word j of row k is column 8 * j + i. The output is
fp16 [K, N] = (nibble - zero[n]) * scale[n] (AWQ-style per-column zero point and scale).
Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(K=37, N=200),                 # N // 8 = 25 words: not a multiple of BQ
    "llama_mlp": dict(K=4096, N=14336),        # a Llama-3-8B up-projection's int4 weight
    "wide": dict(K=8192, N=28672),             # a Llama-3-70B up-projection
    "huge": dict(K=65_600, N=32_768),          # output past 2**31 elements: row offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("float16",)                          # the magic-number trick is fp16's (bf16 needs another constant)
TOLERANCES = {"float16": (1e-3, 1e-3)}         # one fp16 rounding of (nibble - zero) * scale
CPU_SKIP = ("tl.inline_asm_elementwise cannot run under TRITON_INTERPRET=1: the interpreter raises "
            "NotImplementedError('inline_asm not supported in interpreter mode') (triton 3.7.1)")
BK, BQ = 32, 32                                # 32 rows x 32 words (256 output columns) per program


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    K, N = shape["K"], shape["N"]
    qweight = torch.randint(-(1 << 31), (1 << 31) - 1, (K, N // 8), generator=g, dtype=torch.int32)
    zeros = torch.randint(0, 16, (N,), generator=g).to(dtype)
    scales = (0.01 + 0.05 * torch.rand(N, generator=g)).to(dtype)
    return qweight.to(device), scales.to(device), zeros.to(device)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["K"], shape["N"], dtype=dtype, device=device),)


def reference(qweight, scales, zeros):
    shifts = torch.arange(0, 32, 4, device=qweight.device, dtype=torch.int32)
    out = torch.empty(qweight.shape[0], qweight.shape[1] * 8, dtype=scales.dtype, device=qweight.device)
    for k in range(0, qweight.shape[0], 4096):  # row chunks: the CHECK_ONLY shape's temporaries stay small
        nib = ((qweight[k:k + 4096].unsqueeze(-1) >> shifts) & 0xF).reshape(-1, out.shape[1])
        out[k:k + 4096] = (nib.to(scales.dtype) - zeros) * scales
    return (out,)


def bytes_moved(shape, dtype):
    K, N = shape["K"], shape["N"]
    return K * N // 2 + K * N * 2 + 2 * N * 2


def flops(shape, dtype):
    return 2 * shape["K"] * shape["N"]


def _grid(K, N):
    return (triton.cdiv(K, BK), triton.cdiv(N // 8, BQ))


@triton.jit
def before_kernel(qw_ptr, s_ptr, z_ptr, out_ptr, K, N, BK: tl.constexpr, BQ: tl.constexpr):
    o_k = tl.program_id(0) * BK + tl.arange(0, BK)
    o_q = tl.program_id(1) * BQ + tl.arange(0, BQ)
    o_n = tl.program_id(1) * BQ * 8 + tl.arange(0, BQ * 8)
    NQ = N // 8
    w = tl.load(qw_ptr + o_k[:, None].to(tl.int64) * NQ + o_q[None, :],
                mask=(o_k[:, None] < K) & (o_q[None, :] < NQ), other=0)
    shifts = tl.arange(0, 8) * 4
    nib = (w[:, :, None] >> shifts[None, None, :]) & 0xF          # [BK, BQ, 8]: shift, mask
    v = nib.to(tl.float16).reshape(BK, BQ * 8)                     # an int-to-float convert per element
    s = tl.load(s_ptr + o_n, mask=o_n < N, other=0.0)
    z = tl.load(z_ptr + o_n, mask=o_n < N, other=0.0)
    tl.store(out_ptr + o_k[:, None].to(tl.int64) * N + o_n[None, :], (v - z[None, :]) * s[None, :],
             mask=(o_k[:, None] < K) & (o_n[None, :] < N))


def before(qweight, scales, zeros, out):
    K, N = out.shape
    before_kernel[_grid(K, N)](qweight, scales, zeros, out, K, N, BK=BK, BQ=BQ, num_warps=4)


@triton.jit
def after_int4_low(w):
    # nibbles 0 and 4 of each word: (w & 0x000f000f) | 0x6400_6400 is (1024 + n0, 1024 + n4) in fp16
    return tl.inline_asm_elementwise(
        "{ .reg .b32 t, m; lop3.b32 t, $2, 0x000f000f, 0x64006400, 0xea; mov.b32 m, 0x64006400; "
        "sub.f16x2 t, t, m; mov.b32 {$0, $1}, t; }",
        "=h,=h,r", args=[w], dtype=(tl.float16, tl.float16), is_pure=True, pack=1)


@triton.jit
def after_int4_high(w):
    # nibbles 1 and 5: (1024 + 16 n) * 1/16 - 64 = n, one fma.rn.f16x2 for both
    return tl.inline_asm_elementwise(
        "{ .reg .b32 t, m, a; lop3.b32 t, $2, 0x00f000f0, 0x64006400, 0xea; mov.b32 m, 0x2c002c00; "
        "mov.b32 a, 0xd400d400; fma.rn.f16x2 t, t, m, a; mov.b32 {$0, $1}, t; }",
        "=h,=h,r", args=[w], dtype=(tl.float16, tl.float16), is_pure=True, pack=1)


@triton.jit
def after_kernel(qw_ptr, s_ptr, z_ptr, out_ptr, K, N, BK: tl.constexpr, BQ: tl.constexpr):
    o_k = tl.program_id(0) * BK + tl.arange(0, BK)
    o_q = tl.program_id(1) * BQ + tl.arange(0, BQ)
    o_n = tl.program_id(1) * BQ * 8 + tl.arange(0, BQ * 8)
    NQ = N // 8
    w = tl.load(qw_ptr + o_k[:, None].to(tl.int64) * NQ + o_q[None, :],
                mask=(o_k[:, None] < K) & (o_q[None, :] < NQ), other=0)
    w0, w4 = after_int4_low(w)
    w1, w5 = after_int4_high(w)
    w2, w6 = after_int4_low(w >> 8)
    w3, w7 = after_int4_high(w >> 8)
    # interleave back to column order 8 * j + i: join adds a trailing axis, so (w0, w4) is the slowest
    v = tl.join(tl.join(tl.join(w0, w4), tl.join(w2, w6)), tl.join(tl.join(w1, w5), tl.join(w3, w7)))
    v = v.reshape(BK, BQ * 8)
    s = tl.load(s_ptr + o_n, mask=o_n < N, other=0.0)
    z = tl.load(z_ptr + o_n, mask=o_n < N, other=0.0)
    tl.store(out_ptr + o_k[:, None].to(tl.int64) * N + o_n[None, :], (v - z[None, :]) * s[None, :],
             mask=(o_k[:, None] < K) & (o_n[None, :] < N))


def after(qweight, scales, zeros, out):
    K, N = out.shape
    after_kernel[_grid(K, N)](qweight, scales, zeros, out, K, N, BK=BK, BQ=BQ, num_warps=4)
