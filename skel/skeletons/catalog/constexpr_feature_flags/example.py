"""constexpr-feature-flags: a matmul with an optional per-K-column input scale (SmoothQuant-style
smoothing factors applied on the fly) switched by a runtime argument `apply_scale`, tested in
the K loop → the same switch as a `USE_SCALE: tl.constexpr` flag, so each variant compiles
only its own loop body.

Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=45, K=70, S=1),                 # no size a multiple of a block; scale on
    "tiny_off": dict(M=37, N=45, K=70, S=0),             # scale off
    "scale_off": dict(M=4096, N=4096, K=4096, S=0),      # the common call: the dead branch still shapes the loop
    "scale_on": dict(M=4096, N=4096, K=4096, S=1),
    "small_k_off": dict(M=8192, N=8192, K=1024, S=0),
    "huge": dict(M=270000, N=256, K=8192, S=1),          # a past 2**31 elements: int64 row offsets
}
CPU_SHAPES = ("tiny", "tiny_off")
GPU_SHAPES = ("scale_off", "scale_on", "small_k_off")
CHECK_ONLY = ("huge",)
DTYPES = ("float16",)  # bf16 tl.dot is garbage in the CPU interpreter
TOLERANCES = {"float16": (2e-3, 2e-3)}  # the scaled tile is rounded to fp16 for the MMA on both sides
FIXED = ("S",)  # the switch is 0 or 1
BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 64


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, N, K = shape["M"], shape["N"], shape["K"]
    a = torch.randn(M, K, generator=g).to(dtype).to(device)
    b = (torch.randn(K, N, generator=g) * K ** -0.5).to(dtype).to(device)
    s = (torch.rand(K, generator=g) + 0.5).to(dtype).to(device)
    return a, b, s, int(shape["S"])  # an int switch: a runtime i32 argument (Triton specialises no value but % 16)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a, b, s, apply_scale):
    return ((a * s if apply_scale else a) @ b,)


def bytes_moved(shape, dtype):
    M, N, K = shape["M"], shape["N"], shape["K"]
    return (M * K + K * N + M * N + K * shape["S"]) * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"] + shape["S"] * shape["M"] * shape["K"]


@triton.jit
def before_kernel(
        a_ptr, b_ptr, s_ptr, c_ptr, apply_scale, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (rm % M).to(tl.int64)[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + (rn % N)[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k0, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k0, other=0.0)
        if apply_scale:
            s = tl.load(s_ptr + k0 + rk, mask=rk < K - k0, other=0.0)
            a = (a.to(tl.float32) * s.to(tl.float32)[None, :]).to(a.dtype)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + rm.to(tl.int64)[:, None] * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def before(a, b, s, apply_scale, c):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    before_kernel[grid](
        a, b, s, c, apply_scale, M, N, K, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K, num_warps=8, num_stages=3)


@triton.jit
def after_kernel(
        a_ptr, b_ptr, s_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, USE_SCALE: tl.constexpr,
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (rm % M).to(tl.int64)[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + (rn % N)[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k0, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k0, other=0.0)
        if USE_SCALE:
            s = tl.load(s_ptr + k0 + rk, mask=rk < K - k0, other=0.0)
            a = (a.to(tl.float32) * s.to(tl.float32)[None, :]).to(a.dtype)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + rm.to(tl.int64)[:, None] * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def after(a, b, s, apply_scale, c):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    after_kernel[grid](
        a, b, s, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), USE_SCALE=bool(apply_scale), BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=8, num_stages=3)
