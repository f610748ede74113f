"""fused-dequant-gemm: unpack int4 weights to an fp16 copy, then torch.mm → one GEMM that unpacks in its K loop.

Harness format: docs/harness.md. The before/after launchers are the template shown.
A weight-only int4 linear layer `y = x @ W`, x `[M, K]` in fp16, W `[K, N]` stored GPTQ-style:
eight 4-bit values of consecutive k an int32 (`qweight [K // 8, N]`), one scale per 128-row
group and column (`scales [K // 128, N]`), W = (q - 8) * scale. The before runs a Triton
kernel that unpacks the whole of W into an fp16 copy and then `torch.mm` (cuBLAS) on it:
per weight 0.5 byte read, 2 written, 2 read again. The after is one Triton GEMM that loads
the packed tile in the K loop and unpacks it in registers before `tl.dot`: 0.5 byte a
weight. On a GPU the after should win several times at decode sizes ("decode16",
"batch64": the layer is a stream over its 117 MB fp16 / 29 MB packed weights) and lose at
"prefill4096", where the GEMM is compute-bound and cuBLAS on a dequantised copy is the
better design (the payoff says so). The scales are powers of two, so every dequantised
weight is exact in fp16: both sides differ from the float64 reference only by
their fp32 accumulation and the output's rounding.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=5, N=80, K=256),              # on the CPU: M and N no block multiple
    "decode16": dict(M=16, N=14336, K=4096),     # a Llama-3-8B MLP up projection, 16 decoding tokens
    "batch64": dict(M=64, N=14336, K=4096),
    "prefill4096": dict(M=4096, N=14336, K=4096),  # compute-bound: does not pay (the payoff says so)
}
CPU_SHAPES = ("tiny",)
FIXED = ("K",)  # a multiple of the 128-row scale group
DTYPES = ("float16",)  # GPTQ/AWQ kernels take fp16 activations (lmdeploy casts x to half first)
TOLERANCES = {"float16": (1e-2, 1e-2)}  # fp32 accumulation, the output's rounding
GROUP = 128


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    M, N, K = shape["M"], shape["N"], shape["K"]
    x = torch.randn(M, K, generator=g).to(dtype)
    q = torch.randint(0, 16, (K, N), generator=g, dtype=torch.int64)
    packed = (q.view(K // 8, 8, N) << (4 * torch.arange(8)).view(1, 8, 1)).sum(1)
    qweight = torch.where(packed >= 2**31, packed - 2**32, packed).to(torch.int32)  # the int32 bit pattern
    scales = torch.exp2(-torch.randint(5, 9, (K // GROUP, N), generator=g).float()).to(dtype)
    return x.to(device), qweight.to(device), scales.to(device)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x, qweight, scales):
    K = qweight.shape[0] * 8
    q = (qweight.to(torch.int64)[:, None, :] >> (4 * torch.arange(8, device=qweight.device)).view(1, 8, 1)) & 0xF
    w = (q.reshape(K, -1).to(x.dtype) - 8) * scales.repeat_interleave(GROUP, 0)
    return (x @ w,)


def bytes_moved(shape, dtype):
    M, N, K = shape["M"], shape["N"], shape["K"]
    es = torch.tensor([], dtype=dtype).element_size()
    # the least traffic: the packed weights, the scales, x and y once each
    return K * N // 2 + (K // GROUP) * N * es + M * K * es + M * N * es


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


@triton.jit
def before_dequant_kernel(qw_ptr, s_ptr, w_ptr, N, GROUP: tl.constexpr, BLOCK_K: tl.constexpr,
                          BLOCK_N: tl.constexpr):
    # pass 1: unpack the whole weight into a wide copy
    pid_k, pid_n = tl.program_id(0), tl.program_id(1)
    rk = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = rn[None, :] < N
    qw = tl.load(qw_ptr + (rk[:, None] // 8) * N + rn[None, :], mask=mask, other=0)
    w = (qw >> ((rk[:, None] % 8) * 4)) & 0xF
    s = tl.load(s_ptr + (rk[:, None] // GROUP) * N + rn[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(w_ptr + rk[:, None].to(tl.int64) * N + rn[None, :], ((w - 8).to(tl.float32) * s).to(w_ptr.dtype.element_ty),
             mask=mask)


def before(x, qweight, scales, y):
    K, N = qweight.shape[0] * 8, qweight.shape[1]
    w = torch.empty(K, N, dtype=x.dtype, device=x.device)
    before_dequant_kernel[(K // 64, triton.cdiv(N, 128))](qweight, scales, w, N, GROUP=GROUP, BLOCK_K=64,
                                                           BLOCK_N=128)
    torch.mm(x, w, out=y)  # pass 2: the matmul reads the copy back


@triton.jit
def after_kernel(x_ptr, qw_ptr, s_ptr, y_ptr, M, N, K, GROUP: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # one pass: the packed tile loaded in the K loop and unpacked in registers before tl.dot
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=rm[:, None] < M, other=0.0)
        qw = tl.load(qw_ptr + (rk[:, None] // 8) * N + rn[None, :], mask=rn[None, :] < N, other=0)
        w = (qw >> ((rk[:, None] % 8) * 4)) & 0xF
        s = tl.load(s_ptr + (k0 // GROUP) * N + rn, mask=rn < N, other=0.0).to(tl.float32)
        b = ((w - 8).to(tl.float32) * s[None, :]).to(x_ptr.dtype.element_ty)
        acc = tl.dot(a, b, acc)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def after(x, qweight, scales, y):
    M, K = x.shape
    N = qweight.shape[1]
    block_m = max(16, min(64, triton.next_power_of_2(M)))
    block_n = 64 if M <= 64 else 128
    after_kernel[(triton.cdiv(M, block_m), triton.cdiv(N, block_n))](
        x, qweight, scales, y, M, N, K, GROUP=GROUP, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=128,
        num_warps=4, num_stages=3)
