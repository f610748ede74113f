"""chunked-fused-linear-ce: an LM head + cross-entropy forward and backward. Full logits
(`torch.matmul(x, W.T)`, [BT, V]) and a separate [BT, V] gradient buffer → row chunks whose
logits the cross-entropy kernel overwrites with d loss / d logits, consumed chunk by chunk
by the grad_x and grad_W matmuls.

x is [BT, H], W is [V, H], target is [BT]. Outputs: the per-token loss, grad_x [BT, H] and
grad_W [V, H] (fp32) of sum(loss). The technique's gain is peak memory (one [chunk, V]
buffer instead of two [BT, V] ones); the timed ratio says what the chunking costs or saves.
Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(BT=37, H=64, V=1000),               # BT not a multiple of the chunk, V of the block
    "llama3_8b": dict(BT=8192, H=4096, V=128256),    # 2 GB of bf16 logits (and 2 GB of gradient) before
    "gemma2b": dict(BT=4096, H=2048, V=256000),
    "huge": dict(BT=16_800, H=4096, V=128256),       # logits past 2**31 elements: row * V must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("H",)
DTYPES = ("float32", "bfloat16")
# bf16 logits and gradients: one bf16 ulp is 1.6e-2 at 2..4 (the H200 run saw 2 of 525M grad
# elements off by exactly that), so the absolute floor is one ulp at the gradients' scale
TOLERANCES = {"float32": (1e-4, 1e-4), "bfloat16": (2e-2, 5e-2)}
BLOCK_V = 4096


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    BT, H, V = shape["BT"], shape["H"], shape["V"]
    x = torch.randn(BT, H, generator=g, device=device).to(dtype)
    w = (torch.randn(V, H, generator=g, device=device) / H ** 0.5).to(dtype)  # logits of order one
    target = torch.randint(0, V, (BT,), generator=g, device=device)
    return x, w, target


def make_outputs(shape, dtype, device):
    BT, H, V = shape["BT"], shape["H"], shape["V"]
    return (torch.empty(BT, dtype=torch.float32, device=device), torch.empty(BT, H, dtype=dtype, device=device),
            torch.empty(V, H, dtype=torch.float32, device=device))


def reference(x, w, target):
    # chunked in fp64 so the CHECK_ONLY shape's reference does not need [BT, V] float64 tensors
    loss = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    grad_x = torch.empty_like(x)
    grad_w = torch.zeros_like(w)
    for s in range(0, x.shape[0], 2048):
        logits = x[s:s + 2048] @ w.T
        lse = torch.logsumexp(logits, dim=1)
        t = target[s:s + 2048]
        loss[s:s + 2048] = lse - logits.gather(1, t[:, None])[:, 0]
        dlogits = torch.softmax(logits, dim=1)
        dlogits[torch.arange(len(t), device=x.device), t] -= 1.0
        grad_x[s:s + 2048] = dlogits @ w
        grad_w += dlogits.T @ x[s:s + 2048]
    return loss, grad_x, grad_w


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    BT, H, V = shape["BT"], shape["H"], shape["V"]
    return (2 * BT * H + V * H) * e + V * H * 4 + 2 * BT * V * e  # logits written once, read once


def flops(shape, dtype):
    return 6 * shape["BT"] * shape["H"] * shape["V"]


@triton.jit
def before_kernel(logits_ptr, dlogits_ptr, target_ptr, loss_ptr, V, BLOCK_V: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    y = tl.load(target_ptr + row)
    m = float("-inf")
    d = 0.0
    for v0 in range(0, V, BLOCK_V):                       # online log-sum-exp over the row
        offs = v0 + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * V + offs, mask=offs < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(d)
    tl.store(loss_ptr + row, lse - tl.load(logits_ptr + row * V + y).to(tl.float32))
    for v0 in range(0, V, BLOCK_V):
        offs = v0 + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * V + offs, mask=offs < V, other=0.0).to(tl.float32)
        g = tl.exp(x - lse) - tl.where(offs == y, 1.0, 0.0)
        tl.store(dlogits_ptr + row * V + offs, g.to(dlogits_ptr.dtype.element_ty), mask=offs < V)


def before(x, w, target, loss, grad_x, grad_w):
    BT, V = x.shape[0], w.shape[0]
    logits = torch.matmul(x, w.T)                          # [BT, V] in full
    dlogits = torch.empty_like(logits)                     # and a second [BT, V]
    before_kernel[(BT,)](logits, dlogits, target, loss, V, BLOCK_V=BLOCK_V, num_warps=8)
    torch.matmul(dlogits, w, out=grad_x)
    grad_w.copy_(torch.matmul(dlogits.T, x))


@triton.jit
def after_kernel(logits_ptr, target_ptr, loss_ptr, V, BLOCK_V: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    y = tl.load(target_ptr + row)
    m = float("-inf")
    d = 0.0
    for v0 in range(0, V, BLOCK_V):
        offs = v0 + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * V + offs, mask=offs < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(d)
    tl.store(loss_ptr + row, lse - tl.load(logits_ptr + row * V + y).to(tl.float32))
    for v0 in range(0, V, BLOCK_V):
        offs = v0 + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * V + offs, mask=offs < V, other=0.0).to(tl.float32)
        g = tl.exp(x - lse) - tl.where(offs == y, 1.0, 0.0)
        tl.store(logits_ptr + row * V + offs, g.to(logits_ptr.dtype.element_ty), mask=offs < V)  # in place


def after(x, w, target, loss, grad_x, grad_w):
    BT, H = x.shape
    V = w.shape[0]
    chunk = triton.next_power_of_2(triton.cdiv(BT, triton.cdiv(V, H)))  # a chunk of logits ~ the size of x
    grad_w.zero_()
    for start in range(0, BT, chunk):
        end = min(start + chunk, BT)
        x_c = x[start:end]
        logits_c = torch.matmul(x_c, w.T)                  # [chunk, V], reused for the gradient
        after_kernel[(end - start,)](logits_c, target[start:end], loss[start:end], V, BLOCK_V=BLOCK_V, num_warps=8)
        torch.matmul(logits_c, w, out=grad_x[start:end])
        grad_w += torch.matmul(logits_c.T, x_c)
