"""Naive fp32 GEMM: C = A @ B in fp32, fixed 64x64x32 tiles, one program per output tile, no autotune.

tl.dot on fp32 inputs uses Triton's default input precision (tf32 on sm80+)."""
import torch
import triton
import triton.language as tl

KERNEL = "gemm_fp32_kernel"
SIZES = {"M": 4096, "N": 4096, "K": 4096}
SHAPES = ["M=4096", "N=4096", "K=4096"]
CPU_SIZES = {"M": 64, "N": 96, "K": 80}
DTYPE = torch.float32


@triton.jit
def gemm_fp32_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch(a, b):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.float32)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    gemm_fp32_kernel[grid](a, b, c, M, N, K,
                           a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                           BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    return c


def make_inputs(device, sizes=None):
    s = sizes or SIZES
    a = torch.randn((s["M"], s["K"]), device=device, dtype=DTYPE)
    b = torch.randn((s["K"], s["N"]), device=device, dtype=DTYPE)
    return a, b


def reference(a, b):
    return a.double().matmul(b.double()).float()
