# Fixtures for swiglu-fused-activation: an activation kernel on the gate whose launcher
# multiplies by the `up` half outside it, against gated kernels that already load both
# halves, activations with no gate, and kernels whose launcher cannot be seen. Written for
# these tests after the shapes of the references (lightllm's and lmdeploy's silu_and_mul,
# Liger's and FLA's swish/swiglu kernels); none is copied.
import torch
import triton
import triton.language as tl


# skel: match swiglu-fused-activation
@triton.jit
def _silu_fwd_kernel(X, Y, n_elements, BLOCK: tl.constexpr):
    # SiLU written out on the gate half; the product with up is left to the host
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
    y = x / (1 + tl.exp(-x))
    tl.store(Y + offs, y.to(Y.dtype.element_ty), mask=mask)


def swiglu_ffn(gate_up):
    gate, up = gate_up.chunk(2, dim=-1)
    gate = gate.contiguous()
    act = torch.empty_like(gate)
    n = gate.numel()
    _silu_fwd_kernel[(triton.cdiv(n, 1024),)](gate, act, n, BLOCK=1024)
    return act * up


# skel: match swiglu-fused-activation
@triton.jit
def _gelu_tanh_rows(X, Y, stride_x, stride_y, N, BLOCK_N: tl.constexpr):
    # a GeGLU's GELU on the gate rows; the launcher multiplies by `x_up` in place afterwards
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    m = cols < N
    x = tl.load(X + row * stride_x + cols, mask=m, other=0.0).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = 0.5 * x * (1 + tl.extra.cuda.libdevice.tanh(inner))
    tl.store(Y + row * stride_y + cols, y, mask=m)


def geglu(x_gate, x_up):
    M, N = x_gate.shape
    y = torch.empty_like(x_gate)
    _gelu_tanh_rows[(M, triton.cdiv(N, 2048))](x_gate, y, x_gate.stride(0), y.stride(0), N, BLOCK_N=2048)
    y.mul_(x_up)
    return y


@triton.jit
def _silu(x):
    return x * tl.sigmoid(x)


# skel: match swiglu-fused-activation
@triton.jit
def act_kernel(g_ptr, o_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # the activation through a helper; the launcher's `up_out` never reaches the kernel
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    m = offs < n_cols
    g = tl.load(g_ptr + pid * stride + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(o_ptr + pid * stride + offs, _silu(g), mask=m)


def mlp_act(gate_out, up_out):
    o = torch.empty_like(gate_out)
    act_kernel[(gate_out.shape[0],)](gate_out, o, gate_out.stride(0), gate_out.shape[1],
                                     BLOCK_SIZE=triton.next_power_of_2(gate_out.shape[1]))
    o *= up_out
    return o


# skel: ok swiglu-fused-activation
# skel: uses swiglu-fused-activation
@triton.jit
def _swiglu_forward_kernel(a_ptr, b_ptr, c_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # the technique: gate and up loaded by one program, the product stored
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    a = tl.load(a_ptr + row * stride + offs, mask=mask, other=0).to(tl.float32)
    b = tl.load(b_ptr + row * stride + offs, mask=mask, other=0)
    c = (a * tl.sigmoid(a)).cast(b.dtype) * b
    tl.store(c_ptr + row * stride + offs, c, mask=mask)


def swiglu_forward(a, b):
    c = torch.empty_like(a)
    _swiglu_forward_kernel[(a.shape[0],)](a, b, c, a.stride(0), a.shape[1], BLOCK_SIZE=triton.next_power_of_2(a.shape[1]))
    return c


# skel: ok swiglu-fused-activation
# skel: uses swiglu-fused-activation
@triton.jit
def _silu_and_mul_loop(gateup_ptr, out_ptr, N, stride_m, stride_om, BLOCK_N: tl.constexpr):
    # both halves of one gate_up buffer, walked in column blocks
    m_id = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    gate_ptrs = gateup_ptr + m_id * stride_m + offs
    up_ptrs = gateup_ptr + m_id * stride_m + N + offs
    out_ptrs = out_ptr + m_id * stride_om + offs
    for _ in range(0, N, BLOCK_N):
        gate = tl.load(gate_ptrs).to(tl.float32)
        up = tl.load(up_ptrs).to(tl.float32)
        gate = gate / (1 + tl.exp(-gate))
        tl.store(out_ptrs, gate * up)
        gate_ptrs += BLOCK_N
        up_ptrs += BLOCK_N
        out_ptrs += BLOCK_N


# skel: ok swiglu-fused-activation
@triton.jit
def swish_fwd_kernel(x, y, T, D: tl.constexpr, BT: tl.constexpr, BD: tl.constexpr):
    # a plain swish activation: no up half anywhere in its launcher
    i_t = tl.program_id(0)
    o_t = i_t * BT + tl.arange(0, BT)
    o_d = tl.arange(0, BD)
    m = (o_t[:, None] < T) & (o_d[None, :] < D)
    b_x = tl.load(x + o_t[:, None] * D + o_d[None, :], mask=m, other=0.0).to(tl.float32)
    tl.store(y + o_t[:, None] * D + o_d[None, :], b_x * tl.sigmoid(b_x), mask=m)


def swish(x):
    T, D = x.shape
    y = torch.empty_like(x)
    swish_fwd_kernel[(triton.cdiv(T, 16),)](x, y, T, D, BT=16, BD=triton.next_power_of_2(D))
    return y


# skel: ok swiglu-fused-activation
@triton.jit
def silu_library_kernel(X, Y, n, BLOCK: tl.constexpr):
    # launched from another file: its caller, and whether it multiplies, cannot be seen
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(Y + offs, x * tl.sigmoid(x), mask=m)


# skel: ok swiglu-fused-activation
@triton.jit
def gelu_mlp_kernel(X, Y, n, BLOCK: tl.constexpr):
    # a non-gated MLP: the activation feeds the next GEMM, whose weight is `up_proj`'s sibling
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(Y + offs, 0.5 * x * (1 + tl.erf(x * 0.7071067811865476)), mask=m)


def gelu_mlp(x, up_proj, down_proj):
    h = x @ up_proj
    y = torch.empty_like(h)
    gelu_mlp_kernel[(triton.cdiv(h.numel(), 1024),)](h, y, h.numel(), BLOCK=1024)
    return y @ down_proj


# skel: ok swiglu-fused-activation
@triton.jit
def output_gate_kernel(O, G, Y, n, BLOCK: tl.constexpr):
    # a sigmoid output gate of two loaded tensors: already one kernel
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    o = tl.load(O + offs, mask=m, other=0.0)
    g = tl.load(G + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(Y + offs, o * tl.sigmoid(g), mask=m)


def gated_output(o, g, up):
    y = torch.empty_like(o)
    output_gate_kernel[(triton.cdiv(o.numel(), 1024),)](o, g, y, o.numel(), BLOCK=1024)
    return y
