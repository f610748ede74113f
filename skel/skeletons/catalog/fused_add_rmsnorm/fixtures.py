# Fixtures for fused-add-rmsnorm: a row norm (RMSNorm or LayerNorm) launched by a host
# function that adds the residual first (a torch add, an add kernel, a residual tensor the
# kernel never sees) against norms that already take the residual, norms with no residual
# in sight, and kernels that are not norms. Written for these tests after the shapes of
# the references (flash-attention's Triton layernorm, FlagGems' skip/fused-add RMSNorm,
# lightllm's and Liger's RMSNorm launchers); none is copied.
import torch
import triton
import triton.language as tl


# skel: match fused-add-rmsnorm
@triton.jit
def rmsnorm_fwd_kernel(X, W, Y, stride_x, stride_y, N, eps, BLOCK_N: tl.constexpr):
    # a plain RMSNorm; its launcher has already summed the residual into `x` on the host
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    var = tl.sum(x * x, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask)
    tl.store(Y + row * stride_y + cols, (x * rstd).to(Y.dtype.element_ty) * w, mask=mask)


def rmsnorm_with_residual(x, residual, weight, eps=1e-6):
    x = x + residual
    y = torch.empty_like(x)
    M, N = x.shape
    rmsnorm_fwd_kernel[(M,)](x, weight, y, x.stride(0), y.stride(0), N, eps, BLOCK_N=triton.next_power_of_2(N))
    return y, x


# skel: ok fused-add-rmsnorm
@triton.jit
def _residual_add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # the add kernel of the pair below: not a norm
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


# skel: match fused-add-rmsnorm
@triton.jit
def _layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    # a LayerNorm launched right after an add kernel writes its input
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    tl.store(Y + row * stride + cols, xc * rstd * w + b, mask=mask)


def add_layer_norm(x, h, weight, bias, eps):
    M, N = x.shape
    s = torch.empty_like(x)
    _residual_add_kernel[(triton.cdiv(x.numel(), 1024),)](x, h, s, x.numel(), BLOCK=1024)
    y = torch.empty_like(x)
    mean = torch.empty(M, device=x.device, dtype=torch.float32)
    rstd = torch.empty(M, device=x.device, dtype=torch.float32)
    _layer_norm_fwd[(M,)](s, y, weight, bias, mean, rstd, s.stride(0), N, eps, BLOCK_SIZE=triton.next_power_of_2(N))
    return y, s


# skel: match fused-add-rmsnorm
@triton.jit
def _rms_norm_fwd_looped(X, W, Y, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    # two column passes; the launcher adds the residual in place with `.add_` first
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += a * a
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / N + eps)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        w = tl.load(W + cols, mask=cols < N)
        tl.store(Y + cols, a * rstd * w, mask=cols < N)


def rms_norm_prenorm(hidden_states, res, weight, eps):
    res.add_(hidden_states)
    y = torch.empty_like(res)
    M, N = res.shape
    _rms_norm_fwd_looped[(M,)](res, weight, y, res.stride(0), N, eps, BLOCK_SIZE=min(4096, triton.next_power_of_2(N)))
    return y, res


# skel: ok fused-add-rmsnorm
# skel: uses fused-add-rmsnorm
@triton.jit
def _layer_norm_fwd_1pass(X, Y, W, RESIDUAL, RESIDUAL_OUT, stride_x, stride_res, N, eps,
                          HAS_RESIDUAL: tl.constexpr, BLOCK_N: tl.constexpr):
    # the technique: the residual added to the loaded row, stored, and normalised from registers
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        r = tl.load(RESIDUAL + row * stride_res + cols, mask=mask, other=0.0).to(tl.float32)
        x += r
        tl.store(RESIDUAL_OUT + row * stride_res + cols, x, mask=mask)
    rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask)
    tl.store(Y + row * stride_x + cols, x * rstd * w, mask=mask)


def layer_norm_fn(x, weight, residual=None, eps=1e-6):
    M, N = x.shape
    y = torch.empty_like(x)
    residual_out = torch.empty_like(x) if residual is not None else None
    _layer_norm_fwd_1pass[(M,)](x, y, weight, residual, residual_out, x.stride(0), N, N, eps,
                                HAS_RESIDUAL=residual is not None, BLOCK_N=triton.next_power_of_2(N))
    return y, residual_out


# skel: ok fused-add-rmsnorm
# skel: uses fused-add-rmsnorm
@triton.jit
def skip_rmsnorm_kernel(Y, X, Rsd, W, stride, N, eps, BLOCK: tl.constexpr):
    # two loaded rows added before the statistic (the residual pointer named freely)
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + pid * stride + cols, mask, other=0.0).to(tl.float32)
    r = tl.load(Rsd + pid * stride + cols, mask, other=0.0).to(tl.float32)
    x = x + r
    rrms = 1 / tl.sqrt(tl.sum(x * x / N, axis=0) + eps)
    w = tl.load(W + cols, mask=mask, other=0.0)
    tl.store(Y + pid * stride + cols, (x * rrms).to(Y.dtype.element_ty) * w, mask=mask)


# skel: ok fused-add-rmsnorm
@triton.jit
def rmsnorm_plain(X, W, Y, stride, N, eps, BLOCK: tl.constexpr):
    # a norm of its input, no residual anywhere in its launcher
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask)
    tl.store(Y + row * stride + cols, x * rstd * w, mask=mask)


def rmsnorm(x, weight, eps):
    y = torch.empty_like(x)
    rmsnorm_plain[(x.shape[0],)](x, weight, y, x.stride(0), x.shape[1], eps, BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


# skel: ok fused-add-rmsnorm
@triton.jit
def qk_rmsnorm_library_kernel(X, W, Y, stride, D, eps, BD: tl.constexpr):
    # a norm launched from another file: no caller in sight, nothing says a residual is added
    i = tl.program_id(0)
    o = tl.arange(0, BD)
    m = o < D
    b_x = tl.load(X + i * stride + o, mask=m, other=0.0).to(tl.float32)
    b_rstd = tl.rsqrt(tl.sum(b_x * b_x, axis=0) / D + eps)
    tl.store(Y + i * stride + o, b_x * b_rstd * tl.load(W + o, mask=m), mask=m)


# skel: ok fused-add-rmsnorm
@triton.jit
def rmsnorm_postadd(X, W, Y, stride, N, eps, BLOCK: tl.constexpr):
    # the residual is added to the norm's output after the launch: an epilogue, not this fusion
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(Y + row * stride + cols, x * rstd * tl.load(W + cols, mask=mask), mask=mask)


def sandwich_norm(x, residual, weight, eps):
    y = torch.empty_like(x)
    rmsnorm_postadd[(x.shape[0],)](x, weight, y, x.stride(0), x.shape[1], eps, BLOCK=triton.next_power_of_2(x.shape[1]))
    return y.add_(residual)


# skel: ok fused-add-rmsnorm
@triton.jit
def gelu_with_skip_kernel(X, Y, n, BLOCK: tl.constexpr):
    # an activation whose launcher reads a skip tensor: not a norm (no squared-row statistic)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(Y + offs, 0.5 * x * (1 + tl.erf(x * 0.7071067811865476)), mask=m)


def gelu_skip(x, skip):
    x = x + skip
    y = torch.empty_like(x)
    gelu_with_skip_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y
