"""Block-scaled FP8 GEMM: tl.dot on the fp8 tiles, the per-block scales applied to the fp32 partial of each K block.

## What it does
With DeepSeek-style fine-grained quantisation, A is fp8 with one scale per (row, 128-column
group) and B is fp8 with one scale per 128x128 block. A kernel that dequantises in the K
loop — `a = (a.to(tl.float32) * a_s[:, None]).to(tl.bfloat16)`, the same for `b`, then a
bf16 `tl.dot` — runs the MMA at bf16 rate and does two elementwise passes per tile. Since a
K block of 128 (or a divisor of it) lies inside one scale group, the scales factor out of
that block's partial product:

    a_s = tl.load(a_scale + offs_m * stride_asm + k // GROUP_K)            # [BLOCK_M]
    b_s = tl.load(b_scale + (offs_n // GROUP_N) * stride_bsn + k // GROUP_K)  # [BLOCK_N]
    acc += tl.dot(a_fp8, b_fp8) * a_s[:, None] * b_s[None, :]

so the MMA consumes the fp8 tiles directly and the scales cost one [BLOCK_M, BLOCK_N]
multiply per K block.

## Why it is faster
FP8 MMA has twice the bf16 throughput on Hopper/Ada (and on MI300), the operand tiles stay
1 byte per value in shared memory (twice the tile per stage), and the per-element
dequantisation work disappears from the loop — only BLOCK_M + BLOCK_N scales per K block
are loaded. Compute-bound shapes approach 2x; decode-sized ones gain from the halved tile
traffic.

## Applies when
- a `tl.dot` in the K loop takes operands dequantised in that loop: a loaded tile multiplied
  by a loaded scale (`b.to(tl.float32) * b_s`) and cast to bf16/fp16;
- the scales are per block along K (one per 128-wide K group): a K block never straddles
  two scale groups (make `BLOCK_K` divide the group);
- the hardware has fp8 MMA: sm_89+ (Ada, Hopper, Blackwell) or MI300-class ROCm.

## Does not apply when
- the scales are MX e8m0 exponents (`exp2(s - 127)`, 32 values per scale): use
  `tl.dot_scaled` (`dot-scaled-mx`);
- the kernel already applies scales to the dot result (`tl.dot(a, b) * a_s[:, None] *
  b_s[None, :]`) or uses `tl.dot_scaled` (MX formats, see `dot-scaled-mx`);
- per-tensor or per-channel scales: those factor out of the whole K loop — apply them once
  in the epilogue instead of per K block;
- int4/uint4 weight-only GEMMs (GPTQ/AWQ) with bf16 activations: there is no fp8 operand
  pair for the MMA; dequantising to the activation dtype is the standard form;
- attention over an int8/fp8 KV cache (dequantised K/V tiles inside an online softmax):
  fp8 attention is a different design;
- pre-sm_89 GPUs: no fp8 MMA (Triton upcasts fp8 `tl.dot` to fp16).
Accumulate in fp32 and multiply the partial product, not the accumulator: scaling `acc`
itself mixes K blocks with different scales.

## References
- vLLM `vllm/model_executor/layers/quantization/utils/fp8_utils.py` (`_w8a8_block_fp8_matmul`, `w8a8_block_fp8_matmul`)
- SGLang `kernels/ops/gemm/fp8_kernel.py` (`_w8a8_block_fp8_matmul`)
- lmdeploy `lmdeploy/pytorch/kernels/cuda/blocked_gemm_fp8.py` (`_gemm_fp8_kernel`; v0.9.0)
- lmdeploy `lmdeploy/pytorch/kernels/cuda/blocked_fp8_fused_moe.py` (`fused_moe_blocked_f8_kernel`; v0.9.0)
- DeepSeek-V3 technical report (2024), section 3.3: 128x128 weight blocks, 1x128 activation tiles
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import args_of, binary, flow_of, names_in, operands, walk
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, custom
from skel.skeletons.patterns import assigns
from skel.skeletons.predicates.e8m0 import E8M0_DECODE
from skel.skeletons.predicates.softmax_loops import ONLINE_SOFTMAX_LOOP

if TYPE_CHECKING:
    from skel.kernels.model import Assign, KernelFacts

#: Scale names: `a_scale`, `w_scales`, `a_s`, `Bs`, `descale_k`, `x_sf` (not `i_s`, a block start).
_SCALE = re.compile(r"(?i)\w*scales?\w*|(a|b|w|x|y|in|out)_?s(_\w*)?|\w*descale\w*|\w*_sf")


def _scale_names(k: KernelFacts, in_loop: bool = False) -> set[str]:
    """Names loaded from a scale pointer at an offset (`a_s = tl.load(As + offs_m * s + k // G)`);
    ``in_loop``: only loads inside a loop (one scale per K block). A softmax `sm_scale`
    argument is never loaded, so it is not one."""
    out = set()
    for c in k.calls_named("tl.load"):
        if in_loop and not c.loop_depth:
            continue
        if c.target and c.args and "+" in c.args[0] and (
                _SCALE.fullmatch(c.target) or _SCALE.match(c.args[0].strip("( "))):
            out.add(c.target)
    return out


def _reads_scale(a: Assign, k: KernelFacts) -> bool:
    """The assignment reads a loaded scale (`a_s`, `b_s`)."""
    return bool(set(a.names) & _scale_names(k))


def _dequantised_operands(k: KernelFacts) -> list[int]:
    """A `tl.dot` in a loop whose operand is a tile multiplied by a scale loaded in that loop
    (`b = (b.to(tl.float32) * b_s).to(tl.bfloat16)`, or `tl.dot(a, b * s)`): a product with
    the scale on one side, not merely a loaded tile that happens to be called `b_s`."""
    fl = flow_of(k)
    if not fl.ok:
        return []
    scales = _scale_names(k, in_loop=True)
    if not scales:  # no product can have a scale on one side
        return []
    lines = []
    for c in fl.named("tl.dot"):
        if not c.loops:
            continue
        loop = c.loops[-1]
        for arg in args_of(c.node)[:2]:
            _, exprs = fl.closure(arg, within=loop)
            if any(binary(n, "*") and any(names_in(side) & scales for side in operands(n))
                   for e in [arg, *exprs] for n in walk(e)):
                lines.append(c.line)
                break
    return lines


#: `acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]` in a loop: scales on each K block's partial
SCALED_PARTIALS = assigns(
    calling=("tl.dot",), in_loop=True, value=r"tl\.dot\([^()]*(\([^()]*\)[^()]*)*\)\s*\*", where=_reads_scale,
    name="scaled-dot-partials",
    describe="scales applied to each K block's `tl.dot` partial (`tl.dot(a, b) * a_s[:, None] * b_s`)")
DOT_SCALED = calls("tl.dot_scaled", name="dot-scaled", describe="`tl.dot_scaled` (hardware block scales)")
DEQUANT_IN_LOOP = custom("dequantised-dot-operands",
                         "a `tl.dot` operand dequantised in the K loop (a loaded tile times a loaded scale)",
                         _dequantised_operands)

#: int4 weight-only GEMMs unpack with shifts (`(w >> shifts) & 0xF`: packed int4 weights,
#: GPTQ/AWQ, unpacked in the loop): no fp8 operand pair for the MMA.
NOT_PACKED_INT4 = ~assigns(value=">>", name="packed-int4",
                           describe="packed int4 weights unpacked with shifts (`w >> s & 0xF`)")
#: Attention over a quantised KV cache dequantises K/V tiles too, but inside an online
#: softmax: fp8 attention is another technique, not a block-scaled GEMM.
NOT_ATTENTION = ~ONLINE_SOFTMAX_LOOP
#: e8m0 (MX) scales decoded by hand belong to `tl.dot_scaled` (`dot-scaled-mx`).
NOT_MX = ~E8M0_DECODE

SKELETON = Skeleton(
    id="block-scaled-fp8-gemm",
    title="Block-scaled FP8 GEMM: fp8 tl.dot, scales on each K block's partial",
    summary="FP8 GEMM with block scales: tl.dot on fp8 tiles, a_s x b_s applied to each K block's fp32 partial.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=SCALED_PARTIALS | DOT_SCALED,
    preconditions=[DEQUANT_IN_LOOP, NOT_PACKED_INT4, NOT_ATTENTION, NOT_MX],
    subject=DEQUANT_IN_LOOP,
    env=Env(min_cc=89),  # fp8 MMA: Ada, Hopper, Blackwell
    helps=("compute", "memory"),
)
