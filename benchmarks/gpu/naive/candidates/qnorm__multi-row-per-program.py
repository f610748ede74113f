"""Naive short-row kernel: per-head q-norm (RMSNorm over head_dim=128) on 1M rows (tokens x heads), one
program per 128-element row."""
import torch
import triton
import triton.language as tl

KERNEL = "qnorm_kernel"
SIZES = {"rows": 1048576, "cols": 128}
SHAPES = ["rows=1048576", "cols=128", "n_cols=128", "programs=1048576"]
CPU_SIZES = {"rows": 11, "cols": 128}
DTYPE = torch.float16
EPS = 1e-6


# multi-row-per-program applied by hand from the template (`skel skeletons show multi-row-per-program`):
# BLOCK_ROW rows per program with [BLOCK_ROW, BLOCK] tiles, grid cdiv(rows, BLOCK_ROW),
# BLOCK_ROW = max(1, min(64, TILE // BLOCK)) with TILE = 4096 as in the skeleton's example (the template names TILE).
TILE = 4096


@triton.jit
def qnorm_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, eps,
                 BLOCK_ROW: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_ROW + tl.arange(0, BLOCK_ROW)
    cols = tl.arange(0, BLOCK)
    m_r = rows < n_rows
    m_c = cols < n_cols
    mask = m_r[:, None] & m_c[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=m_c, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    y = x * rstd[:, None] * w[None, :]
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(tl.float16), mask=mask)


def launch(x, w):
    rows, cols = x.shape
    y = torch.empty_like(x)
    BLOCK = triton.next_power_of_2(cols)
    BLOCK_ROW = max(1, min(64, TILE // BLOCK))
    qnorm_kernel[(triton.cdiv(rows, BLOCK_ROW),)](x, w, y, rows, cols, x.stride(0), y.stride(0), EPS,
                                                  BLOCK_ROW=BLOCK_ROW, BLOCK=BLOCK)
    return y


def make_inputs(device, sizes=None):
    s = sizes or SIZES
    x = torch.randn((s["rows"], s["cols"]), device=device, dtype=DTYPE)
    w = torch.rand((s["cols"],), device=device, dtype=DTYPE) + 0.5
    return x, w


def reference(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)
