"""epilogue-fusion: `y = gelu(x @ w + b)` as a matmul kernel storing the raw accumulator plus
the bias add and the GELU as host passes over y → bias and GELU applied to the fp32
accumulator in registers before the one store.

Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=45, K=70),              # no size a multiple of a block
    "small_k": dict(M=8192, N=8192, K=512),      # output traffic comparable to the GEMM: fusing pays most
    "mlp_up": dict(M=4096, N=14336, K=4096),     # Llama-3-8B MLP up-projection, 4096 tokens
    "big_k": dict(M=4096, N=4096, K=16384),      # compute-bound: the saved passes are a small share
    "huge": dict(M=270000, N=256, K=8192),       # x past 2**31 elements: int64 row offsets
}
CPU_SHAPES = ("tiny",)
GPU_SHAPES = ("small_k", "mlp_up", "big_k")
CHECK_ONLY = ("huge",)
DTYPES = ("float16",)  # bf16 tl.dot is garbage in the CPU interpreter
TOLERANCES = {"float16": (3e-3, 3e-3)}  # the before rounds y to fp16 three times (matmul, + b, gelu)
BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 64


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, N, K = shape["M"], shape["N"], shape["K"]
    x = torch.randn(M, K, generator=g).to(dtype).to(device)
    w = (torch.randn(K, N, generator=g) * K ** -0.5).to(dtype).to(device)
    b = torch.randn(N, generator=g).to(dtype).to(device)
    return x, w, b


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x, w, b):
    return (torch.nn.functional.gelu(x @ w + b, approximate="tanh"),)


def bytes_moved(shape, dtype):
    M, N, K = shape["M"], shape["N"], shape["K"]
    return (M * K + K * N + N + M * N) * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"] + 10 * shape["M"] * shape["N"]


@triton.jit
def before_kernel(
        x_ptr, w_ptr, y_ptr, M, N, K, stride_xm, stride_wk, stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + (rm % M).to(tl.int64)[:, None] * stride_xm + rk[None, :]
    w_ptrs = w_ptr + rk[:, None] * stride_wk + (rn % N)[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=rk[None, :] < K - k0, other=0.0)
        w = tl.load(w_ptrs, mask=rk[:, None] < K - k0, other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * stride_wk
    tl.store(y_ptr + rm.to(tl.int64)[:, None] * stride_ym + rn[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def before(x, w, b, y):
    M, K = x.shape
    N = w.shape[1]
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    before_kernel[grid](
        x, w, y, M, N, K, x.stride(0), w.stride(0), y.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        num_warps=8, num_stages=3)
    y.add_(b)  # host epilogue: two more passes over y
    torch.ops.aten.gelu_(y, approximate="tanh")


@triton.jit
def after_kernel(
        x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, stride_xm, stride_wk, stride_ym, BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + (rm % M).to(tl.int64)[:, None] * stride_xm + rk[None, :]
    w_ptrs = w_ptr + rk[:, None] * stride_wk + (rn % N)[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=rk[None, :] < K - k0, other=0.0)
        w = tl.load(w_ptrs, mask=rk[:, None] < K - k0, other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * stride_wk
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    # GELU, tanh form: 0.5 * a * (1 + tanh(u)) == a * sigmoid(2 * u), u = sqrt(2 / pi) * (a + 0.044715 * a**3)
    acc = acc * tl.sigmoid(1.5957691216057308 * (acc + 0.044715 * acc * acc * acc))
    tl.store(y_ptr + rm.to(tl.int64)[:, None] * stride_ym + rn[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def after(x, w, b, y):
    M, K = x.shape
    N = w.shape[1]
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    after_kernel[grid](
        x, w, b, y, M, N, K, x.stride(0), w.stride(0), y.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        num_warps=8, num_stages=3)
