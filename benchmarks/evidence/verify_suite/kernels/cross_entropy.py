"""Cross-entropy over a 128k vocabulary, naive: one row per program, a max pass then an exp-sum pass.

loss[i] = logsumexp(logits[i]) - logits[i, target[i]]  (fp32 loss, bf16/fp32 logits).
"""

import torch
import triton
import triton.language as tl

__all__ = ["SHAPES", "CPU_SHAPES", "DTYPES", "TOLERANCES", "make_inputs", "make_outputs", "reference",
           "bytes_moved", "flops"]

SHAPES = {
    "tiny": dict(M=6, V=3000),
    "vocab": dict(M=4096, V=128256),
}
CPU_SHAPES = ("tiny",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-4, 1e-5), "float32": (1e-4, 1e-5)}  # the loss is computed in fp32 either way
BLOCK = 4096


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    logits = (torch.randn(shape["M"], shape["V"], generator=g) * 4).to(dtype).to(device)
    target = torch.randint(0, shape["V"], (shape["M"],), generator=g).to(device)
    return (logits, target)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], dtype=torch.float32, device=device),)


def reference(logits, target):
    return (torch.logsumexp(logits, dim=1) - logits.gather(1, target[:, None])[:, 0],)


def bytes_moved(shape, dtype):
    return shape["M"] * shape["V"] * torch.tensor([], dtype=dtype).element_size() + 12 * shape["M"]


def flops(shape, dtype):
    return 4 * shape["M"] * shape["V"]


@triton.jit
def cross_entropy_kernel(logits_ptr, target_ptr, loss_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * stride
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    for start in range(0, n_cols, BLOCK):
        x = tl.load(row_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, tl.max(x, axis=0))
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(row_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        s += tl.sum(tl.exp(x - m), axis=0)
    t = tl.load(target_ptr + row)
    x_t = tl.load(row_ptr + t).to(tl.float32)
    tl.store(loss_ptr + row, m + tl.log(s) - x_t)


def run(logits, target, loss):
    cross_entropy_kernel[(logits.shape[0],)](logits, target, loss, logits.stride(0), logits.shape[1],
                                             BLOCK=min(BLOCK, triton.next_power_of_2(logits.shape[1])))
