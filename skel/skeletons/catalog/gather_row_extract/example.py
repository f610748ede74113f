"""gather-row-extract: one-hot `tl.sum(tl.where(o_i[:, None] == j, b_k, 0), 0)` → `tl.gather`.

Harness format: docs/harness.md. The before/after launchers are the template shown.

The diagonal sub-chunk of gated linear attention (GLA/DPLR intra-chunk scores): within a
sub-chunk of BC steps, A[i, j] = sum_k q[i, k] k[j, k] exp(g[i, k] - g[j, k]) for i >= j.
The gate difference is per key channel, so it is not a matmul: the kernel loops over j and
needs row j of the k and g tiles held in registers. The "before" extracts each row with a
one-hot select and a reduction over the BC rows; the "after" reads it with `tl.gather`.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=1, T=150, H=2, K=32),          # T not a multiple of the sub-chunk
    "gla": dict(B=8, T=4096, H=16, K=128),
    "heads": dict(B=4, T=8192, H=32, K=64),
    "huge": dict(B=1, T=1050000, H=16, K=128),    # past 2**31 elements: offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("K",)
DTYPES = ("float32",)
TOLERANCES = {"float32": (1e-4, 1e-4)}            # fp32 sums over K products
BC = 16


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    size = (shape["B"], shape["T"], shape["H"], shape["K"])
    q = (torch.randn(size, generator=g) / shape["K"] ** 0.5).to(dtype).to(device)
    k = torch.randn(size, generator=g).to(dtype).to(device)
    gate = (-torch.rand(size, generator=g)).to(dtype).to(device)  # per-step log decays in (-1, 0]
    return q, k, gate


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["T"], shape["H"], BC, dtype=torch.float32, device=device),)


def reference(q, k, gate):
    """Block by block over time (whole sub-chunks at a time): the [i, j, K] decay tensor of
    the whole sequence would be BC times the inputs."""
    B, T, H, K = q.shape
    A = torch.empty(B, T, H, BC, dtype=q.dtype, device=q.device)
    tril = torch.ones(BC, BC, dtype=q.dtype, device=q.device).tril()[None, None, :, :, None]
    step = BC * 1024
    for s in range(0, T, step):
        e = min(s + step, T)
        NC = -(-(e - s) // BC)
        pad = NC * BC - (e - s)
        qc, kc, gc = (torch.nn.functional.pad(x[:, s:e], (0, 0, 0, 0, 0, pad)).view(B, NC, BC, H, K)
                      for x in (q, k, gate))
        decay = torch.exp(gc[:, :, :, None] - gc[:, :, None, :])          # [B, NC, i, j, H, K]
        a = (qc[:, :, :, None] * kc[:, :, None, :] * decay).sum(-1) * tril  # [B, NC, i, j, H]
        A[:, s:e] = a.permute(0, 1, 2, 4, 3).reshape(B, NC * BC, H, BC)[:, :e - s]
    return (A,)


def bytes_moved(shape, dtype):
    n = shape["B"] * shape["T"] * shape["H"]
    return n * (3 * shape["K"] + BC) * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 4 * shape["B"] * shape["T"] * shape["H"] * shape["K"] * BC


@triton.jit
def before_kernel(q, k, g, A, T, H: tl.constexpr, K: tl.constexpr, BC: tl.constexpr):
    i_c, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    o_i = tl.arange(0, BC)
    o_t = i_c * BC + o_i
    o_k = tl.arange(0, K)
    m_t = o_t < T
    p = (i_b.to(tl.int64) * T * H + i_h) * K + o_t[:, None].to(tl.int64) * (H * K) + o_k[None, :]
    b_q = tl.load(q + p, mask=m_t[:, None], other=0.0)
    b_k = tl.load(k + p, mask=m_t[:, None], other=0.0)
    b_g = tl.load(g + p, mask=m_t[:, None], other=0.0)
    b_A = tl.zeros([BC, BC], dtype=tl.float32)
    for j in range(0, BC):
        b_kj = tl.sum(tl.where(o_i[:, None] == j, b_k, 0.0), 0)
        b_gj = tl.sum(tl.where(o_i[:, None] == j, b_g, 0.0), 0)
        b_Aj = tl.sum(b_q * b_kj[None, :] * tl.exp(b_g - b_gj[None, :]), 1)
        b_A = tl.where((o_i[None, :] == j) & (o_i[:, None] >= j), b_Aj[:, None], b_A)
    p_A = A + (i_b.to(tl.int64) * T * H + i_h) * BC + o_t[:, None].to(tl.int64) * (H * BC) + o_i[None, :]
    tl.store(p_A, b_A, mask=m_t[:, None])


def before(q, k, gate, A):
    B, T, H, K = q.shape
    before_kernel[(triton.cdiv(T, BC), B * H)](q, k, gate, A, T, H=H, K=K, BC=BC)


@triton.jit
def after_kernel(q, k, g, A, T, H: tl.constexpr, K: tl.constexpr, BC: tl.constexpr):
    i_c, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    o_i = tl.arange(0, BC)
    o_t = i_c * BC + o_i
    o_k = tl.arange(0, K)
    m_t = o_t < T
    p = (i_b.to(tl.int64) * T * H + i_h) * K + o_t[:, None].to(tl.int64) * (H * K) + o_k[None, :]
    b_q = tl.load(q + p, mask=m_t[:, None], other=0.0)
    b_k = tl.load(k + p, mask=m_t[:, None], other=0.0)
    b_g = tl.load(g + p, mask=m_t[:, None], other=0.0)
    b_A = tl.zeros([BC, BC], dtype=tl.float32)
    for j in range(0, BC):
        row = tl.full([1, K], j, dtype=tl.int32)
        b_kj = tl.gather(b_k, row, axis=0)  # [1, K]: row j, no select-and-reduce over BC rows
        b_gj = tl.gather(b_g, row, axis=0)
        b_Aj = tl.sum(b_q * b_kj * tl.exp(b_g - b_gj), 1)
        b_A = tl.where((o_i[None, :] == j) & (o_i[:, None] >= j), b_Aj[:, None], b_A)
    p_A = A + (i_b.to(tl.int64) * T * H + i_h) * BC + o_t[:, None].to(tl.int64) * (H * BC) + o_i[None, :]
    tl.store(p_A, b_A, mask=m_t[:, None])


def after(q, k, gate, A):
    B, T, H, K = q.shape
    after_kernel[(triton.cdiv(T, BC), B * H)](q, k, gate, A, T, H=H, K=K, BC=BC)
