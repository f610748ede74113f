"""fused-kv-cache-write-quant: quantise K/V in one pass, then scatter to the slots → one write kernel that quantises.

Harness format: docs/harness.md. The before/after launchers are the template shown.
A step's new keys and values `[T, H, D]` (bf16) go into an fp8 (e4m3) KV cache at the slots
`slot_mapping[t]`, with one fp32 scale per (slot, head): scale = absmax / 448. The before
runs two kernels: a per-token quantiser writing fp8 rows and scales to temporaries, then the
scatter copying them into the cache (5 bytes an element, two launches). The after loads each
token's rows once, reduces the per-head absmax in registers and stores the fp8 rows and the
scales straight into the slot (3 bytes an element, one launch): on a GPU it should take
about 3/5 of the before's time at prefill sizes, and one launch less at decode. Every slot
is written (the slots are a permutation of the tokens). The inputs are chosen so the answer
is exact: each head's row is fp8-representable values times its own power of two, one of
them at +-448 times it, so the scale is that power of two and x / scale needs no rounding.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(T=37, H=2, D=64),           # on the CPU: a token count that is no block multiple
    "decode": dict(T=256, H=8, D=128),       # a decode batch of 256 sequences, 8 KV heads (GQA)
    "prefill": dict(T=16384, H=8, D=128),    # a 16K-token prefill chunk: 64 MiB of bf16 K and V
    "prefill_mha": dict(T=8192, H=32, D=128),  # 32 KV heads (MHA): 128 MiB of bf16 K and V
}
CPU_SHAPES = ("tiny",)
FIXED = ("H", "D")
DTYPES = ("bfloat16",)
TOLERANCES = {"bfloat16": (0.0, 1e-6)}  # fp8 rows exact by construction; scales within fp32 division's ulps
FP8_MAX = 448.0


def _exact_rows(T, H, D, g, device):
    v = (torch.randn(T, H, D, generator=g, device=device) * 64).clamp(-FP8_MAX, FP8_MAX)
    v = v.to(torch.float8_e4m3fn).to(torch.float32)
    peak = torch.randint(0, D, (T, H, 1), generator=g, device=device)
    sign = torch.where(torch.rand(T, H, 1, generator=g, device=device) < 0.5, -1.0, 1.0)
    v.scatter_(2, peak, sign * FP8_MAX)
    e = torch.randint(0, 12, (T, H, 1), generator=g, device=device).to(torch.float32)
    return (v * torch.exp2(-e)).to(torch.bfloat16)


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    T, H, D = shape["T"], shape["H"], shape["D"]
    k = _exact_rows(T, H, D, g, device).to(dtype)
    v = _exact_rows(T, H, D, g, device).to(dtype)
    slot_mapping = torch.randperm(T, generator=g, device=device)
    return k, v, slot_mapping


def make_outputs(shape, dtype, device):
    T, H, D = shape["T"], shape["H"], shape["D"]
    return (torch.empty(T, H, D, dtype=torch.float8_e4m3fn, device=device),
            torch.empty(T, H, D, dtype=torch.float8_e4m3fn, device=device),
            torch.empty(T, H, dtype=torch.float32, device=device),
            torch.empty(T, H, dtype=torch.float32, device=device))


def reference(k, v, slot_mapping):
    out = []
    for x in (k, v):
        s = x.abs().amax(-1).clamp_min(1e-8) / FP8_MAX
        q = torch.empty_like(x)
        q[slot_mapping] = x / s[..., None]
        out.append((q, s))
    (kq, ks), (vq, vs) = out
    ks_c, vs_c = torch.empty_like(ks), torch.empty_like(vs)
    ks_c[slot_mapping], vs_c[slot_mapping] = ks, vs
    return kq, vq, ks_c, vs_c


def bytes_moved(shape, dtype):
    T, H, D = shape["T"], shape["H"], shape["D"]
    # the least traffic: K and V read once in bf16, written once in fp8, the scales written, the slots read
    return 2 * T * H * D * (torch.tensor([], dtype=dtype).element_size() + 1) + 2 * T * H * 4 + T * 8


def flops(shape, dtype):
    return 2 * 3 * shape["T"] * shape["H"] * shape["D"]


@triton.jit
def before_quant_kernel(k_ptr, v_ptr, kq_ptr, vq_ptr, ks_ptr, vs_ptr, H: tl.constexpr, D: tl.constexpr,
                 fp8_max: tl.constexpr):
    # pass 1: quantise every token's [H, D] rows into temporaries
    t = tl.program_id(0).to(tl.int64)
    o_h = tl.arange(0, H)
    o_hd = o_h[:, None] * D + tl.arange(0, D)[None, :]
    k = tl.load(k_ptr + t * H * D + o_hd).to(tl.float32)
    v = tl.load(v_ptr + t * H * D + o_hd).to(tl.float32)
    k_s = tl.maximum(tl.max(tl.abs(k), 1), 1e-8) / fp8_max
    v_s = tl.maximum(tl.max(tl.abs(v), 1), 1e-8) / fp8_max
    tl.store(kq_ptr + t * H * D + o_hd, (k / k_s[:, None]).to(kq_ptr.dtype.element_ty))
    tl.store(vq_ptr + t * H * D + o_hd, (v / v_s[:, None]).to(vq_ptr.dtype.element_ty))
    tl.store(ks_ptr + t * H + o_h, k_s)
    tl.store(vs_ptr + t * H + o_h, v_s)


@triton.jit
def before_scatter_kernel(kq_ptr, vq_ptr, ks_ptr, vs_ptr, k_cache, v_cache, k_scale_cache, v_scale_cache, slot_mapping,
                   H: tl.constexpr, D: tl.constexpr):
    # pass 2: read the temporaries back and copy them into the slots
    t = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_mapping + t)
    o_h = tl.arange(0, H)
    o_hd = o_h[:, None] * D + tl.arange(0, D)[None, :]
    tl.store(k_cache + slot * H * D + o_hd, tl.load(kq_ptr + t * H * D + o_hd))
    tl.store(v_cache + slot * H * D + o_hd, tl.load(vq_ptr + t * H * D + o_hd))
    tl.store(k_scale_cache + slot * H + o_h, tl.load(ks_ptr + t * H + o_h))
    tl.store(v_scale_cache + slot * H + o_h, tl.load(vs_ptr + t * H + o_h))


def before(k, v, slot_mapping, k_cache, v_cache, k_scale_cache, v_scale_cache):
    T, H, D = k.shape
    kq, vq = torch.empty_like(k_cache), torch.empty_like(v_cache)
    ks, vs = torch.empty_like(k_scale_cache), torch.empty_like(v_scale_cache)
    before_quant_kernel[(T,)](k, v, kq, vq, ks, vs, H=H, D=D, fp8_max=FP8_MAX, num_warps=4)
    before_scatter_kernel[(T,)](kq, vq, ks, vs, k_cache, v_cache, k_scale_cache, v_scale_cache, slot_mapping,
                                H=H, D=D, num_warps=4)


@triton.jit
def after_kernel(k_ptr, v_ptr, k_cache, v_cache, k_scale_cache, v_scale_cache, slot_mapping, H: tl.constexpr,
                 D: tl.constexpr, fp8_max: tl.constexpr):
    # one pass: the token's rows loaded once, per-head scales reduced in registers, fp8 stored to the slot
    t = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_mapping + t)
    o_h = tl.arange(0, H)
    o_hd = o_h[:, None] * D + tl.arange(0, D)[None, :]
    k = tl.load(k_ptr + t * H * D + o_hd).to(tl.float32)
    v = tl.load(v_ptr + t * H * D + o_hd).to(tl.float32)
    k_s = tl.maximum(tl.max(tl.abs(k), 1), 1e-8) / fp8_max
    v_s = tl.maximum(tl.max(tl.abs(v), 1), 1e-8) / fp8_max
    tl.store(k_cache + slot * H * D + o_hd, (k / k_s[:, None]).to(k_cache.dtype.element_ty))
    tl.store(v_cache + slot * H * D + o_hd, (v / v_s[:, None]).to(v_cache.dtype.element_ty))
    tl.store(k_scale_cache + slot * H + o_h, k_s)
    tl.store(v_scale_cache + slot * H + o_h, v_s)


def after(k, v, slot_mapping, k_cache, v_cache, k_scale_cache, v_scale_cache):
    T, H, D = k.shape
    after_kernel[(T,)](k, v, k_cache, v_cache, k_scale_cache, v_scale_cache, slot_mapping, H=H, D=D,
                       fp8_max=FP8_MAX, num_warps=4)
