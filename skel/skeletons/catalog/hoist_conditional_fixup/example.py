"""hoist-conditional-fixup: cross-entropy gradient `tl.where(offs == y, p - 1, p)` per element → one fix-up.

Harness format: docs/harness.md. The before/after launchers are the template shown.

The backward of a mean cross-entropy over a large vocabulary, one program per token,
streaming the logits row in blocks: dx = (softmax(x) - onehot(y)) / N, with the row's
log-sum-exp saved by the forward. The "before" subtracts the one-hot inside the loop with a
compare-and-select on every element of every block. The "after" stores the plain softmax in
the loop, then patches the single target element with a scalar load and store (after a
barrier, so the program's own block stores are visible to the thread that patches).
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(N=37, V=1000),                  # V not a multiple of the block
    "llama3": dict(N=4096, V=128256),            # a 128k vocabulary
    "gemma": dict(N=2048, V=256000),
    "huge": dict(N=17000, V=128256),             # past 2**31 elements: row * V must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("float32",)
TOLERANCES = {"float32": (1e-7, 1e-5)}           # one exp and one division per element
BLOCK = 4096


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = (4 * torch.randn(shape["N"], shape["V"], generator=g)).to(dtype).to(device)
    y = torch.randint(0, shape["V"], (shape["N"],), generator=g).to(device)
    lse = torch.logsumexp(x.double(), dim=1).to(dtype)
    return x, y, lse


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["N"], shape["V"], dtype=dtype, device=device),)


def reference(x, y, lse):
    n = x.shape[0]
    p = torch.exp(x - lse[:, None])
    p[torch.arange(n), y.long()] -= 1.0
    return (p / n,)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return 2 * e * shape["N"] * shape["V"]


def flops(shape, dtype):
    return 3 * shape["N"] * shape["V"]


@triton.jit
def before_kernel(x_ptr, y_ptr, lse_ptr, dx_ptr, V, inv_n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    y = tl.load(y_ptr + row)
    lse = tl.load(lse_ptr + row)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < V
        x = tl.load(x_ptr + row * V + offs, mask=mask, other=float("-inf"))
        p = tl.exp(x - lse) * inv_n
        p = tl.where(offs == y, p - inv_n, p)
        tl.store(dx_ptr + row * V + offs, p, mask=mask)


def before(x, y, lse, dx):
    N, V = x.shape
    before_kernel[(N,)](x, y, lse, dx, V, 1.0 / N, BLOCK=BLOCK)


@triton.jit
def after_kernel(x_ptr, y_ptr, lse_ptr, dx_ptr, V, inv_n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    y = tl.load(y_ptr + row)
    lse = tl.load(lse_ptr + row)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < V
        x = tl.load(x_ptr + row * V + offs, mask=mask, other=float("-inf"))
        tl.store(dx_ptr + row * V + offs, tl.exp(x - lse) * inv_n, mask=mask)
    tl.debug_barrier()  # the block stores above come from every thread of the program
    dx_y = tl.load(dx_ptr + row * V + y)
    tl.store(dx_ptr + row * V + y, dx_y - inv_n)


def after(x, y, lse, dx):
    N, V = x.shape
    after_kernel[(N,)](x, y, lse, dx, V, 1.0 / N, BLOCK=BLOCK)
