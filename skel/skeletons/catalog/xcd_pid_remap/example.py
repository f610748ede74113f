"""xcd-pid-remap: a GEMM numbered for one L2 → each AMD XCD gets a contiguous range of tiles.

Harness format: docs/harness.md. The before/after launchers are the template shown.
Both sides are the same fp16 GEMM (64x64x32 tiles, GROUP_SIZE_M=4 grouped order); the
after side first renumbers the program id so that the programs the hardware dispatches to
one XCD (every NUM_XCDS-th) take consecutive tiles of the grouped order. On a GPU without
XCDs (NVIDIA, or the CPU interpreter) the remap only costs its few integer operations:
this pair checks that every tile is still computed exactly once; its speed needs an
MI300-class GPU, which skel's GPU runs do not have.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=70, K=50),            # 1 x 2 tiles: fewer programs than XCDs
    "uneven": dict(M=300, N=200, K=64),        # 5 x 4 = 20 tiles: 8 XCDs get 3 or 2 each
    "square": dict(M=8192, N=8192, K=8192),
    "moe_like": dict(M=4096, N=14336, K=4096),
}
CPU_SHAPES = ("tiny", "uneven")
DTYPES = ("float16",)
TOLERANCES = {"float16": (2e-3, 2e-3)}  # fp32 accumulation, one fp16 rounding of C (|C| ~ 1)
BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS = 64, 64, 32, 4, 8


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, N, K = shape["M"], shape["N"], shape["K"]
    a = (torch.randn(M, K, generator=g, device=device) * K ** -0.5).to(dtype)
    b = torch.randn(K, N, generator=g, device=device).to(dtype)
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


@triton.jit
def before_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(0)
    # the grouped tile order, numbered for one shared L2
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_SIZE_M * tiles_n
    first_m = (pid // per_group) * GROUP_SIZE_M
    rows_here = min(tiles_m - first_m, GROUP_SIZE_M)
    tile_m = first_m + (pid % per_group) % rows_here
    tile_n = (pid % per_group) // rows_here
    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None].to(tl.int64) * stride_am + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None].to(tl.int64) * stride_bk + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None].to(tl.int64) * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def before(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    before_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_SIZE_M=GROUP_SIZE_M)


@triton.jit
def after_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                 NUM_XCDS: tl.constexpr):
    pid = tl.program_id(0)
    grid = tl.num_programs(0)
    # the hardware sends program p to XCD p % NUM_XCDS; hand each XCD a contiguous run of
    # the grouped order instead, so the tiles sharing A/B panels share that XCD's L2
    per_xcd = tl.cdiv(grid, NUM_XCDS)
    full = grid - (per_xcd - 1) * NUM_XCDS  # XCDs that receive per_xcd programs
    xcd = pid % NUM_XCDS
    nth = pid // NUM_XCDS
    pid = tl.where(xcd < full, xcd * per_xcd, full * per_xcd + (xcd - full) * (per_xcd - 1)) + nth
    # the same grouped tile order, from the remapped id
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_SIZE_M * tiles_n
    first_m = (pid // per_group) * GROUP_SIZE_M
    rows_here = min(tiles_m - first_m, GROUP_SIZE_M)
    tile_m = first_m + (pid % per_group) % rows_here
    tile_n = (pid % per_group) // rows_here
    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None].to(tl.int64) * stride_am + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None].to(tl.int64) * stride_bk + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None].to(tl.int64) * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def after(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    after_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                       BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_SIZE_M=GROUP_SIZE_M,
                       NUM_XCDS=NUM_XCDS)
