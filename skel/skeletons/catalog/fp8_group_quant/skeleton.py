"""Quantise activations per token group (e.g. 128 values, one scale each) to FP8/INT8 in one fused pass.

## What it does
Block-scaled FP8 GEMMs (DeepSeek-style w8a8 with 128x128 weight blocks, DeepGEMM) take the
activation as 8-bit values plus one fp32 scale per `(token, 128-column group)`. The
quantiser computes, for each group in registers,

    absmax = max(|x|)                    # tl.max(tl.abs(x), axis)
    scale  = max(absmax, eps) / FP8_MAX  # 448 for e4m3, 127 for int8
    q      = clamp(x / scale, -FP8_MAX, FP8_MAX).to(fp8)

and stores `q` and `scale` from the same program. Unfused forms read the activation twice
(an absmax pass that writes scales, then a quantise pass that loads them back) or write the
producer's bf16 output and quantise it in a separate launch; the fused form reads it once,
and the best form quantises inside the producer (SiLU-and-mul, RMSNorm) before its store.

## Why it is faster
Quantisation is memory-bound: 2 bytes in, 1 byte + 4/128 bytes out per value. A separate
absmax pass adds a full read of the activation (~1.7x the fused traffic); a separate quant
launch after the producer adds a bf16 write and read (the producer's output round trip).
Fused, the group's absmax is a register reduction over values already loaded.

## Applies when
- the kernel converts to an 8-bit type (`.to(tl.float8e4nv)`, `.to(out_ptr.dtype.element_ty)`
  of a clamped value) with quantiser bounds (`fp8_max`, 448., 127.), and
- its scales come from memory at an offset (`tl.load(scale_ptr + row * stride + g)`,
  written by an earlier absmax pass) instead of from the values it loaded; or
- an elementwise kernel's launcher quantises its output right after the launch
  (`per_token_group_quant_fp8(out, 128)`): fuse the group quantisation into its epilogue.

## Does not apply when
- the scale is static (calibrated per-tensor scale loaded from a bare pointer): there is
  no absmax to fuse;
- the kernel already computes `tl.max(tl.abs(x))` of what it quantises (fused already);
- the consumer GEMM takes per-tensor or per-token scales: group scales are extra traffic
  and a different numeric contract (switch only together with the GEMM);
- dequantisation (8-bit in, wide out): nothing is quantised;
- a matmul or attention kernel casting to fp8 with loaded descales (`tl.dot` work): the
  scales there are the operands', not an activation quantiser's.
Keep the group size a constexpr (`GROUP_SIZE = 128`) so the reduction is one block; clamp
the scale with an eps (an all-zero group gives scale 0 and NaNs); DeepGEMM wants
column-major, TMA-aligned scales and optionally UE8M0 (power-of-two) scales:
`tl.exp2(tl.ceil(tl.log2(scale)))`.

## References
- SGLang `kernels/ops/quantization/fp8_kernel.py` (`_per_token_group_quant_8bit`, `_per_token_group_quant_8bit_colmajor`)
- vLLM `vllm/model_executor/layers/quantization/utils/fp8_utils.py` (`_per_token_group_quant_fp8`, `_per_token_group_quant_fp8_colmajor`)
- lmdeploy `lmdeploy/pytorch/kernels/cuda/blocked_gemm_fp8.py` (`_quant_fp8_kernel`, `quant_fp8`; v0.9.0)
- lmdeploy `lmdeploy/pytorch/kernels/cuda/ep_moe.py` (`_silu_and_mul_post_quant_kernel`: SiLU-and-mul fused with group quant; v0.9.0)
- DeepSeek-V3 technical report (2024), section 3.3: fine-grained (1x128 tile) activation quantisation
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, constant, custom, uses_name
from skel.skeletons.patterns import calls_where
from skel.skeletons.predicates.dots import no_dot
from skel.skeletons.predicates.host import calls_after_launch, launch_lines

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

#: An 8-bit destination type, written out or taken from the output pointer.
_EIGHT_BIT = re.compile(r"tl\.(float8\w*|int8|uint8)|\w*(fp8|int8|q)_?dtype\w*|\w*element_ty\b")
_SCALE_PTR = re.compile(r"(?i)\s*\(?\s*(\w*scales?\w*|\w*_s_ptr\w*|\w*_s|s_ptr\w*|\w*absmax\w*)\s*\+")
#: A host quantiser called on a kernel's output (not a dequantiser).
_HOST_QUANT = re.compile(r"(?i)(?<!de)(?<!de_)quant\w*$")

QUANT_BOUNDS = uses_name(
    r"(?i)\w*(fp8|int8|quant|q)_?(max|min)\w*|\w*FP8_MAX\w*|Q_?MAX|MAX_?Q\w*|qmax|qmin|\w*finfo\w*",
    name="quant-bounds", describe="quantiser bounds (`fp8_max`, `Q_MAX`)") | constant(
    r"^-?(448|127|57344|240)(\.0*)?$", name="quant-bounds", describe="quantiser bounds (448., 127.)")
EIGHT_BIT_CAST = calls(".to", where=lambda c, k: bool(c.args) and bool(_EIGHT_BIT.search(c.args[0])),
                       name="eight-bit-cast", describe="a cast to an 8-bit type (`.to(tl.float8e4nv)`)")
QUANTISES = EIGHT_BIT_CAST & QUANT_BOUNDS


def _of_abs(c: Call, k: KernelFacts) -> bool:
    """`tl.max(tl.abs(x))`: the quantiser's absmax computed from the loaded values."""
    abs_names = {t for a in k.assigns if "tl.abs" in a.calls for t in a.targets}
    return any("tl.abs(" in a or a.strip() in abs_names for a in c.args)


