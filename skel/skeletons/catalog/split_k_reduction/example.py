"""split-k-reduction: a GEMV with one program per block of outputs → split-K partial sums + a summing pass.

Harness format: docs/harness.md. The before/after launchers are the template shown.
y = W @ x with W of shape (N, K), K long and N small (a decode-time projection). The before
runs one program per BLOCK_N outputs over the whole of K: N = 1024 is 16 programs. The
after splits K over about two programs per SM (from the SM count and the grid, never more
splits than K blocks); each writes an fp32 partial row, and a second kernel adds the
splits in a fixed order (deterministic, unlike an atomic merge).
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(N=100, K=1000),           # on the CPU: 2 row blocks, 8 K blocks, split 8 ways
    "short": dict(N=70, K=200),            # K < 2 * BLOCK_K: 2 splits, the second one partial
    "gemv": dict(N=1024, K=65536),         # 16 programs for 132 SMs: the case it is for
    "mlp": dict(N=4096, K=14336),          # a down projection at batch 1
    "wide": dict(N=65536, K=4096),         # does not apply: 1024 row blocks already fill the GPU
    "huge": dict(N=40000, K=65536),        # past 2**31 elements of W: rn * K must be int64
}
CPU_SHAPES = ("tiny", "short")
CHECK_ONLY = ("huge",)
DTYPES = ("bfloat16", "float16")
TOLERANCES = {"bfloat16": (1e-3, 8e-3), "float16": (1e-3, 2e-3)}  # fp32 sums, one rounding of y
BLOCK_N = 64
BLOCK_K = 128


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    w = torch.randn(shape["N"], shape["K"], generator=g, device=device).to(dtype)
    x = torch.randn(shape["K"], generator=g, device=device).to(dtype)
    return w, x


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["N"], dtype=dtype, device=device),)


def reference(w, x):
    return (w @ x,)


def bytes_moved(shape, dtype):
    N, K = shape["N"], shape["K"]
    return (N * K + K + N) * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 2 * shape["N"] * shape["K"]


@triton.jit
def before_kernel(w_ptr, x_ptr, y_ptr, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_n = tl.program_id(0)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_n = rn < N
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        m_k = rk < K
        x = tl.load(x_ptr + rk, mask=m_k, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + rn.to(tl.int64)[:, None] * K + rk[None, :], mask=m_n[:, None] & m_k[None, :], other=0.0)
        acc += tl.sum(w.to(tl.float32) * x[None, :], 1)
    tl.store(y_ptr + rn, acc.to(y_ptr.dtype.element_ty), mask=m_n)


def before(w, x, y):
    N, K = w.shape
    before_kernel[(triton.cdiv(N, BLOCK_N),)](w, x, y, N, K, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)


@triton.jit
def after_kernel(w_ptr, x_ptr, part_ptr, N, K, num_splits, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # grid = (row blocks, num_splits); after_sum adds the num_splits partial rows
    pid_n = tl.program_id(0)
    split_id = tl.program_id(1)
    split_len = tl.cdiv(tl.cdiv(K, num_splits), BLOCK_K) * BLOCK_K
    start = split_id * split_len
    end = tl.minimum(start + split_len, K)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_n = rn < N
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k0 in range(start, end, BLOCK_K):  # a split past the end of K runs no step: its partial is 0
        rk = k0 + tl.arange(0, BLOCK_K)
        m_k = rk < end
        x = tl.load(x_ptr + rk, mask=m_k, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + rn.to(tl.int64)[:, None] * K + rk[None, :], mask=m_n[:, None] & m_k[None, :], other=0.0)
        acc += tl.sum(w.to(tl.float32) * x[None, :], 1)
    tl.store(part_ptr + split_id * N + rn, acc, mask=m_n)


@triton.jit
def after_sum(part_ptr, y_ptr, N, num_splits, BLOCK_N: tl.constexpr):
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    m_n = rn < N
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for s in range(0, num_splits):  # a fixed order: the same bits on every run
        acc += tl.load(part_ptr + s * N + rn, mask=m_n, other=0.0)
    tl.store(y_ptr + rn, acc.to(y_ptr.dtype.element_ty), mask=m_n)


def after(w, x, y):
    N, K = w.shape
    row_blocks = triton.cdiv(N, BLOCK_N)
    sms = torch.cuda.get_device_properties(w.device).multi_processor_count if w.is_cuda else 8
    num_splits = max(1, min(triton.cdiv(K, BLOCK_K), 2 * sms // row_blocks))
    part = torch.empty(num_splits, N, dtype=torch.float32, device=w.device)
    after_kernel[(row_blocks, num_splits)](w, x, part, N, K, num_splits, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    after_sum[(row_blocks,)](part, y, N, num_splits, BLOCK_N=BLOCK_N)
