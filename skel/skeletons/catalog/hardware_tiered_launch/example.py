"""hardware-tiered-launch: one literal matmul config → a config chosen from the GPU's shared memory.

Harness format: docs/harness.md. The before/after launchers are the template shown.

The "before" launches a portable literal config (128x128x32 tiles, 4 warps, 2 stages: 64 KB of
shared memory, fits every NVIDIA GPU including 100 KB consumer parts). The "after" reads the
per-block shared-memory limit and, on a Hopper-class GPU (227 KB), takes deeper K tiles, 8 warps
and 4 stages (128 KB), on an A100-class one (163 KB) 3 stages; elsewhere the portable config.
Same kernel, no warm-up, deterministic. MEASURE is "kernel". On an H200 the measured change is
the Hopper tier against the portable literal; the other tiers are only exercised elsewhere (the
CPU run takes the portable tier).
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=45, K=70),              # no size a multiple of any block
    "square": dict(M=4096, N=4096, K=4096),      # compute-bound: deep pipelines pay
    "mlp": dict(M=8192, N=14336, K=4096),        # an MLP up-projection over 8k tokens
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
    grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
    before_kernel[grid](a, b, c, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=4, num_stages=2)


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
    smem = triton.runtime.driver.active.utils.get_device_properties(a.device.index)["max_shared_mem"] \
        if a.is_cuda else 0
    if smem >= 200_000:    # Hopper / datacenter Blackwell: 227 KB per block
        block_k, warps, stages = 64, 8, 4
    elif smem >= 160_000:  # A100: 163 KB
        block_k, warps, stages = 64, 8, 3
    else:                  # consumer parts (~100 KB), the CPU interpreter
        block_k, warps, stages = 32, 4, 2
    grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
    after_kernel[grid](a, b, c, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=block_k, num_warps=warps,
                       num_stages=stages)