def _at_scale_offset(c: Call, k: KernelFacts) -> bool:
    """A scale loaded at an offset (`tl.load(scale_ptr + row * stride_s + g)`): written by
    an earlier absmax pass. A bare `tl.load(scale_ptr)` is a static per-tensor scale."""
    return bool(c.args) and bool(_SCALE_PTR.match(c.args[0]))


def _host_quant_after(k: KernelFacts) -> list[int]:
    """All of the kernel's launches, when the launcher quantises its output after one."""
    return launch_lines(k) if calls_after_launch(k, _HOST_QUANT) else []


ABSMAX_IN_KERNEL = calls_where("tl.max", "tl.maximum", where=_of_abs, name="absmax-in-kernel",
                               describe="an absmax of the loaded values (`tl.max(tl.abs(x))`)")
SCALES_FROM_MEMORY = calls_where("tl.load", where=_at_scale_offset, name="scales-from-memory",
                                 describe="scales loaded at an offset (`tl.load(scale_ptr + ...)`), computed by another pass")
HOST_QUANT_AFTER = custom("host-quant-after-launch",
                          "the launcher quantises the kernel's output right after the launch (`*_quant(out)`)",
                          _host_quant_after)
UNFUSED_QUANT = (QUANTISES & SCALES_FROM_MEMORY) | HOST_QUANT_AFTER
#: Quantisers and their producers are elementwise; an attention or GEMM kernel casting P or
#: its output to fp8 with loaded descales is not a quantiser to fuse.
_MATMUL_NAME = re.compile(r"(?i)attn|attention|matmul|gemm|\bmm\b|_mm_|dot")


def _matmul_by_name(k: KernelFacts) -> list[int]:
    """The kernel, or a jit helper it calls (`_attn_fwd_inner`), is named for a matmul: its
    `tl.dot` may sit in that helper, out of sight of the kernel's own facts."""
    if _MATMUL_NAME.search(k.name):
        return [k.line_start]
    return [c.line for c in k.calls if "." not in c.name and _MATMUL_NAME.search(c.name)]


ELEMENTWISE = no_dot("quantisers are elementwise") & ~custom(
    "matmul-helper", "a kernel or jit helper named for attention / a GEMM", _matmul_by_name)

SKELETON = Skeleton(
    id="fp8-group-quant",
    title="Fused per-token-group FP8/INT8 activation quantisation",
    summary="Quantise activations per token group (128 values, one scale each) in one pass: absmax, scale, cast.",
    category=Category.FUSION,
    doc=__doc__,
    present=ABSMAX_IN_KERNEL & QUANTISES,
    preconditions=[UNFUSED_QUANT, ELEMENTWISE],
    subject=UNFUSED_QUANT,
    env=Env(),
    helps=("memory",),
)
