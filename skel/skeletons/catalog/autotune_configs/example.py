"""autotune-configs: one hand-picked matmul tile config → `@triton.autotune` over a few configs.

Harness format: docs/harness.md. The before/after launchers are the template shown.

The "before" is the common hand-picked 64x64x32 tile with Triton's default 4 warps / 3 stages
(correct everywhere, fits any GPU's shared memory). The "after" lets the autotuner choose per
(M, N, K) among a handful of configs that includes that one, so it can only tie or win on the
tuned call's shapes. MEASURE is "kernel": the tuned kernel's time against the fixed one's (the
tuning itself is a one-off per key, not timed).
"""

import os
import time

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=45, K=70),              # no size a multiple of any block
    "square": dict(M=4096, N=4096, K=4096),      # compute-bound: large tiles and deep pipelines pay
    "mlp": dict(M=8192, N=14336, K=4096),        # an MLP up-projection over 8k tokens
    "skinny": dict(M=64, N=8192, K=8192),        # decode-like, memory-bound: little for the tuner to win
    "huge": dict(M=65600, N=64, K=32768),        # A past 2**31 elements: row * K must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("float16",)                            # bf16 tl.dot is wrong under the CPU interpreter
TOLERANCES = {"float16": (1e-2, 2e-3)}           # fp32 accumulation, one fp16 rounding of the output


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(shape["M"], shape["K"], generator=g).to(dtype).to(device)
    b = (torch.randn(shape["K"], shape["N"], generator=g) / shape["K"] ** 0.5).to(dtype).to(device)
    return a, b


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a, b):
    return (a @ b,)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return e * (shape["M"] * shape["K"] + shape["K"] * shape["N"] + shape["M"] * shape["N"])


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


def bench(fn, quantiles):
    """The autotuner's timer. On a GPU: triton.testing.do_bench (the default). The CPU
    interpreter has no GPU clock (the default fails with "0 active drivers"): there each config
    runs once, timed by the host clock, so every config is still exercised."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        t0 = time.perf_counter()
        fn()
        return [time.perf_counter() - t0] * len(quantiles)
    return triton.testing.do_bench(fn, quantiles=quantiles)


@triton.jit
def before_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (k + rk[None, :] < K), other=0.0)
        b = tl.load(b_ptrs, mask=(k + rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def before(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    before_kernel[grid](a, b, c, M, N, K, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4, num_stages=3)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128}, num_warps=4, num_stages=4),
    ],
    key=["M", "N", "K"],
    do_bench=bench,  # harness: triton.testing.do_bench on a GPU, one timed run under the interpreter
)
@triton.jit
def after_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (k + rk[None, :] < K), other=0.0)
        b = tl.load(b_ptrs, mask=(k + rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def after(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    after_kernel[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))](a, b, c, M, N, K)
