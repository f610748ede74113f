"""do-not-specialize: a RoPE kernel with `seq_len: tl.constexpr` → runtime `seq_len` not specialized on.

Harness format: docs/harness.md. The before/after launchers are the template shown.

Serving sees a new prompt length on almost every call. With `seq_len` constexpr, each new value
is a new compilation of the kernel (hundreds of ms each on a GPU); as a runtime argument in
`do_not_specialize` one compiled kernel serves every length (without it, Triton would still
compile separate variants for seq_len == 1 and seq_len % 16 == 0). The kernel's own time barely
moves: MEASURE is "compile", compile count and wall time over SEQUENCE, six prompt lengths.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=2, T=5, H=3, D=16),
    "t517": dict(B=1, T=517, H=32, D=128),
    "t1024": dict(B=1, T=1024, H=32, D=128),
    "t1999": dict(B=1, T=1999, H=32, D=128),
    "t2048": dict(B=1, T=2048, H=32, D=128),
    "t3001": dict(B=1, T=3001, H=32, D=128),
    "t4096": dict(B=1, T=4096, H=32, D=128),
    "huge": dict(B=1, T=524_300, H=32, D=128),  # q past 2**31 elements: row * D must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
GPU_SHAPES = ("t517", "t1024", "t1999", "t2048", "t3001", "t4096")
MEASURE = "compile"
SEQUENCE = GPU_SHAPES                       # six new lengths: six compiles before, one after
FIXED = ("D", "H")
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-3, 8e-3), "float32": (1e-5, 1e-5)}  # computed in fp32, stored in dtype


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    B, T, H, D = shape["B"], shape["T"], shape["H"], shape["D"]
    q = torch.randn(B, T, H, D, generator=g).to(dtype).to(device)
    inv_freq = 10000.0 ** (-torch.arange(0, D // 2, dtype=torch.float64) / (D // 2))
    angles = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return q, angles.cos().float().to(device), angles.sin().float().to(device)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["T"], shape["H"], shape["D"], dtype=dtype, device=device),)


def reference(q, cos, sin):
    half = q.shape[-1] // 2
    x1, x2 = q[..., :half], q[..., half:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return (torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1),)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return 2 * e * shape["B"] * shape["T"] * shape["H"] * shape["D"] + 4 * shape["T"] * shape["D"]


def flops(shape, dtype):
    return 3 * shape["B"] * shape["T"] * shape["H"] * shape["D"]


@triton.jit
def before_kernel(q_ptr, cos_ptr, sin_ptr, out_ptr, H, seq_len: tl.constexpr, D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # one (batch, position, head) row of D
    pos = (row // H) % seq_len
    half = tl.arange(0, D // 2)
    c = tl.load(cos_ptr + pos * (D // 2) + half)
    s = tl.load(sin_ptr + pos * (D // 2) + half)
    x1 = tl.load(q_ptr + row * D + half).to(tl.float32)
    x2 = tl.load(q_ptr + row * D + D // 2 + half).to(tl.float32)
    tl.store(out_ptr + row * D + half, (x1 * c - x2 * s).to(out_ptr.dtype.element_ty))
    tl.store(out_ptr + row * D + D // 2 + half, (x2 * c + x1 * s).to(out_ptr.dtype.element_ty))


def before(q, cos, sin, out):
    B, T, H, D = q.shape
    before_kernel[(B * T * H,)](q, cos, sin, out, H, seq_len=T, D=D)


@triton.jit(do_not_specialize=["seq_len"])
def after_kernel(q_ptr, cos_ptr, sin_ptr, out_ptr, H, seq_len, D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # one (batch, position, head) row of D
    pos = (row // H) % seq_len
    half = tl.arange(0, D // 2)
    c = tl.load(cos_ptr + pos * (D // 2) + half)
    s = tl.load(sin_ptr + pos * (D // 2) + half)
    x1 = tl.load(q_ptr + row * D + half).to(tl.float32)
    x2 = tl.load(q_ptr + row * D + D // 2 + half).to(tl.float32)
    tl.store(out_ptr + row * D + half, (x1 * c - x2 * s).to(out_ptr.dtype.element_ty))
    tl.store(out_ptr + row * D + D // 2 + half, (x2 * c + x1 * s).to(out_ptr.dtype.element_ty))


def after(q, cos, sin, out):
    B, T, H, D = q.shape
    after_kernel[(B * T * H,)](q, cos, sin, out, H, seq_len=T, D=D)
