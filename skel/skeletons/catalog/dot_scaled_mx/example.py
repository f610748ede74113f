"""dot-scaled-mx: mxfp8 operands dequantised by hand (exp2(s - 127), bf16 tl.dot) → tl.dot_scaled.

Harness format: docs/harness.md. The before/after launchers are the template shown.
C = (A * 2^(a_s - 127)) @ (W * 2^(w_s - 127))^T with A (M, K) and W (N, K) in fp8 e4m3 and
one e8m0 scale (uint8) per 32 values along K: the MX (mxfp8) format. The before decodes
the scales, multiplies them into the tiles and runs a bf16 tl.dot (exact: an e4m3 value
times a power of two fits bf16). The after passes the raw tiles and scales to
tl.dot_scaled, which Blackwell (sm_100) runs as a block-scaled fp8 MMA. On Hopper (the
H200) Triton emulates tl.dot_scaled by the same upcast, so expect no gain there: a speedup
needs sm_100+.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=100, K=128),          # scales: 4 groups of 32 along K
    "square": dict(M=4096, N=4096, K=4096),
    "mlp": dict(M=8192, N=14336, K=4096),
    "decode": dict(M=32, N=8192, K=8192),
    "huge": dict(M=300000, N=128, K=8192),     # A past 2**31 elements: row * K must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("K",)  # a multiple of the 32-value MX group and of BLOCK_K
CPU_SKIP = ("the interpreter has no tl.dot_scaled: InterpreterError: AttributeError(\"'InterpreterBuilder' object "
            "has no attribute 'create_dot_scaled'\") (triton 3.7.1, TRITON_INTERPRET=1)")
DTYPES = ("bfloat16",)  # the output dtype (the operands are fp8 + e8m0)
TOLERANCES = {"bfloat16": (1e-2, 8e-3)}  # exact products in both, one bf16 rounding of C
MX_GROUP = 32


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, N, K = shape["M"], shape["N"], shape["K"]
    a = (torch.randn(M, K, generator=g, device=device) * 4).to(torch.float8_e4m3fn)
    w = (torch.randn(N, K, generator=g, device=device) * 4).to(torch.float8_e4m3fn)
    a_s = torch.randint(118, 124, (M, K // MX_GROUP), generator=g, device=device).to(torch.uint8)
    w_s = torch.randint(118, 124, (N, K // MX_GROUP), generator=g, device=device).to(torch.uint8)
    return a, a_s, w, w_s


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a, a_s, w, w_s):
    sa = torch.exp2(a_s.double() - 127).repeat_interleave(MX_GROUP, 1)
    sw = torch.exp2(w_s.double() - 127).repeat_interleave(MX_GROUP, 1)
    return ((a.double() * sa) @ (w.double() * sw).T,)


def bytes_moved(shape, dtype):
    M, N, K = shape["M"], shape["N"], shape["K"]
    return M * K + N * K + (M + N) * K // MX_GROUP + M * N * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


@triton.jit
def before_kernel(a_ptr, as_ptr, w_ptr, ws_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_m = rm < M
    m_n = rn < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm.to(tl.int64)[:, None] * K + (k0 + rk)[None, :], mask=m_m[:, None], other=0.0)
        w = tl.load(w_ptr + rn.to(tl.int64)[None, :] * K + (k0 + rk)[:, None], mask=m_n[None, :], other=0.0)
        a_e = tl.load(as_ptr + rm[:, None] * (K // GROUP) + (k0 + rk)[None, :] // GROUP, mask=m_m[:, None], other=127)
        w_e = tl.load(ws_ptr + rn[None, :] * (K // GROUP) + (k0 + rk)[:, None] // GROUP, mask=m_n[None, :], other=127)
        a_scale = tl.exp2(a_e.to(tl.float32) - 127.0)  # e8m0 decoded by hand, per element
        w_scale = tl.exp2(w_e.to(tl.float32) - 127.0)
        acc = tl.dot((a.to(tl.float32) * a_scale).to(tl.bfloat16), (w.to(tl.float32) * w_scale).to(tl.bfloat16), acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=m_m[:, None] & m_n[None, :])


def before(a, a_s, w, w_s, c):
    M, K = a.shape
    N = w.shape[0]
    before_kernel[(triton.cdiv(M, 128), triton.cdiv(N, 128))](a, a_s, w, w_s, c, M, N, K, BLOCK_M=128, BLOCK_N=128,
                                                             BLOCK_K=128, GROUP=MX_GROUP)


@triton.jit
def after_kernel(a_ptr, as_ptr, w_ptr, ws_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr, GROUP: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rg = tl.arange(0, BLOCK_K // GROUP)
    m_m = rm < M
    m_n = rn < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm.to(tl.int64)[:, None] * K + (k0 + rk)[None, :], mask=m_m[:, None], other=0.0)
        w = tl.load(w_ptr + rn.to(tl.int64)[None, :] * K + (k0 + rk)[:, None], mask=m_n[None, :], other=0.0)
        a_e = tl.load(as_ptr + rm[:, None] * (K // GROUP) + k0 // GROUP + rg[None, :], mask=m_m[:, None], other=127)
        w_e = tl.load(ws_ptr + rn[:, None] * (K // GROUP) + k0 // GROUP + rg[None, :], mask=m_n[:, None], other=127)
        acc = tl.dot_scaled(a, a_e, "e4m3", w, w_e, "e4m3", acc)  # [BM, BK//32] and [BN, BK//32] uint8 scales
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=m_m[:, None] & m_n[None, :])


def after(a, a_s, w, w_s, c):
    M, K = a.shape
    N = w.shape[0]
    after_kernel[(triton.cdiv(M, 128), triton.cdiv(N, 128))](a, a_s, w, w_s, c, M, N, K, BLOCK_M=128, BLOCK_N=128,
                                                            BLOCK_K=128, GROUP=MX_GROUP)
