"""autotune-key-bucketing: autotune keyed on the raw length T → keyed on next_power_of_2(T).

Harness format: docs/harness.md. The before/after launchers are the template shown.

A decode-style score kernel (one query row per head against T cached keys) called with a new
cache length every time. With `key=["T", ...]` every new T re-runs the whole search (each config
benchmarked); with `key=["T_BUCKET", ...]` the search runs once per power-of-two bucket and
the lengths inside a bucket reuse its config. The kernel is unchanged, so the kernel time is
not the point: MEASURE is "compile", the wall time (and compile count) over SEQUENCE, lengths
as a server would see them, six lengths in two buckets.
"""

import os
import time

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(H=3, T=37, D=16),           # T not a multiple of any BLOCK_N
    "t1500": dict(H=32, T=1500, D=128),
    "t1733": dict(H=32, T=1733, D=128),
    "t1901": dict(H=32, T=1901, D=128),
    "t2047": dict(H=32, T=2047, D=128),
    "t3001": dict(H=32, T=3001, D=128),
    "t3517": dict(H=32, T=3517, D=128),
    "huge": dict(H=4, T=16_777_300, D=128),  # keys past 2**31 elements: n * D must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
GPU_SHAPES = ("t1500", "t1733", "t1901", "t2047", "t3001", "t3517")
MEASURE = "compile"
SEQUENCE = GPU_SHAPES                       # each a new T: before re-tunes 6 times, after twice
FIXED = ("D",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-4, 1e-5), "float32": (1e-4, 1e-5)}  # fp32 dot of D products either way


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(shape["H"], shape["D"], generator=g).to(dtype).to(device)
    k = torch.randn(shape["T"], shape["D"], generator=g).to(dtype).to(device)
    return q, k


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["H"], shape["T"], dtype=torch.float32, device=device),)


def reference(q, k):
    return (q @ k.T,)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return e * (shape["H"] + shape["T"]) * shape["D"] + 4 * shape["H"] * shape["T"]


def flops(shape, dtype):
    return 2 * shape["H"] * shape["T"] * shape["D"]


def bench(fn, quantiles):
    """The autotuner's timer. On a GPU: triton.testing.do_bench (the default). The CPU
    interpreter has no GPU clock (the default fails with "0 active drivers"): there each config
    runs once, timed by the host clock, so every config is still exercised."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        t0 = time.perf_counter()
        fn()
        return [time.perf_counter() - t0] * len(quantiles)
    return triton.testing.do_bench(fn, quantiles=quantiles)


@triton.autotune(
    configs=[triton.Config({"BLOCK_N": bn}, num_warps=w) for bn, w in ((32, 4), (64, 4), (128, 4), (128, 8))],
    key=["T", "D"],
    do_bench=bench,  # harness: triton.testing.do_bench on a GPU, one timed run under the interpreter
)
@triton.jit
def before_kernel(q_ptr, k_ptr, s_ptr, T, D: tl.constexpr, BLOCK_N: tl.constexpr):
    i = tl.program_id(1)
    n = (tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + i * D + d).to(tl.float32)
    kt = tl.load(k_ptr + n[:, None] * D + d[None, :], mask=n[:, None] < T, other=0.0).to(tl.float32)
    tl.store(s_ptr + i * T + n, tl.sum(kt * q[None, :], 1), mask=n < T)


def before(q, k, s):
    (H, D), T = q.shape, k.shape[0]
    before_kernel[lambda meta: (triton.cdiv(T, meta["BLOCK_N"]), H)](q, k, s, T, D=D)


@triton.autotune(
    configs=[triton.Config({"BLOCK_N": bn}, num_warps=w) for bn, w in ((32, 4), (64, 4), (128, 4), (128, 8))],
    key=["T_BUCKET", "D"],
    do_bench=bench,  # harness: triton.testing.do_bench on a GPU, one timed run under the interpreter
)
@triton.jit
def after_kernel(q_ptr, k_ptr, s_ptr, T, T_BUCKET, D: tl.constexpr, BLOCK_N: tl.constexpr):
    i = tl.program_id(1)
    n = (tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + i * D + d).to(tl.float32)
    kt = tl.load(k_ptr + n[:, None] * D + d[None, :], mask=n[:, None] < T, other=0.0).to(tl.float32)
    tl.store(s_ptr + i * T + n, tl.sum(kt * q[None, :], 1), mask=n < T)


def after(q, k, s):
    (H, D), T = q.shape, k.shape[0]
    after_kernel[lambda meta: (triton.cdiv(T, meta["BLOCK_N"]), H)](q, k, s, T, triton.next_power_of_2(T), D=D)
