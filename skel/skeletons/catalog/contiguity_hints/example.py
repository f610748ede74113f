"""contiguity-hints: a wrapped-offset GEMM (`% M`, `% N`, the Triton matmul tutorial's trick) whose B columns
come from a row-padded buffer → tl.max_contiguous(tl.multiple_of(...)) restores the 16-byte vector loads.

Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

# PAD: B is a view of a buffer whose rows are padded to a multiple of PAD elements (1: contiguous)
SHAPES = {
    "tiny": dict(M=37, N=72, K=88, PAD=16),           # no size a multiple of a block; a padded B
    "vocab": dict(M=8192, N=50264, K=2048, PAD=64),   # a vocab-sized N, a multiple of 8 but not of 16, in a
    #   buffer padded to 50304 columns: `% N` tells the compiler nothing, though every row start is aligned
    "vocab_4k": dict(M=4096, N=50264, K=4096, PAD=64),
    "square": dict(M=8192, N=8192, K=8192, PAD=1),    # does not apply: N is specialized as a multiple of 16,
    #   and Triton's axis analysis already keeps `(pid * BN + arange) % N` contiguous in runs of 16
    "huge": dict(M=266240, N=256, K=8192, PAD=1),     # A past 2**31 elements: row * stride_am must be int64
}
FIXED = ("PAD",)
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("float16",)                            # the interpreter's bf16 tl.dot is wrong; fp16 runs on both
TOLERANCES = {"float16": (2e-3, 2e-3)}           # fp32 accumulation, one fp16 rounding of the output
BM, BN, BK, WARPS, STAGES = 128, 256, 64, 8, 3   # a good Hopper fp16 tile (Triton's matmul tutorials)


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, N, K = shape["M"], shape["N"], shape["K"]
    scale = K ** -0.25  # outputs of order one
    a = (torch.randn(M, K, generator=g, device=device) * scale).to(dtype)
    padded = triton.cdiv(N, shape["PAD"]) * shape["PAD"]
    b = (torch.randn(K, padded, generator=g, device=device) * scale).to(dtype)[:, :N]
    return a, b


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a, b):
    return (a @ b,)


def bytes_moved(shape, dtype):
    M, N, K = shape["M"], shape["N"], shape["K"]
    return (M * K + K * N + M * N) * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


def _grid(M, N):
    return (triton.cdiv(M, BM), triton.cdiv(N, BN))


@triton.jit
def before_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    # rows and columns past the edge wrap around instead of being masked (the last tile re-reads valid data)
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + offs_am[:, None].to(tl.int64) * stride_am + (k0 + rk)[None, :] * stride_ak,
                    mask=(k0 + rk)[None, :] < K, other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * stride_bk + offs_bn[None, :] * stride_bn,
                    mask=(k0 + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    rm = (pid_m * BM + tl.arange(0, BM)).to(tl.int64)
    rn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def before(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    before_kernel[_grid(M, N)](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK, num_warps=WARPS, num_stages=STAGES)


@triton.jit
def after_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    # rows and columns past the edge wrap around instead of being masked (the last tile re-reads valid data)
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    # each run of BM (BN) offsets is contiguous and starts at a multiple of BM (BN); `% N` hides that when N
    # is not a multiple of 16. Only true enough when N is a multiple of the vector (8 fp16): then every
    # 16-byte vector of the wrapped last tile starts aligned (with N = 50257 this faulted on an H200:
    # misaligned address).
    offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BM), BM)
    offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BN), BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + offs_am[:, None].to(tl.int64) * stride_am + (k0 + rk)[None, :] * stride_ak,
                    mask=(k0 + rk)[None, :] < K, other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * stride_bk + offs_bn[None, :] * stride_bn,
                    mask=(k0 + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    rm = (pid_m * BM + tl.arange(0, BM)).to(tl.int64)
    rn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def after(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    after_kernel[_grid(M, N)](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                    c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK, num_warps=WARPS, num_stages=STAGES)
