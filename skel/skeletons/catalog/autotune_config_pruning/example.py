"""autotune-config-pruning: a 48-config matmul tuning space → `prune_configs_by` an early prune.

Harness format: docs/harness.md. The before/after launchers are the template shown.

Both sides autotune the same kernel over the full cross product of BLOCK_M x BLOCK_N x
BLOCK_K x num_stages (48 configs). The "after" passes `prune_configs_by` with an
`early_config_prune` that, before anything compiles, drops configs whose row tile is larger
than the problem needs (BLOCK_M above next_power_of_2(M): a decode batch of 16 rows never
needs 128-row tiles) and configs whose pipelined tiles do not fit the device's shared memory.
MEASURE is "first-call": the tuning call's wall time (every kept config is compiled and timed)
and its result. Kernel time after tuning is the same when the pruned configs could not win.
"""

import os
import time

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=45, K=70),              # no size a multiple of any block
    "decode": dict(M=16, N=8192, K=4096),        # a decode step: row tiles above 32 are waste
    "square": dict(M=4096, N=4096, K=4096),      # only shared-memory pruning applies
    "huge": dict(M=65600, N=64, K=32768),        # A past 2**31 elements: row * K must be int64
}
CPU_SHAPES = ("tiny",)
GPU_SHAPES = ("decode", "square")
CHECK_ONLY = ("huge",)
MEASURE = "first-call"
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
    """The autotuner's timer: triton.testing.do_bench on a GPU; under the CPU interpreter (no
    GPU clock) each config runs once, timed by the host clock, so every config still runs."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        t0 = time.perf_counter()
        fn()
        return [time.perf_counter() - t0] * len(quantiles)
    return triton.testing.do_bench(fn, quantiles=quantiles)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, num_warps=4, num_stages=s)
        for bm in [16, 64, 128]
        for bn in [64, 128]
        for bk in [32, 64]
        for s in [2, 3, 4, 5]
    ],
    key=["M", "N", "K"],
    do_bench=bench,
)
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
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def before(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    before_kernel[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))](a, b, c, M, N, K)


def after_shared_memory_limit() -> int:
    """Bytes of shared memory one program may use on the current GPU (sm_86's 99 KB when
    there is no GPU: the interpreter enforces none, and it is the smallest common limit)."""
    if torch.cuda.is_available():
        props = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())
        return props["max_shared_mem"]
    return 101376


def after_prune(configs, named_args, **kwargs):
    """Drop, before compiling anything, row tiles larger than the problem needs and configs
    whose num_stages-deep A and B tiles overflow shared memory; never return an empty list."""
    M = named_args["M"]
    elem = named_args["a_ptr"].element_size()
    smem = after_shared_memory_limit()
    rows = max(16, triton.next_power_of_2(M))
    kept = [c for c in configs
            if c.kwargs["BLOCK_M"] <= rows
            and (c.kwargs["BLOCK_M"] + c.kwargs["BLOCK_N"]) * c.kwargs["BLOCK_K"] * elem * c.num_stages <= smem]
    return kept or [min(configs, key=lambda c: c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] * c.num_stages)]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, num_warps=4, num_stages=s)
        for bm in [16, 64, 128]
        for bn in [64, 128]
        for bk in [32, 64]
        for s in [2, 3, 4, 5]
    ],
    key=["M", "N", "K"],
    prune_configs_by={"early_config_prune": after_prune},
    do_bench=bench,
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
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def after(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    after_kernel[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))](a, b, c, M, N, K)
