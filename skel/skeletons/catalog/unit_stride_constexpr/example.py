"""unit-stride-constexpr: a runtime innermost stride → the literal 1 (contiguous last dim).

Harness format: docs/harness.md. The before/after launchers are the template shown.

Row scaling `out[m, n] = x[m, n] * scale[m]` over [M, N] activations (the last step of an
RMSNorm, a per-token dequantisation). The "before" takes every stride at runtime and, like
serving code that keeps strides out of specialisation so new layouts never recompile, lists
them in `do_not_specialize`: the compiler cannot tell that `cols * stride_xn` is contiguous
and issues one narrow load per element. The "after" drops the column strides (the launcher
makes the inputs contiguous) and adds `cols` directly: 128-bit vector loads and stores.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=1000),                  # no size a multiple of the block
    "tokens": dict(M=16384, N=4096),             # 16k tokens of a 4096-wide layer
    "wide": dict(M=4096, N=14336),               # an MLP-width activation
    "huge": dict(M=70000, N=32768),              # past 2**31 elements: row * stride must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-2, 1e-2), "float32": (1e-6, 1e-6)}  # one multiply, one rounding
BLOCK_N = 1024


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape["M"], shape["N"], generator=g).to(dtype).to(device)
    scale = torch.rand(shape["M"], generator=g).to(torch.float32).to(device)
    return x, scale


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x, scale):
    return (x * scale[:, None],)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return 2 * e * shape["M"] * shape["N"] + 4 * shape["M"]


def flops(shape, dtype):
    return shape["M"] * shape["N"]


@triton.jit(do_not_specialize=["stride_xm", "stride_xn", "stride_om", "stride_on"])
def before_kernel(x_ptr, scale_ptr, o_ptr, N, stride_xm, stride_xn, stride_om, stride_on,
                  BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    s = tl.load(scale_ptr + row)
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask, other=0.0)
    y = (x.to(tl.float32) * s).to(o_ptr.dtype.element_ty)
    tl.store(o_ptr + row * stride_om + cols * stride_on, y, mask=mask)


def before(x, scale, out):
    M, N = x.shape
    before_kernel[(M, triton.cdiv(N, BLOCK_N))](x, scale, out, N, x.stride(0), x.stride(1),
                                                out.stride(0), out.stride(1), BLOCK_N=BLOCK_N)


@triton.jit(do_not_specialize=["stride_xm", "stride_om"])
def after_kernel(x_ptr, scale_ptr, o_ptr, N, stride_xm, stride_om, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    s = tl.load(scale_ptr + row)
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0)
    y = (x.to(tl.float32) * s).to(o_ptr.dtype.element_ty)
    tl.store(o_ptr + row * stride_om + cols, y, mask=mask)


def after(x, scale, out):
    M, N = x.shape
    x = x.contiguous()  # a no-op for contiguous inputs; the kernel now assumes unit column stride
    assert out.stride(1) == 1, "the output's last dimension must be contiguous"
    after_kernel[(M, triton.cdiv(N, BLOCK_N))](x, scale, out, N, x.stride(0), out.stride(0), BLOCK_N=BLOCK_N)
