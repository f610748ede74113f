"""block-scaled-fp8-gemm: dequantise fp8 tiles to fp16 in the K loop → fp8 tl.dot with the block scales on each partial.

Harness format: docs/harness.md. The before/after launchers are the template shown.
C = (A_q * a_s) @ (B_q * b_s)^T with DeepSeek-style scales: A_q (M, K) fp8 e4m3 with one
scale per (row, 128-column group), B_q (N, K) fp8 with one scale per 128x128 block. The
before dequantises both tiles in the K loop (tile * scale, cast to fp16) and runs an fp16
tl.dot. The after feeds the fp8 tiles to tl.dot and multiplies each K block's fp32 partial
by a_s[:, None] * b_s[None, :] (BLOCK_K = the 128 group, so a block never straddles two
scales). The before's fp16 cast of the dequantised tiles rounds; the after's products are
exact (fp8 x fp8 fits fp32), so it is the more accurate of the two.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=200, K=256),          # on the CPU: N ends inside a scale block
    "decode": dict(M=16, N=7168, K=7168),       # DeepSeek-V3 projections at batch 16
    "prefill": dict(M=4096, N=7168, K=7168),
    "moe_up": dict(M=4096, N=4096, K=7168),
    "huge": dict(M=300000, N=256, K=7168),      # A past 2**31 elements: row * K must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("K",)  # a multiple of the 128 scale group
DTYPES = ("bfloat16", "float16")  # the output dtype (the operands are fp8)
TOLERANCES = {"bfloat16": (1e-2, 1e-2), "float16": (5e-3, 5e-3)}  # the before's fp16 tiles round
GROUP = 128


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, N, K = shape["M"], shape["N"], shape["K"]
    a_q = (torch.randn(M, K, generator=g, device=device) * 32).clamp(-448, 448).to(torch.float8_e4m3fn)
    b_q = (torch.randn(N, K, generator=g, device=device) * 32).clamp(-448, 448).to(torch.float8_e4m3fn)
    a_s = torch.rand(M, K // GROUP, generator=g, device=device) / 32 * K ** -0.5 + 1e-4
    b_s = torch.rand(triton.cdiv(N, GROUP), K // GROUP, generator=g, device=device) / 32 + 1e-4
    return a_q, a_s, b_q, b_s


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a_q, a_s, b_q, b_s):
    N = b_q.shape[0]
    a = a_q * a_s.repeat_interleave(GROUP, 1)
    b = b_q * b_s.repeat_interleave(GROUP, 0)[:N].repeat_interleave(GROUP, 1)
    return (a @ b.T,)


def bytes_moved(shape, dtype):
    M, N, K = shape["M"], shape["N"], shape["K"]
    return M * K + N * K + M * N * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


def _tiles(x):
    return (64, 128) if x.is_cuda else (16, 32)  # BLOCK_M, BLOCK_N; BLOCK_K is the 128 group


@triton.jit
def before_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, M, N, K, NUM_KG, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_m = rm < M
    m_n = rn < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm.to(tl.int64)[:, None] * K + (k0 + rk)[None, :], mask=m_m[:, None], other=0.0)
        b = tl.load(b_ptr + rn.to(tl.int64)[None, :] * K + (k0 + rk)[:, None], mask=m_n[None, :], other=0.0)
        a_s = tl.load(as_ptr + rm * NUM_KG + k0 // GROUP, mask=m_m, other=0.0)
        b_s = tl.load(bs_ptr + (rn // GROUP) * NUM_KG + k0 // GROUP, mask=m_n, other=0.0)
        a = (a.to(tl.float32) * a_s[:, None]).to(tl.float16)  # dequantised in the loop: fp16 MMA
        b = (b.to(tl.float32) * b_s[None, :]).to(tl.float16)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=m_m[:, None] & m_n[None, :])


def before(a_q, a_s, b_q, b_s, c):
    M, K = a_q.shape
    N = b_q.shape[0]
    bm, bn = _tiles(a_q)
    before_kernel[(triton.cdiv(M, bm), triton.cdiv(N, bn))](a_q, a_s, b_q, b_s, c, M, N, K, K // GROUP,
                                                           BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=GROUP, GROUP=GROUP)


@triton.jit
def after_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, M, N, K, NUM_KG, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_m = rm < M
    m_n = rn < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm.to(tl.int64)[:, None] * K + (k0 + rk)[None, :], mask=m_m[:, None], other=0.0)
        b = tl.load(b_ptr + rn.to(tl.int64)[None, :] * K + (k0 + rk)[:, None], mask=m_n[None, :], other=0.0)
        a_s = tl.load(as_ptr + rm * NUM_KG + k0 // GROUP, mask=m_m, other=0.0)
        b_s = tl.load(bs_ptr + (rn // GROUP) * NUM_KG + k0 // GROUP, mask=m_n, other=0.0)
        acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]  # fp8 MMA; one scale pair per K block
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=m_m[:, None] & m_n[None, :])


def after(a_q, a_s, b_q, b_s, c):
    M, K = a_q.shape
    N = b_q.shape[0]
    bm, bn = _tiles(a_q)
    after_kernel[(triton.cdiv(M, bm), triton.cdiv(N, bn))](a_q, a_s, b_q, b_s, c, M, N, K, K // GROUP,
                                                          BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=GROUP, GROUP=GROUP)
