"""eviction-hints: a two-pass softmax over wide rows, its first pass marked evict_last (the row is read
again) and its second pass evict_first (the row is done), so the re-read hits L2.

Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=5, N=1000),             # N not a multiple of BLOCK
    "rows64k": dict(M=8192, N=16384),      # 64 KB fp32 rows: the rows in flight about fill L2
    "rows32k": dict(M=4096, N=32768),
    "narrow": dict(M=65536, N=2048),       # does not apply: the rows in flight fit L2 without help
    "huge": dict(M=16500, N=131072),       # past 2**31 elements: row * stride must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("float32", "bfloat16")
TOLERANCES = {"float32": (1e-6, 1e-5), "bfloat16": (1e-3, 1e-2)}
BLOCK = 2048


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = (torch.randn(shape["M"], shape["N"], generator=g) * 4).to(dtype).to(device)
    return (x,)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x):
    return (torch.softmax(x, dim=1),)


def bytes_moved(shape, dtype):
    return 2 * shape["M"] * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 5 * shape["M"] * shape["N"]


@triton.jit
def before_kernel(x_ptr, y_ptr, x_stride, y_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * x_stride
    y_ptr += row * y_stride
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    l = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        tl.store(y_ptr + start + offs, (tl.exp(x - m) / l).to(y_ptr.dtype.element_ty), mask=start + offs < n_cols)


def before(x, y):
    before_kernel[(x.shape[0],)](x, y, x.stride(0), y.stride(0), x.shape[1],
                                 BLOCK=min(BLOCK, triton.next_power_of_2(x.shape[1])), num_warps=8)


@triton.jit
def after_kernel(x_ptr, y_ptr, x_stride, y_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * x_stride
    y_ptr += row * y_stride
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    l = 0.0
    for start in range(0, n_cols, BLOCK):
        # read again by the second pass: keep it in L2
        x = tl.load(x_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf"),
                    eviction_policy="evict_last").to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK):
        # the last read of the row, and an output nobody reads here: let both leave L2 first
        x = tl.load(x_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf"),
                    eviction_policy="evict_first").to(tl.float32)
        tl.store(y_ptr + start + offs, (tl.exp(x - m) / l).to(y_ptr.dtype.element_ty), mask=start + offs < n_cols,
                 eviction_policy="evict_first")


def after(x, y):
    after_kernel[(x.shape[0],)](x, y, x.stride(0), y.stride(0), x.shape[1],
                                BLOCK=min(BLOCK, triton.next_power_of_2(x.shape[1])), num_warps=8)
