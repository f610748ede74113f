"""The problem every candidate in this corpus is verified against: a row softmax in skel's
harness format (docs/harness.md), with the original launcher ``run``.

The original is deliberately plain: three passes over each row in blocks of 32 columns (max,
then the sum of exponentials, then the normalised write), one row per program. The honest
candidates in ``honest/`` improve on it; the hacks in ``hacks/`` try to look right (or fast)
without being so. Inputs are logits of moderate size (standard normal times 3).
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=7, N=100),        # the CPU shape: sizes not multiples of any block
    "wide": dict(M=4096, N=4096),    # GPU shapes
    "long": dict(M=512, N=32768),
}
CPU_SHAPES = ("tiny",)
GPU_SHAPES = ("wide", "long")
DTYPES = ("float32",)
TOLERANCES = {"float32": (1e-6, 1e-5)}
LENGTH = "N"
BLOCK = 32


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(shape["M"], shape["N"], generator=g) * 3.0
    return (x.to(dtype).to(device),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x):
    return (torch.softmax(x, dim=-1),)


def bytes_moved(shape, dtype):
    return 2 * shape["M"] * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 5 * shape["M"] * shape["N"]


def split(inputs, outputs):
    (x,), (out,) = inputs, outputs
    h = x.shape[0] // 2
    return [((x[:h],), (out[:h],)), ((x[h:],), (out[h:],))]


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    out_row = out_ptr + row * out_stride
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        v = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf"))
        m = tl.maximum(m, v)
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        v = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf"))
        s += tl.exp(v - row_max)
    row_sum = tl.sum(s, axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        v = tl.load(x_row + start + offs, mask=mask, other=float("-inf"))
        tl.store(out_row + start + offs, tl.exp(v - row_max) / row_sum, mask=mask)


def run(x, out):
    softmax_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1], BLOCK=BLOCK)
