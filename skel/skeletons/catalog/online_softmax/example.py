"""online-softmax: a two-pass row logsumexp (max pass, then exp-sum pass) → one online pass.

Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=5, N=1000),            # N not a multiple of BLOCK
    "vocab": dict(M=4096, N=128256),      # cross-entropy-like: wide rows, memory-bound
    "wide": dict(M=16384, N=32768),
    "narrow": dict(M=65536, N=4096),
    "huge": dict(M=16500, N=131072),      # past 2**31 elements: row * stride must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("float32", "bfloat16")
TOLERANCES = {"float32": (1e-5, 1e-5), "bfloat16": (1e-4, 1e-5)}  # lse is computed in fp32 either way
BLOCK = 4096


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = (torch.randn(shape["M"], shape["N"], generator=g) * 4).to(dtype).to(device)
    return (x,)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], dtype=torch.float32, device=device),)


def reference(x):
    return (torch.logsumexp(x, dim=1),)


def bytes_moved(shape, dtype):
    return shape["M"] * shape["N"] * torch.tensor([], dtype=dtype).element_size() + shape["M"] * 4


def flops(shape, dtype):
    return 4 * shape["M"] * shape["N"]


@triton.jit
def before_kernel(x_ptr, lse_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * stride
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, tl.max(x, axis=0))
    l = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        l += tl.sum(tl.exp(x - m), axis=0)
    tl.store(lse_ptr + row, m + tl.log(l))


def before(x, lse):
    before_kernel[(x.shape[0],)](x, lse, x.stride(0), x.shape[1], BLOCK=min(BLOCK, triton.next_power_of_2(x.shape[1])))


@triton.jit
def after_kernel(x_ptr, lse_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * stride
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    l = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(lse_ptr + row, m + tl.log(l))


def after(x, lse):
    after_kernel[(x.shape[0],)](x, lse, x.stride(0), x.shape[1], BLOCK=min(BLOCK, triton.next_power_of_2(x.shape[1])))
