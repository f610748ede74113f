"""fp16/bf16 matmul, naive: fixed 64x64x32 tiles, row-major program order (no L2 swizzle).

C[M, N] = A[M, K] @ B[K, N], fp32 accumulator, output in the input dtype.
"""

import torch
import triton
import triton.language as tl

__all__ = ["SHAPES", "CPU_SHAPES", "DTYPES", "CPU_DTYPE", "TOLERANCES", "make_inputs", "make_outputs", "reference",
           "bytes_moved", "flops"]

SHAPES = {
    "tiny": dict(M=40, N=72, K=96),
    "square": dict(M=4096, N=4096, K=4096),
    "tall": dict(M=8192, N=4096, K=1024),
}
CPU_SHAPES = ("tiny",)
DTYPES = ("float16", "bfloat16")
CPU_DTYPE = "float16"  # the interpreter's bf16 tl.dot is wrong
TOLERANCES = {"float16": (2e-3, 1e-2), "bfloat16": (1e-2, 2e-2)}


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    s = shape["K"] ** -0.25  # outputs ~ N(0, 1)
    a = (torch.randn(shape["M"], shape["K"], generator=g) * s).to(dtype).to(device)
    b = (torch.randn(shape["K"], shape["N"], generator=g) * s).to(dtype).to(device)
    return (a, b)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a, b):
    return (a @ b,)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return e * (shape["M"] * shape["K"] + shape["K"] * shape["N"] + shape["M"] * shape["N"])


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + (k + offs_k)[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=((k + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def run(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, 64) * triton.cdiv(N, 64),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
