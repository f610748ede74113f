"""launch-pdl: a chain of small dependent decode kernels → Programmatic Dependent Launch.

Harness format: docs/harness.md. The before/after launchers are the template shown.

A decode step chains many short kernels, each reading the previous one's output; here a chain
of L RMSNorm layers (hidden state ping-ponged between two buffers). With `launch_pdl=True` and
`gdc_wait()` before the first load of the previous kernel's output, kernel l+1 is launched
while kernel l drains, and loads its weights (which nothing upstream writes) meanwhile.
MEASURE is "launch": per-step latency of the chain captured in a CUDA graph. The "prefill"
shape is where it does not pay: each kernel is long enough to hide the launch gap.

PDL needs sm_90+ (Hopper); the GDC intrinsics are inline PTX, which the CPU interpreter cannot
run ("inline_asm not supported in interpreter mode"), so, as in Triton's PDL tutorial, a
constexpr `USE_GDC` leaves them out where PDL is off (CPU tensors, pre-Hopper GPUs); the
interpreter ignores the `launch_pdl` launch option.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=3, N=100, L=3),               # N not a power of two
    "decode_b1": dict(M=1, N=4096, L=16),        # one token, 4096 hidden: ~2 us kernels
    "decode_b64": dict(M=64, N=8192, L=16),      # 64 sequences batched, 8192 hidden
    "prefill": dict(M=16384, N=8192, L=4),       # does not apply: ~100 us kernels hide the gap
    "huge": dict(M=262_200, N=8192, L=2),        # past 2**31 elements: row * N must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
MEASURE = "launch"
FIXED = ("L",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-2, 3e-2),          # L bf16 roundings of the hidden state in a row
              "float32": (1e-5, 1e-5)}
EPS = 1e-6


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape["M"], shape["N"], generator=g).to(dtype).to(device)
    w = (1 + 0.1 * torch.randn(shape["L"], shape["N"], generator=g)).to(dtype).to(device)
    return x, w


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x, w):
    h = x
    for layer in range(w.shape[0]):
        h = h * torch.rsqrt(h.pow(2).mean(dim=1, keepdim=True) + EPS) * w[layer]
    return (h,)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return shape["L"] * (2 * shape["M"] * shape["N"] + shape["N"]) * e


def flops(shape, dtype):
    return 4 * shape["L"] * shape["M"] * shape["N"]


@triton.jit
def before_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, 0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def before(x, w, y):
    M, N = x.shape
    bufs = (torch.empty_like(x), torch.empty_like(x))
    h = x
    for layer in range(w.shape[0]):
        out = y if layer == w.shape[0] - 1 else bufs[layer % 2]
        before_kernel[(M,)](h, w[layer], out, N, 1e-6, BLOCK=triton.next_power_of_2(N))
        h = out


@triton.jit
def after_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr, USE_GDC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)  # weights: nothing upstream writes them
    if USE_GDC:
        tl.extra.cuda.gdc_wait()  # x is the previous kernel's output
        tl.extra.cuda.gdc_launch_dependents()
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, 0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def after(x, w, y):
    M, N = x.shape
    pdl = x.is_cuda and torch.cuda.get_device_capability(x.device)[0] >= 9
    bufs = (torch.empty_like(x), torch.empty_like(x))
    h = x
    for layer in range(w.shape[0]):
        out = y if layer == w.shape[0] - 1 else bufs[layer % 2]
        after_kernel[(M,)](h, w[layer], out, N, 1e-6, BLOCK=triton.next_power_of_2(N), USE_GDC=pdl, launch_pdl=pdl)
        h = out
