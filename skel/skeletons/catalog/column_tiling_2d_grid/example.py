"""column-tiling-2d-grid: SwiGLU backward over wide MLP rows. One program per row holding
the whole row in one `next_power_of_2(n_cols)` block → fixed 1,024-column tiles on a second
grid axis (`grid = (n_rows, cdiv(n_cols, BLOCK))`).

a, b, dc are [M, N] (gate, up and the output gradient); with s = sigmoid(a):
db = dc * a * s,  da = dc * b * s * (1 + a * (1 - s)).
Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=5, N=3000),                 # wider than one tile, not a multiple of it
    "llama8b": dict(M=8192, N=14336),          # Llama-3-8B MLP: a 16,384-element block per row before
    "llama70b": dict(M=4096, N=28672),         # a 32,768-element block per row before
    "decode": dict(M=16, N=28672),             # few rows: 16 programs before, 448 after
    "huge": dict(M=150_000, N=14336),          # past 2**31 elements: row offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("bfloat16",)                          # fp32 at the CHECK_ONLY shape would not fit next to its float64 copies
TOLERANCES = {"bfloat16": (2e-2, 2e-2)}
TILE = 1024


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, N = shape["M"], shape["N"]
    return tuple(torch.randn(M, N, generator=g, device=device, dtype=torch.float32).to(dtype) for _ in range(3))


def make_outputs(shape, dtype, device):
    return tuple(torch.empty(shape["M"], shape["N"], dtype=dtype, device=device) for _ in range(2))


def reference(dc, a, b):
    da, db = torch.empty_like(a), torch.empty_like(a)
    for r in range(0, a.shape[0], 1 << 14):  # row chunks: the CHECK_ONLY shape's float64 temporaries stay small
        dcc, ac, bc = dc[r:r + (1 << 14)], a[r:r + (1 << 14)], b[r:r + (1 << 14)]
        s = torch.sigmoid(ac)
        da[r:r + (1 << 14)] = dcc * bc * s * (1 + ac * (1 - s))
        db[r:r + (1 << 14)] = dcc * ac * s
    return da, db


def bytes_moved(shape, dtype):
    return 5 * shape["M"] * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 10 * shape["M"] * shape["N"]


def _warps_for(block):
    # Liger's calculate_settings: more warps for wider whole-row blocks
    return 32 if block >= 32768 else 16 if block >= 8192 else 8 if block >= 2048 else 4


@triton.jit
def before_kernel(dc_ptr, a_ptr, b_ptr, da_ptr, db_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)                       # the whole row in one block
    mask = cols < n_cols
    dc = tl.load(dc_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    a = tl.load(a_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    s = tl.sigmoid(a)
    tl.store(db_ptr + row * stride + cols, (dc * a * s).to(db_ptr.dtype.element_ty), mask=mask)
    tl.store(da_ptr + row * stride + cols, (dc * b * s * (1 + a * (1 - s))).to(da_ptr.dtype.element_ty), mask=mask)


def before(dc, a, b, da, db):
    M, N = a.shape
    BLOCK = triton.next_power_of_2(N)
    before_kernel[(M,)](dc, a, b, da, db, a.stride(0), N, BLOCK=BLOCK, num_warps=_warps_for(BLOCK))


@triton.jit
def after_kernel(dc_ptr, a_ptr, b_ptr, da_ptr, db_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)              # rows on axis 0 (up to 2**31 - 1 programs)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)  # a fixed column tile on axis 1
    mask = cols < n_cols
    dc = tl.load(dc_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    a = tl.load(a_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    s = tl.sigmoid(a)
    tl.store(db_ptr + row * stride + cols, (dc * a * s).to(db_ptr.dtype.element_ty), mask=mask)
    tl.store(da_ptr + row * stride + cols, (dc * b * s * (1 + a * (1 - s))).to(da_ptr.dtype.element_ty), mask=mask)


def after(dc, a, b, da, db):
    M, N = a.shape
    after_kernel[(M, triton.cdiv(N, TILE))](dc, a, b, da, db, a.stride(0), N, BLOCK=TILE, num_warps=4)
