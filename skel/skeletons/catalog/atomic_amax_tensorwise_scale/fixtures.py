# Fixtures for atomic-amax-tensorwise-scale: one-program scalar loops folding block absmaxes into
# a per-tensor quantisation scale, against the atomic form, vectorised reductions, per-row loops,
# unrolled short loops and scalar loops that are no quantiser's. Written for these tests after the
# shapes of torchao's float8nocompile kernels and aiter's per-tensor quantisers; none is copied.
import torch
import triton
import triton.language as tl


# skel: match atomic-amax-tensorwise-scale
@triton.jit
def fp8_scale_from_partials(block_amaxes_ptr, scale_out_ptr, num_elements, fp8_dtype_max, BLOCK_SIZE: tl.constexpr,
                            EPS: tl.constexpr):
    # one program walks the partials buffer element by element
    global_amax = tl.zeros([1], dtype=tl.float32)
    num_blocks = tl.cdiv(num_elements, BLOCK_SIZE)
    for i in range(num_blocks):
        block_max = tl.load(block_amaxes_ptr + i)
        global_amax = tl.maximum(global_amax, block_max)
    scale = fp8_dtype_max / tl.clamp(global_amax, min=EPS, max=float("inf"))
    tl.store(scale_out_ptr + tl.arange(0, 1), scale)


# skel: match atomic-amax-tensorwise-scale
@triton.jit
def int8_tensor_scale_kernel(partials, scale_ptr, n_partials, QMAX: tl.constexpr):
    # launched on a one-program grid; the running max folds the load directly
    pid = tl.program_id(0)
    amax = 0.0
    for i in range(n_partials):
        amax = tl.maximum(amax, tl.load(partials + pid * n_partials + i))
    tl.store(scale_ptr, tl.maximum(amax, 1e-8) / QMAX)


def int8_tensor_scale(partials):
    scale = torch.empty(1, device=partials.device)
    int8_tensor_scale_kernel[(1,)](partials, scale, partials.numel(), QMAX=127.0)
    return scale


# skel: ok atomic-amax-tensorwise-scale
# skel: uses atomic-amax-tensorwise-scale
@triton.jit
def block_amax_atomic(input_ptr, amax_ptr, num_elements, BLOCK_SIZE: tl.constexpr):
    # the technique: every block merges its absmax where it computes it
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    vals = tl.load(input_ptr + offs, mask=offs < num_elements, other=0.0).to(tl.float32)
    tl.atomic_max(amax_ptr, tl.max(tl.abs(vals)), sem="relaxed")


# skel: ok atomic-amax-tensorwise-scale
@triton.jit
def fp8_scale_vectorised(block_amaxes_ptr, scale_out_ptr, num_blocks, fp8_max, BLOCK: tl.constexpr):
    # one program, but the partials are loaded as vectors: latency is not the problem
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, num_blocks, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc = tl.maximum(acc, tl.load(block_amaxes_ptr + offs, mask=offs < num_blocks, other=0.0))
    tl.store(scale_out_ptr, tl.max(acc, 0) / fp8_max)


# skel: ok atomic-amax-tensorwise-scale
@triton.jit
def per_token_scale_scalar(x_ptr, scale_ptr, stride, n_cols, FP8_MAX: tl.constexpr):
    # one program per row: a row kernel (vectorise its loads), no tensor-wide merge
    row = tl.program_id(0)
    amax = 0.0
    for i in range(n_cols):
        amax = tl.maximum(amax, tl.abs(tl.load(x_ptr + row * stride + i)))
    tl.store(scale_ptr + row, amax / FP8_MAX)


def per_token_scales(x):
    s = torch.empty(x.shape[0], device=x.device)
    per_token_scale_scalar[(x.shape[0],)](x, s, x.stride(0), x.shape[1], FP8_MAX=448.0)
    return s


# skel: ok atomic-amax-tensorwise-scale
@triton.jit
def scale_from_four_partials(partials, scale_ptr, fp8_max: tl.constexpr):
    # four partials, unrolled at compile time: nothing serial to speak of
    amax = 0.0
    for i in tl.static_range(4):
        amax = tl.maximum(amax, tl.load(partials + i))
    tl.store(scale_ptr, amax / fp8_max)


# skel: ok atomic-amax-tensorwise-scale
@triton.jit
def expert_offsets_kernel(counts_ptr, offsets_ptr, max_count_ptr, num_experts):
    # a one-program scalar loop that is no quantiser's: a running max and sum of expert counts
    total = 0
    biggest = 0
    for e in range(num_experts):
        c = tl.load(counts_ptr + e)
        biggest = tl.maximum(biggest, c)
        tl.store(offsets_ptr + e, total)
        total += c
    tl.store(max_count_ptr, biggest)
