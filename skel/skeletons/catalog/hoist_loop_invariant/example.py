"""hoist-loop-invariant: selective scan (Mamba-style) with `A = -exp(A_log)` reloaded every step → hoisted.

h_t = exp(dt_t * A) * h_{t-1} + (dt_t * x_t) B_t,   y_t = h_t . C_t,   A = -exp(A_log) of shape [D, N].
The loop stores y every step, so Triton's LICM does not hoist the invariant load (nor the
exp on it): the "before" pays one extra [BD, N] load and exp per step, as many exps as the
recurrence itself.
Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import math

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=2, T=20, D=50, N=16),             # D not a multiple of BD
    "mamba_1b4": dict(B=8, T=2048, D=4096, N=16),    # d_inner 4096, state size 16
    "mamba_130m": dict(B=16, T=1024, D=1536, N=16),
    "huge": dict(B=64, T=8192, D=4100, N=16),        # past 2**31 elements: (b*T + t) * D must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("N",)
LENGTH = "T"
DTYPES = ("float32", "bfloat16")  # x, dt, B, C and y; A_log is an fp32 parameter either way
TOLERANCES = {"float32": (2e-5, 1e-4), "bfloat16": (1e-2, 1e-2)}
BD = 32


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    B, T, D, N = shape["B"], shape["T"], shape["D"], shape["N"]
    x = torch.randn(B, T, D, generator=g).to(dtype).to(device)
    dt = torch.exp(torch.rand(B, T, D, generator=g) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
    A_log = torch.log(torch.arange(1, N + 1, dtype=torch.float32)).repeat(D, 1)  # Mamba's S4D-real init
    Bm = torch.randn(B, T, N, generator=g).to(dtype).to(device)
    Cm = torch.randn(B, T, N, generator=g).to(dtype).to(device)
    return x, dt.to(dtype).to(device), A_log.to(device), Bm, Cm


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["T"], shape["D"], dtype=dtype, device=device),)


def reference(x, dt, A_log, Bm, Cm):
    A = -torch.exp(A_log)
    h = torch.zeros(x.shape[0], x.shape[2], A.shape[1], dtype=x.dtype, device=x.device)
    y = torch.empty_like(x)
    for t in range(x.shape[1]):
        h = torch.exp(dt[:, t, :, None] * A) * h + (dt[:, t] * x[:, t])[:, :, None] * Bm[:, t, None, :]
        y[:, t] = (h * Cm[:, t, None, :]).sum(-1)
    return (y,)


def bytes_moved(shape, dtype):
    B, T, D, N = shape["B"], shape["T"], shape["D"], shape["N"]
    return (3 * B * T * D + 2 * B * T * N) * torch.tensor([], dtype=dtype).element_size() + 4 * D * N


def flops(shape, dtype):
    return 7 * shape["B"] * shape["T"] * shape["D"] * shape["N"]


@triton.jit
def before_kernel(x_ptr, dt_ptr, A_log_ptr, B_ptr, C_ptr, y_ptr, T, D, N: tl.constexpr, BD: tl.constexpr):
    i_d, i_b = tl.program_id(0), tl.program_id(1)
    o_d = i_d * BD + tl.arange(0, BD)
    o_n = tl.arange(0, N)
    m_d = o_d < D
    base = i_b.to(tl.int64) * T
    b_h = tl.zeros([BD, N], dtype=tl.float32)
    for t in range(0, T):
        b_A = -tl.exp(tl.load(A_log_ptr + o_d[:, None] * N + o_n[None, :], mask=m_d[:, None], other=0.0))
        b_x = tl.load(x_ptr + (base + t) * D + o_d, mask=m_d, other=0.0).to(tl.float32)
        b_dt = tl.load(dt_ptr + (base + t) * D + o_d, mask=m_d, other=0.0).to(tl.float32)
        b_B = tl.load(B_ptr + (base + t) * N + o_n).to(tl.float32)
        b_C = tl.load(C_ptr + (base + t) * N + o_n).to(tl.float32)
        b_h = tl.exp(b_dt[:, None] * b_A) * b_h + (b_dt * b_x)[:, None] * b_B[None, :]
        b_y = tl.sum(b_h * b_C[None, :], axis=1)
        tl.store(y_ptr + (base + t) * D + o_d, b_y.to(y_ptr.dtype.element_ty), mask=m_d)


def before(x, dt, A_log, Bm, Cm, y):
    B, T, D = x.shape
    before_kernel[(triton.cdiv(D, BD), B)](x, dt, A_log, Bm, Cm, y, T, D, N=A_log.shape[1], BD=BD)


@triton.jit
def after_kernel(x_ptr, dt_ptr, A_log_ptr, B_ptr, C_ptr, y_ptr, T, D, N: tl.constexpr, BD: tl.constexpr):
    i_d, i_b = tl.program_id(0), tl.program_id(1)
    o_d = i_d * BD + tl.arange(0, BD)
    o_n = tl.arange(0, N)
    m_d = o_d < D
    base = i_b.to(tl.int64) * T
    b_h = tl.zeros([BD, N], dtype=tl.float32)
    b_A = -tl.exp(tl.load(A_log_ptr + o_d[:, None] * N + o_n[None, :], mask=m_d[:, None], other=0.0))
    for t in range(0, T):
        b_x = tl.load(x_ptr + (base + t) * D + o_d, mask=m_d, other=0.0).to(tl.float32)
        b_dt = tl.load(dt_ptr + (base + t) * D + o_d, mask=m_d, other=0.0).to(tl.float32)
        b_B = tl.load(B_ptr + (base + t) * N + o_n).to(tl.float32)
        b_C = tl.load(C_ptr + (base + t) * N + o_n).to(tl.float32)
        b_h = tl.exp(b_dt[:, None] * b_A) * b_h + (b_dt * b_x)[:, None] * b_B[None, :]
        b_y = tl.sum(b_h * b_C[None, :], axis=1)
        tl.store(y_ptr + (base + t) * D + o_d, b_y.to(y_ptr.dtype.element_ty), mask=m_d)


def after(x, dt, A_log, Bm, Cm, y):
    B, T, D = x.shape
    after_kernel[(triton.cdiv(D, BD), B)](x, dt, A_log, Bm, Cm, y, T, D, N=A_log.shape[1], BD=BD)
