"""device-side-metadata: per-sequence start offsets read back with .tolist() and rebuilt in Python → torch.cumsum.

Harness format: docs/harness.md. The before/after launchers are the template shown.
A varlen segment mean: `x` packs B sequences of `seq_lens[b]` tokens each into `[T, D]`, and
`y[b]` is the mean of sequence b's rows. One program per (sequence, column block) loads the
sequence's start and length by its program id. The before reads `seq_lens` back to the host
(`.tolist()`: the GPU drains its queue), sums it in a Python loop and uploads the starts with
`torch.tensor(..., device=...)`; the after computes them on the device,
`torch.cumsum(seq_lens, 0) - seq_lens`, queued behind the previous kernel with no wait. The
kernels are the same. Timed with CUDA events, the before's span holds the stall and the host
loop; on an H100/H200 the after should win by several times at "decode" (256 short sequences,
a ~5 µs kernel), by less at "mixed", and by a few percent at "long_prefill", where ~1 GB of
traffic (~300 µs) hides the stall (the payoff says so from the tensor's size).
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=5, L=20, D=100),               # neither size a power of two
    "decode": dict(B=256, L=4, D=4096),           # a decode-sized step: ~640 tokens, 5 MB
    "mixed": dict(B=64, L=512, D=4096),           # ~16K tokens, ~130 MB
    "long_prefill": dict(B=16, L=16384, D=4096),  # ~130K tokens, ~1 GB: the stall is hidden
}
CPU_SHAPES = ("tiny",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-2, 1e-2), "float32": (1e-5, 1e-5)}  # bf16: the output's own rounding
BLOCK_T = 32
BLOCK_D = 128


def _lengths(shape, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(1, shape["L"] + 1, (shape["B"],), generator=g, dtype=torch.int32)


def make_inputs(shape, dtype, seed, device):
    lens = _lengths(shape, seed)
    g = torch.Generator(device="cpu").manual_seed(seed + 1)
    x = torch.randn(int(lens.sum()), shape["D"], generator=g).to(dtype).to(device)
    return x, lens.to(device)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["D"], dtype=dtype, device=device),)


def reference(x, seq_lens):
    lens = seq_lens.to(torch.int64)
    ends = torch.cumsum(lens, 0)
    cs = torch.cat([x.new_zeros(1, x.shape[1]), torch.cumsum(x, 0)])
    return ((cs[ends] - cs[ends - lens]) / lens[:, None].to(x.dtype),)


def bytes_moved(shape, dtype):
    # x read once, y written once (the expected total length of B uniform lengths in [1, L])
    tokens = shape["B"] * (shape["L"] + 1) // 2
    return (tokens + shape["B"]) * shape["D"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return shape["B"] * (shape["L"] + 1) // 2 * shape["D"]


@triton.jit
def before_kernel(x_ptr, starts_ptr, lens_ptr, y_ptr, D, stride_x, stride_y, BLOCK_T: tl.constexpr,
                  BLOCK_D: tl.constexpr):
    i_n, i_d = tl.program_id(0), tl.program_id(1)
    bos = tl.load(starts_ptr + i_n).to(tl.int64)
    n = tl.load(lens_ptr + i_n)
    o_d = i_d * BLOCK_D + tl.arange(0, BLOCK_D)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for t in range(0, n, BLOCK_T):
        o_t = t + tl.arange(0, BLOCK_T)
        m = (o_t[:, None] < n) & (o_d[None, :] < D)
        x = tl.load(x_ptr + (bos + o_t[:, None]) * stride_x + o_d[None, :], mask=m, other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.store(y_ptr + i_n * stride_y + o_d, (acc / n).to(y_ptr.dtype.element_ty), mask=o_d < D)


def before(x, seq_lens, y):
    # the starts: lengths read back to the host (a sync), summed in Python, uploaded again
    lens = seq_lens.tolist()
    starts, total = [], 0
    for n in lens:
        starts.append(total)
        total += n
    starts_t = torch.tensor(starts, dtype=torch.int64, device=x.device)
    D = x.shape[1]
    grid = (len(lens), triton.cdiv(D, BLOCK_D))
    before_kernel[grid](x, starts_t, seq_lens, y, D, x.stride(0), y.stride(0), BLOCK_T=BLOCK_T, BLOCK_D=BLOCK_D)


@triton.jit
def after_kernel(x_ptr, starts_ptr, lens_ptr, y_ptr, D, stride_x, stride_y, BLOCK_T: tl.constexpr,
                 BLOCK_D: tl.constexpr):
    i_n, i_d = tl.program_id(0), tl.program_id(1)
    bos = tl.load(starts_ptr + i_n).to(tl.int64)
    n = tl.load(lens_ptr + i_n)
    o_d = i_d * BLOCK_D + tl.arange(0, BLOCK_D)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for t in range(0, n, BLOCK_T):
        o_t = t + tl.arange(0, BLOCK_T)
        m = (o_t[:, None] < n) & (o_d[None, :] < D)
        x = tl.load(x_ptr + (bos + o_t[:, None]) * stride_x + o_d[None, :], mask=m, other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.store(y_ptr + i_n * stride_y + o_d, (acc / n).to(y_ptr.dtype.element_ty), mask=o_d < D)


def after(x, seq_lens, y):
    # the starts on the device, queued behind the previous kernel: no read-back, no upload
    starts = torch.cumsum(seq_lens, 0) - seq_lens
    D = x.shape[1]
    grid = (seq_lens.numel(), triton.cdiv(D, BLOCK_D))
    after_kernel[grid](x, starts, seq_lens, y, D, x.stride(0), y.stride(0), BLOCK_T=BLOCK_T, BLOCK_D=BLOCK_D)
