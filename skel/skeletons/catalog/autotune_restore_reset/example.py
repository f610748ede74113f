"""autotune-restore-reset: an autotuned kernel that accumulates with atomics → `reset_to_zero=`.

Harness format: docs/harness.md. The before/after launchers are the template shown.

A bias gradient (column sums of dy over the tokens), split over row blocks that `atomic_add`
their partial sums into `db`; the launcher zeroes `db` first. On the tuning call the autotuner
runs the kernel many times per config, and without `reset_to_zero=["db_ptr"]` every trial adds
into the same `db`: the first call returns the sum times the number of trials plus one. Later
calls (config cached) are right, which is why this bug survives tests that warm up first.
MEASURE is "first-call": the tuning call's result (wrong before, right after) and its time.

On the CPU the interpreter has no GPU clock, so `bench` below does not run trials there (every
config scores the same and the first is kept): both sides are then right on the CPU, which checks
the kernel and the launch, not the trials. The corruption shows on a GPU's first call.
"""

import os

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=301, N=45),               # neither a multiple of any block
    "tokens": dict(M=65536, N=4096),         # dbias over 64k tokens of a 4096-wide layer
    "mlp": dict(M=16384, N=14336),
    "huge": dict(M=524_300, N=4096),         # past 2**31 elements: row * N must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
MEASURE = "first-call"
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-3, 1e-4), "float32": (1e-3, 1e-4)}  # fp32 sums in a nondeterministic order


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(shape["M"], shape["N"], generator=g).to(dtype).to(device),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["N"], dtype=torch.float32, device=device),)


def reference(dy):
    return (dy.sum(0),)


def bytes_moved(shape, dtype):
    return shape["M"] * shape["N"] * torch.tensor([], dtype=dtype).element_size() + 4 * shape["N"]


def flops(shape, dtype):
    return shape["M"] * shape["N"]


def bench(fn, quantiles):
    """The autotuner's timer: triton.testing.do_bench on a GPU (the default). Under the CPU
    interpreter (no GPU clock; the default fails with "0 active drivers") no trial runs."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return [0.0] * len(quantiles)
    return triton.testing.do_bench(fn, quantiles=quantiles)


@triton.autotune(
    configs=[triton.Config({"ROWS": r, "BLOCK_N": bn}, num_warps=4) for r in (256, 1024) for bn in (64, 128)],
    key=["M", "N"],
    do_bench=bench,  # harness: triton.testing.do_bench on a GPU, one timed run under the interpreter
)
@triton.jit
def before_kernel(dy_ptr, db_ptr, M, N, ROWS: tl.constexpr, BLOCK_N: tl.constexpr, CHUNK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, CHUNK)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((CHUNK, BLOCK_N), dtype=tl.float32)
    for r in range(0, ROWS, CHUNK):
        mask = (rows[:, None] + r < M) & (cols[None, :] < N)
        acc += tl.load(dy_ptr + (rows[:, None] + r) * N + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.atomic_add(db_ptr + cols, tl.sum(acc, 0), mask=cols < N)


def before(dy, db):
    M, N = dy.shape
    db.zero_()
    before_kernel[lambda meta: (triton.cdiv(M, meta["ROWS"]), triton.cdiv(N, meta["BLOCK_N"]))](
        dy, db, M, N, CHUNK=32)


@triton.autotune(
    configs=[triton.Config({"ROWS": r, "BLOCK_N": bn}, num_warps=4) for r in (256, 1024) for bn in (64, 128)],
    key=["M", "N"],
    reset_to_zero=["db_ptr"],
    do_bench=bench,  # harness: triton.testing.do_bench on a GPU, one timed run under the interpreter
)
@triton.jit
def after_kernel(dy_ptr, db_ptr, M, N, ROWS: tl.constexpr, BLOCK_N: tl.constexpr, CHUNK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, CHUNK)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((CHUNK, BLOCK_N), dtype=tl.float32)
    for r in range(0, ROWS, CHUNK):
        mask = (rows[:, None] + r < M) & (cols[None, :] < N)
        acc += tl.load(dy_ptr + (rows[:, None] + r) * N + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.atomic_add(db_ptr + cols, tl.sum(acc, 0), mask=cols < N)


def after(dy, db):
    M, N = dy.shape
    db.zero_()
    after_kernel[lambda meta: (triton.cdiv(M, meta["ROWS"]), triton.cdiv(N, meta["BLOCK_N"]))](
        dy, db, M, N, CHUNK=32)
