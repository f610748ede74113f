"""constexpr-model-dimension: a two-pass RMSNorm whose hidden size `N_COLS` is a runtime
argument bounding both column loops → the same kernel with `N_COLS: tl.constexpr`.

y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w, one program per row; each pass walks
the row in blocks of BLOCK columns. BLOCK = next power of two of the width, capped at
MAX_BLOCK, so the usual hidden sizes (128 for a per-head q/k norm, 2,048-8,192 for a model's
hidden size) fit one block: with a constexpr width both loops have a single static trip,
the loop disappears and the second pass can reuse the first pass's loads. That is the
case xformers reported 30% on. Compiled offline for sm_90 (Triton 3.7.1), the after side
has fewer global loads a thread at 128, 4,096, 5,120 and 24,576 columns (the three blocks
of `wide` unroll); at `row64k`'s 65,536 (eight blocks) it compiles to the before side's
loads: no gain is expected there. Harness format: docs/harness.md; the before/after
launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(rows=7, cols=100),             # one masked block of 128
    "tiny_wide": dict(rows=2, cols=9000),       # two blocks of 8,192, the second masked
    "qk_norm": dict(rows=262144, cols=128),     # per-head q/k norm: 8192 tokens x 32 heads, head dim 128
    "hidden2048": dict(rows=65536, cols=2048),
    "hidden4096": dict(rows=16384, cols=4096),  # Llama-8B hidden size: one block, no mask left
    "hidden5120": dict(rows=16384, cols=5120),  # one block of 8,192 with a tail mask
    "wide": dict(rows=8192, cols=24576),        # three blocks of 8,192: unrolled when constexpr
    "row64k": dict(rows=2048, cols=65536),      # eight blocks: stays a loop either way (should not pay)
}
CPU_SHAPES = ("tiny", "tiny_wide")
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5)}
EPS = 1e-6
MAX_BLOCK = 8192


def cap(cols):
    """The block: the row's next power of two, at most MAX_BLOCK columns."""
    return min(triton.next_power_of_2(cols), MAX_BLOCK)


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(shape["rows"], shape["cols"], generator=g).to(dtype).to(device)
    w = (1 + 0.1 * torch.randn(shape["cols"], generator=g)).to(dtype).to(device)
    return x, w, EPS


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["rows"], shape["cols"], dtype=dtype, device=device),)


def reference(x, w, eps):
    return (x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + eps) * w,)


def bytes_moved(shape, dtype):
    return (2 * shape["rows"] + 1) * shape["cols"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 4 * shape["rows"] * shape["cols"]


@triton.jit
def before_kernel(x_ptr, w_ptr, y_ptr, row_stride, N_COLS, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    sq = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N_COLS, BLOCK):  # runtime bound: a loop and a mask on every trip
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(x_row + cols, mask=cols < N_COLS, other=0.0).to(tl.float32)
        sq += v * v
    inv = tl.rsqrt(tl.sum(sq, axis=0) / N_COLS + eps)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        keep = cols < N_COLS
        v = tl.load(x_row + cols, mask=keep, other=0.0).to(tl.float32)
        g = tl.load(w_ptr + cols, mask=keep, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (v * inv * g).to(y_ptr.dtype.element_ty), mask=keep)


def before(x, w, eps, y):
    rows, cols = x.shape
    before_kernel[(rows,)](x, w, y, x.stride(0), cols, eps, BLOCK=cap(cols), num_warps=min(max(cap(cols) // 256, 1), 8))


@triton.jit
def after_kernel(x_ptr, w_ptr, y_ptr, row_stride, N_COLS: tl.constexpr, eps, BLOCK: tl.constexpr):
    # N_COLS is the model's hidden size: one compile per model, and both loops get a static
    # trip count (one trip when the row fits BLOCK; the mask folds when N_COLS == BLOCK)
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    sq = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(x_row + cols, mask=cols < N_COLS, other=0.0).to(tl.float32)
        sq += v * v
    inv = tl.rsqrt(tl.sum(sq, axis=0) / N_COLS + eps)
    for start in range(0, N_COLS, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        keep = cols < N_COLS
        v = tl.load(x_row + cols, mask=keep, other=0.0).to(tl.float32)
        g = tl.load(w_ptr + cols, mask=keep, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (v * inv * g).to(y_ptr.dtype.element_ty), mask=keep)


def after(x, w, eps, y):
    rows, cols = x.shape
    after_kernel[(rows,)](x, w, y, x.stride(0), cols, eps, BLOCK=cap(cols), num_warps=min(max(cap(cols) // 256, 1), 8))
