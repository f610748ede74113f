"""Use tl.dot_scaled for MX (mxfp8/mxfp4) operands with e8m0 scales instead of dequantising them by hand.

## What it does
MX formats (OCP Microscaling) store fp8 (e4m3/e5m2) or fp4 (e2m1, two per byte) elements
with one shared power-of-two scale per 32 elements along K, encoded as an 8-bit exponent
(e8m0, bias 127). A kernel without native support decodes the scales and dequantises each
tile before a bf16 `tl.dot`:

    s = tl.exp2(a_scale.to(tl.float32) - 127.0)      # or (a_scale.to(tl.int32) << 23) bitcast to fp32
    a = (a.to(tl.float32) * s).to(tl.bfloat16)       # per 32-element group
    acc = tl.dot(a, b, acc)

`tl.dot_scaled` hands the raw operands and their e8m0 scales to the hardware:

    acc = tl.dot_scaled(a, a_scale, "e4m3", b, b_scale, "e4m3", acc)   # a_scale: [BM, BK // 32] uint8

## Why it is faster
Blackwell (sm_100, `tcgen05.mma` with block scales) and MI355 (gfx950 scaled MFMA) apply
the scales inside the MMA: fp8 runs at 2x and fp4 at 4x the bf16 rate, the operands stay
1 or 0.5 byte per value in shared memory, and the dequantisation (an exp2 or shift, a
multiply and a cast per element) leaves the loop. By hand, the kernel runs at bf16 rate
with extra ALU work per element.

## Applies when
- a `tl.dot` kernel decodes e8m0 scales itself (`exp2(s - 127)`, `s << 23` bitcast to fp32)
  and multiplies them into the operand tiles before the dot;
- the target has native scaled MMA: sm_100+ (Triton 3.3+) or gfx950.

## Does not apply when
- Hopper / Ampere / MI300: `tl.dot_scaled` is emulated there (Triton upcasts to bf16 before
  the dot), so there is no speedup to expect;
- scales are fp32 per 128-block (DeepSeek-style): that is `block-scaled-fp8-gemm`, not MX;
- the kernel already calls `tl.dot_scaled`;
- the e8m0 arithmetic is a quantiser (UE8M0 scale rounding `exp2(ceil(log2(s)))` with no
  `tl.dot`): nothing to multiply.
Scales must be laid out as `[M, K // 32]` and `[N, K // 32]` (the rhs scale is not
transposed); fp4 operands are packed two per byte along K; the interpreter (TRITON_INTERPRET=1)
cannot run `tl.dot_scaled`.

## References
- Triton `python/triton/language/core.py` (`dot_scaled`) and `python/test/unit/language/test_matmul.py` (`mxfp_matmul`)
- aiter `aiter/ops/triton/gemm_afp4wfp4.py` (`_gemm_afp4_wfp4_kernel`, `tl.dot_scaled` with e2m1; commit 3703a6e300fce12ea1a683641ee50a31cb666a55, 2025-06-26)
- aiter `aiter/ops/triton/moe_op_mxfp4.py` (`_fused_moe_kernel_mxfp4`; same commit) — at `449d939092`, before 2025-07-01
- OCP Microscaling Formats (MX) Specification v1.0 (2023)
"""

from __future__ import annotations

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls
from skel.skeletons.predicates.e8m0 import E8M0_DECODE

DOT_SCALED = calls("tl.dot_scaled", name="dot-scaled", describe="`tl.dot_scaled`")
DOT_IN_LOOP = calls("tl.dot", in_loop=True, name="gemm-loop", describe="a `tl.dot` in a K loop")

SKELETON = Skeleton(
    id="dot-scaled-mx",
    title="tl.dot_scaled for MX (mxfp8/mxfp4) operands",
    summary="MX operands with e8m0 scales: tl.dot_scaled (native scaled MMA on sm_100+/gfx950), not a manual dequant.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=DOT_SCALED,
    preconditions=[E8M0_DECODE, DOT_IN_LOOP],
    subject=E8M0_DECODE,
    env=Env(min_cc=100, triton=">=3.3"),  # native block-scaled MMA: Blackwell, Triton 3.3+
    helps=("compute", "memory"),
)
