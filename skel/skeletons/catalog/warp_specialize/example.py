"""warp-specialize: a TMA-fed GEMM K loop (in-kernel tensor descriptors) → the same loop as
`tl.range(..., warp_specialize=True)`, so producer warps issue the TMA copies and consumer
warps the MMAs (sm_90+; Blackwell is the pass's main target).

Harness format: docs/harness.md. The before/after launchers are the template shown.
The interpreter runs descriptors (no allocator needed there) and ignores the
`warp_specialize` flag, so the CPU check proves the two sides compute the same GEMM; whether
the flag pays is a GPU question (on a GPU the launcher registers the descriptors' scratch
allocator with triton.set_allocator).
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=72, K=136),             # no size a multiple of a block (K, N multiples of 8 for TMA)
    "square": dict(M=8192, N=8192, K=8192),      # compute-bound: the MMA stream is what WS keeps fed
    "long_k": dict(M=2048, N=2048, K=32768),     # few output tiles, a long K loop (a weight-gradient GEMM)
    "huge": dict(M=266240, N=256, K=8192),       # A past 2**31 elements (descriptor coordinates stay int32)
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("float16",)                            # the interpreter's bf16 tl.dot is wrong; fp16 runs on both
TOLERANCES = {"float16": (2e-3, 2e-3)}           # fp32 accumulation, one fp16 rounding of the output
BM, BN, BK, WARPS, STAGES = 128, 128, 64, 4, 4   # one consumer warpgroup; a 4-deep TMA ring


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, N, K = shape["M"], shape["N"], shape["K"]
    scale = K ** -0.25  # outputs of order one
    a = (torch.randn(M, K, generator=g, device=device) * scale).to(dtype)
    b = (torch.randn(K, N, generator=g, device=device) * scale).to(dtype)
    return a, b


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a, b):
    return (a @ b,)


def bytes_moved(shape, dtype):
    M, N, K = shape["M"], shape["N"], shape["K"]
    return (M * K + K * N + M * N) * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


def _grid(M, N):
    return (triton.cdiv(M, BM), triton.cdiv(N, BN))


def _allocator(device):
    # device-side descriptors live in global scratch memory that Triton asks the host for
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=device))


@triton.jit
def before_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in tl.range(0, K, BK):
        a = a_desc.load([off_m, k0])
        b = b_desc.load([k0, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(c_ptr.dtype.element_ty))


def before(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    _allocator(a.device)
    before_kernel[_grid(M, N)](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                               BM=BM, BN=BN, BK=BK, num_warps=WARPS, num_stages=STAGES)


@triton.jit
def after_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    # producer warps run the TMA copies ahead; the MMA warps consume the ring back to back
    for k0 in tl.range(0, K, BK, warp_specialize=True):
        a = a_desc.load([off_m, k0])
        b = b_desc.load([k0, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(c_ptr.dtype.element_ty))


def after(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    _allocator(a.device)
    after_kernel[_grid(M, N)](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                              BM=BM, BN=BN, BK=BK, num_warps=WARPS, num_stages=STAGES)
