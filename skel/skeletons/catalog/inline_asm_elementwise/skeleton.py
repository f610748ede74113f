"""Emit a PTX instruction Triton does not expose, with `tl.inline_asm_elementwise`.

## What it does
Replaces a sequence of Triton integer and float operations that emulates one hardware
instruction with that instruction, written as inline PTX applied element by element:

    lo, hi = tl.inline_asm_elementwise(
        "{ .reg .b32 t, m; lop3.b32 t, $2, 0x000f000f, 0x64006400, 0xea;"
        "  mov.b32 m, 0x64006400; sub.f16x2 t, t, m; mov.b32 {$0, $1}, t; }",
        "=h,=h,r", [packed], dtype=(tl.float16, tl.float16), is_pure=True, pack=1)

Typical cases: unpacking 4-bit weights to fp16 two at a time (a `lop3` that ORs the nibbles
into the mantissa of the fp16 magic number 1024, then one `sub.f16x2` — the trick of
AWQ/Marlin dequantisation), rounding fp32 to TF32 with `cvt.rna.tf32.f32` instead of
bit-masking, packed conversions (`cvt.rn.f16x2.f32`, `cvt.rn.satfinite.e4m3x2.f32`),
`ex2.approx.f16x2` or `tanh.approx.f32` where no `tl.math` function lowers to them.

## Why it is faster
The emulation costs several instructions per element: for an int4 weight a shift, an AND,
an int-to-float conversion (a slow I2F on the conversion pipe), a subtract and a multiply.
The packed PTX form handles two values per 32-bit register in two ALU instructions and no
I2F at all. In a weight-only-quantised GEMM or a dequantisation kernel that unpacks every
weight on the fly, the unpacking sits on the critical path between the load and the MMA,
so halving its instruction count shows in the kernel time. For TF32 rounding or packed fp8
conversion the win is the same in kind: one instruction where Triton would emit a chain.

## Applies when
- the kernel unpacks sub-byte fields from loaded integers (`(w >> shift) & 0xF`, `& 0x3`)
  and converts them to floating point (`.to(tl.float16)`, a scale multiply) — an int4/int2
  dequantisation — or rounds fp32 to TF32 by masking its bits (`& 0xFFFFE000` on a bitcast);
- the target is NVIDIA (PTX): the asm string is backend-specific.

## Does not apply when
- the target is AMD (or another backend): PTX does not assemble there; keep the portable
  Triton form behind a backend check, or write the GCN equivalent;
- Triton already exposes the operation (`tl.exp2` lowers to `ex2.approx`, `tl.math.rsqrt`,
  `tl.fma`, fp8 casts with `.to(tl.float8e4nv)`): inline asm then only removes the
  compiler's freedom to schedule and fuse;
- the kernel must run under `TRITON_INTERPRET=1` (the interpreter raises
  `NotImplementedError: inline_asm not supported in interpreter mode`) or be portable
  across architectures older than the instruction (`cvt.rna.tf32` needs sm_80, `f16x2`
  math sm_53, `e4m3x2` conversions sm_89);
- the unpacked values are few per program (a scalar per row): nothing to gain;
- the output layout is not what the packed form yields: the halves come out as
  (nibble 0, nibble 4), (1, 5) ..., and interleaving them back (`tl.join` + `reshape`)
  must match the packing order of the weights.

## References
- lmdeploy `lmdeploy/pytorch/kernels/cuda/awq_kernels.py` (`_dequant_s4_to_f16x2`: `lop3.b32` + — at `8bdfa2d582`, before 2025-07-01
  `fma.rn.f16x2` / `sub.f16x2`, and `_unpack_weight`'s `tl.join`, v0.9.0)
- Triton API: `triton.language.inline_asm_elementwise` (`pack`, `is_pure`, tuple `dtype`)
- NVIDIA PTX ISA: `lop3`, `cvt` (`.rna.tf32.f32`, `.f16x2.f32`), `ex2.approx`
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import Flow, flow_of, receiver
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, custom

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.model import KernelFacts

#: A sub-byte field mask: a nibble or a 2-bit field, or a mask variable (`unpack_mask`).
_FIELD_MASK = re.compile(r"&\s*\(?\s*(0x0?[fF]|15|0x0?3|3|0b1111|0b11|\w*(?i:mask)\w*)\b")
#: Bit-masking fp32 down to TF32 (10 mantissa bits kept).
_TF32_MASK = re.compile(r"(?i)0xffffe000")
_FLOAT_TYPES = re.compile(r"float16|bfloat16|float32|\bfp16\b|\bbf16\b")
#: A cast target given as a variable (`meta_dtype`, `acc_dtype`): a float type in dequantisation.
_DTYPE_NAME = re.compile(r"(?i)[a-z_]*dtype\w*")


def _unpacked_names(fl: Flow) -> set[str]:
    """Names defined by shifting and masking out a sub-byte field (`(w >> 4) & 0xF`)."""
    out = set()
    for name, defs in fl.defs.items():
        for d in defs:
            text = fl.text(d.value)
            if ">>" in text and _FIELD_MASK.search(text):
                out.add(name)
    return out


def _subbyte_to_float(k: KernelFacts) -> list[int] | None:
    """Lines where sub-byte fields unpacked from integers become floats."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    unpacked = _unpacked_names(fl)
    lines = []
    for c in fl.calls:
        if c.name not in (".to", "tl.cast", ".cast"):
            continue
        if not any(_FLOAT_TYPES.search(fl.text(a)) or _DTYPE_NAME.fullmatch(fl.text(a)) for a in _args(c.node)):
            continue
        rec = receiver(c.node)
        subject = rec if rec is not None else (_args(c.node)[0] if _args(c.node) else None)
        if subject is None:
            continue
        text = fl.text(subject)
        names = fl.closure(subject)[0]
        if names & unpacked or (">>" in text and _FIELD_MASK.search(text)):
            lines.append(c.line)
    for d in (d for defs in fl.defs.values() for d in defs):
        if _TF32_MASK.search(fl.text(d.value)):
            lines.append(d.line)
    return lines


def _args(node: cst.Call) -> list[cst.BaseExpression]:
    """Every argument of a call, positional and keyword (`dtype=tl.float16` included)."""
    return [a.value for a in node.args]


INLINE_ASM = calls("tl.inline_asm_elementwise", name="inline-asm",
                   describe="`tl.inline_asm_elementwise`")
EMULATED_CONVERSION = custom(
    "emulated-conversion",
    "sub-byte fields unpacked with `>>` and `& 0xF` converted to float (int4 dequantisation), "
    "or fp32 masked to TF32 by hand",
    _subbyte_to_float)

SKELETON = Skeleton(
    id="inline-asm-elementwise",
    title="Inline PTX for an operation Triton does not expose",
    summary="tl.inline_asm_elementwise for an op Triton does not expose (packed int4->f16x2, cvt.rna.tf32, ex2.approx).",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=INLINE_ASM,
    preconditions=[EMULATED_CONVERSION],
    subject=EMULATED_CONVERSION,
    env=Env(backends=("cuda",)),
    helps=("compute",),
)
