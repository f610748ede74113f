# Fixtures for fused-dequant-gemm: a dequantiser that stores an fp16 weight copy for a host
# matmul, and a GEMM launched after a host dequantisation, against GEMMs that unpack in their
# K loop, dequantisers that feed no matmul, plain and fp8 block-scaled GEMMs. Written for these
# tests after the shapes of GPTQ/AWQ Triton kernels (lmdeploy's awq_kernels, torchao's HQQ
# mixed mm, AutoGPTQ's triton dequantiser); none is copied.
import torch
import torch.nn.functional as F
import triton
import triton.language as tl


# skel: match fused-dequant-gemm
@triton.jit
def dequant_int4_kernel(qw_ptr, s_ptr, w_ptr, N, stride_qk, stride_sk, stride_wk, GROUP: tl.constexpr,
                        BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    # GPTQ packing: eight 4-bit values of consecutive k in one int32; the wide copy is stored
    pid_k, pid_n = tl.program_id(0), tl.program_id(1)
    offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = offs_n[None, :] < N
    qw = tl.load(qw_ptr + (offs_k[:, None] // 8) * stride_qk + offs_n[None, :], mask=mask, other=0)
    w = (qw >> ((offs_k[:, None] % 8) * 4)) & 0xF
    s = tl.load(s_ptr + (offs_k[:, None] // GROUP) * stride_sk + offs_n[None, :], mask=mask, other=0.0)
    tl.store(w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :], ((w - 8) * s).to(w_ptr.dtype.element_ty),
             mask=mask)


def gptq_linear(x, qweight, scales, group_size=128):
    K, N = qweight.shape[0] * 8, qweight.shape[1]
    w = torch.empty(K, N, dtype=x.dtype, device=x.device)
    grid = (K // 64, triton.cdiv(N, 64))
    dequant_int4_kernel[grid](qweight, scales, w, N, qweight.stride(0), scales.stride(0), w.stride(0),
                              GROUP=group_size, BLOCK_K=64, BLOCK_N=64)
    return torch.matmul(x, w)


# skel: match fused-dequant-gemm
@triton.jit
def hqq_dequant_kernel(qb_ptr, scale_ptr, zero_ptr, out_ptr, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    # two signed nibbles a byte, sign-extended with a left and a right shift; then F.linear
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    qb = tl.load(qb_ptr + row * n_cols + cols, mask=m, other=0)
    lo = (qb << 4) >> 4
    hi = qb >> 4
    s = tl.load(scale_ptr + (2 * row) // GROUP)
    z = tl.load(zero_ptr + (2 * row) // GROUP)
    tl.store(out_ptr + (2 * row) * n_cols + cols, ((lo.to(tl.float32) - z) * s).to(out_ptr.dtype.element_ty), mask=m)
    tl.store(out_ptr + (2 * row + 1) * n_cols + cols, ((hi.to(tl.float32) - z) * s).to(out_ptr.dtype.element_ty),
             mask=m)


def hqq_linear(x, qb, scale, zero, bias):
    K2, N = qb.shape
    w = torch.empty(2 * K2, N, dtype=x.dtype, device=x.device)
    hqq_dequant_kernel[(K2,)](qb, scale, zero, w, N, GROUP=64, BLOCK=triton.next_power_of_2(N))
    return F.linear(x, w.t(), bias)


# skel: match fused-dequant-gemm
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # a plain fp16 GEMM, launched on a weight the host dequantised first
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :], mask=rn[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def dequantize_awq(qweight, scales, zeros):
    """Stands for the library dequantiser: a full fp16 weight copy."""
    shifts = torch.arange(0, 32, 4, device=qweight.device)
    w = (qweight[:, :, None] >> shifts) & 0xF
    return ((w.flatten(1) - zeros) * scales).half()


def awq_linear_unfused(x, qweight, scales, zeros):
    w = dequantize_awq(qweight, scales, zeros)
    M, K = x.shape
    N = w.shape[1]
    c = torch.empty(M, N, dtype=x.dtype, device=x.device)
    matmul_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](x, w, c, M, N, K, x.stride(0), w.stride(0), c.stride(0),
                                                            BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    return c


# skel: ok fused-dequant-gemm
# skel: uses fused-dequant-gemm
@triton.jit
def w4a16_gemm_kernel(a_ptr, qw_ptr, s_ptr, c_ptr, M, N, K, stride_am, stride_qk, stride_sk, stride_cm,
                      GROUP: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # the technique: the packed tile unpacked in registers in the K loop, straight into tl.dot
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :], mask=rm[:, None] < M, other=0.0)
        qw = tl.load(qw_ptr + (rk[:, None] // 8) * stride_qk + rn[None, :], mask=rn[None, :] < N, other=0)
        w = (qw >> ((rk[:, None] % 8) * 4)) & 0xF
        s = tl.load(s_ptr + (k0 // GROUP) * stride_sk + rn, mask=rn < N, other=0.0)
        acc = tl.dot(a, ((w - 8) * s[None, :]).to(a.dtype), acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# skel: ok fused-dequant-gemm
@triton.jit
def dequant_kv_int4_kernel(kq_ptr, ks_ptr, kz_ptr, out_ptr, D: tl.constexpr, HALF: tl.constexpr):
    # unpacks an int4 KV cache into bf16 for a caller that feeds no matmul: nothing to fuse into
    row = tl.program_id(0)
    o = tl.arange(0, HALF)
    q = tl.load(kq_ptr + row * HALF + o)
    s = tl.load(ks_ptr + row)
    z = tl.load(kz_ptr + row)
    tl.store(out_ptr + row * D + o, (((q & 0xF).to(tl.float32) - z) * s).to(out_ptr.dtype.element_ty))
    tl.store(out_ptr + row * D + HALF + o, (((q >> 4).to(tl.float32) - z) * s).to(out_ptr.dtype.element_ty))


def dequant_kv(kq, ks, kz):
    T, half = kq.shape
    out = torch.empty(T, 2 * half, dtype=torch.bfloat16, device=kq.device)
    dequant_kv_int4_kernel[(T,)](kq, ks, kz, out, D=2 * half, HALF=half)
    return out


# skel: ok fused-dequant-gemm
@triton.jit
def bf16_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # a plain GEMM on bf16 weights nobody quantised: nothing to dequantise
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :], mask=rn[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def linear_bf16(x, w):
    M, K = x.shape
    N = w.shape[1]
    c = torch.empty(M, N, dtype=x.dtype, device=x.device)
    bf16_matmul_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](x, w, c, M, N, K, x.stride(0), w.stride(0),
                                                                 c.stride(0), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    return c


# skel: ok fused-dequant-gemm
@triton.jit
def w8a8_block_fp8_matmul(A, B, C, As, Bs, M, N, K, stride_am, stride_bk, stride_cm, stride_as, stride_bs,
                          GROUP_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          BLOCK_K: tl.constexpr):
    # fp8 tiles and per-block scales, nothing packed: block-scaled-fp8-gemm's ground
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(A + rm[:, None] * stride_am + rk[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(B + rk[:, None] * stride_bk + rn[None, :], mask=rn[None, :] < N, other=0.0)
        a_s = tl.load(As + rm * stride_as + k0 // GROUP_K, mask=rm < M, other=0.0)
        b_s = tl.load(Bs + (k0 // GROUP_K) * stride_bs + rn // GROUP_K, mask=rn < N, other=0.0)
        acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc.to(C.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# skel: ok fused-dequant-gemm
@triton.jit
def unpack_mask_bits_kernel(bits_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # shifts and masks on loaded words, but a bitmask unpacked to bools, followed by no matmul
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    word = tl.load(bits_ptr + offs // 32, mask=offs < n, other=0)
    tl.store(out_ptr + offs, ((word >> (offs % 32)) & 1) != 0, mask=offs < n)


def unpack_mask(bits, n):
    out = torch.empty(n, dtype=torch.bool, device=bits.device)
    unpack_mask_bits_kernel[(triton.cdiv(n, 1024),)](bits, out, n, BLOCK=1024)
    return out.view(-1, 64).sum(-1)
