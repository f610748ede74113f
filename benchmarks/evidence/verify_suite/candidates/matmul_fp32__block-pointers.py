"""matmul_fp32 + block-pointers: A/B tiles through tl.make_block_ptr + tl.advance + boundary_check instead of offset grids and masks."""

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.matmul_fp32 import *  # noqa: F401,F403  the harness (kernels/matmul_fp32.py, __all__)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    p_a = tl.make_block_ptr(a_ptr, shape=(M, K), strides=(stride_am, stride_ak), offsets=(pid_m * BLOCK_M, 0),
                            block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    p_b = tl.make_block_ptr(b_ptr, shape=(K, N), strides=(stride_bk, stride_bn), offsets=(0, pid_n * BLOCK_N),
                            block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        a = tl.load(p_a, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(p_b, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b, input_precision="ieee")
        p_a = tl.advance(p_a, (0, BLOCK_K))
        p_b = tl.advance(p_b, (BLOCK_K, 0))
    p_c = tl.make_block_ptr(c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                            offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(p_c, acc, boundary_check=(0, 1))


def run(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, 64) * triton.cdiv(N, 64),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
