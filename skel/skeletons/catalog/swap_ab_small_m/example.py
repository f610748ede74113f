"""swap-ab-small-m: a decode GEMM tiled [16 tokens x BLOCK_N] → the swapped [BLOCK_N x 16 tokens] C^T tile.

Harness format: docs/harness.md. The before/after launchers are the template shown.
C[M, N] = A[M, K] @ W[N, K]^T with M = a handful of tokens (decode) and N, K large. The
before tiles M with the smallest MMA tile (BLOCK_M = 16): 1 to 16 useful rows of every MMA,
and on Hopper an M = 16 tile cannot use wgmma (M = 64 per warp group). The after computes
the transposed tile C^T = W @ A^T: the N features fill the MMA's M slot (BLOCK_N = 64..128
rows), the 16 tokens sit in its N slot, and the tile is stored back transposed into C.
Both read W once; the swap changes only which dimension the tensor core spends its rows on.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=5, N=100, K=80),           # on the CPU: M, N and K all off the blocks
    "decode1": dict(M=1, N=8192, K=8192),
    "decode8": dict(M=8, N=14336, K=4096),     # an MLP up projection at batch 8
    "decode16": dict(M=16, N=4096, K=14336),
    "huge": dict(M=4, N=65536, K=40000),      # W past 2**31 elements: rn * K must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("float16",)  # the CPU interpreter's bf16 tl.dot is wrong; fp16 runs on both
TOLERANCES = {"float16": (2e-3, 2e-3)}  # fp32 accumulation in both, one rounding of C


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, N, K = shape["M"], shape["N"], shape["K"]
    a = (torch.randn(M, K, generator=g, device=device) * K ** -0.5).to(dtype)
    w = torch.randn(N, K, generator=g, device=device).to(dtype)
    return a, w


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a, w):
    return (a @ w.T,)


def bytes_moved(shape, dtype):
    M, N, K = shape["M"], shape["N"], shape["K"]
    return (M * K + N * K + M * N) * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


def _tiles(a):
    return (128, 64) if a.is_cuda else (32, 32)  # BLOCK_N, BLOCK_K


@triton.jit
def before_kernel(a_ptr, w_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_m = rm < M
    m_n = rn < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=m_m[:, None] & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn.to(tl.int64)[None, :] * K + rk[:, None], mask=m_n[None, :] & (rk[:, None] < K),
                    other=0.0)
        acc = tl.dot(a, w, acc)  # [BLOCK_M = 16 tokens, BLOCK_N]: most MMA rows are padding
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=m_m[:, None] & m_n[None, :])


def before(a, w, c):
    M, K = a.shape
    N = w.shape[0]
    bn, bk = _tiles(a)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, bn))
    before_kernel[grid](a, w, c, M, N, K, BLOCK_M=16, BLOCK_N=bn, BLOCK_K=bk)  # the smallest MMA tile


@triton.jit
def after_kernel(a_ptr, w_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr):
    # SWAP_AB: the C^T tile [BLOCK_N features, BLOCK_M tokens] = W tile @ A^T tile
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_m = rm < M
    m_n = rn < N
    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        w = tl.load(w_ptr + rn.to(tl.int64)[:, None] * K + rk[None, :], mask=m_n[:, None] & (rk[None, :] < K),
                    other=0.0)
        a_t = tl.load(a_ptr + rm[None, :] * K + rk[:, None], mask=m_m[None, :] & (rk[:, None] < K), other=0.0)
        acc = tl.dot(w, a_t, acc)  # N fills the MMA's M slot
    tl.store(c_ptr + rm[None, :] * N + rn[:, None], acc.to(c_ptr.dtype.element_ty), mask=m_m[None, :] & m_n[:, None])


def after(a, w, c):
    M, K = a.shape
    N = w.shape[0]
    bn, bk = _tiles(a)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, bn))
    after_kernel[grid](a, w, c, M, N, K, BLOCK_M=16, BLOCK_N=bn, BLOCK_K=bk)
