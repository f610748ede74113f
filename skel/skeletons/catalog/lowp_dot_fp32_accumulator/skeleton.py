"""Feed `tl.dot` fp16/bf16 operands and keep only the accumulator in fp32.

## What it does
Casts fp32 tiles to the storage dtype (or bf16/fp16) right before the matmul and lets the
dot accumulate in fp32: `acc = tl.dot(p.to(v.dtype), v, acc)` with
`acc = tl.zeros([BM, BN], dtype=tl.float32)`, instead of `tl.dot(p, v.to(tl.float32))`.

## Why it is faster
Tensor cores run fp16/bf16 MMAs at twice the TF32 rate and many times the ieee fp32
rate, and half-width operands halve shared-memory traffic and registers per tile. The
fp32 accumulator keeps the error of the sum bounded: only each operand is rounded (8 bits
of mantissa for bf16, 11 for fp16). This is the standard recipe of the Triton matmul
tutorial and of flash-linear-attention's chunked kernels (`fla/ops/common/chunk_o.py`,
`chunk_fwd_kernel_o`: `tl.dot(b_A.to(b_v.dtype), b_v)`).

## Applies when
- a `tl.dot` inside a loop gets fp32 operands (tiles upcast with `.to(tl.float32)`, fp32
  intermediates such as softmax probabilities `p` or gated states) and asks for no
  particular precision (no `input_precision=`, no `allow_tf32=False`);
- the operands' error is bounded: probabilities in [0, 1], normalized activations, data
  that was fp16/bf16 in memory before an upcast (casting back loses nothing).

## Does not apply when
- the dot must match fp32: triangular solves, cumsum-by-matmul, inverses, long
  recurrences whose error compounds. Those are the `dot-input-precision-tf32x3` cases
  (more accuracy at tensor-core speed), the opposite direction of this skeleton — choose
  this one for throughput on tolerant operands, that one when the result must be close
  to fp32;
- the kernel states a precision (`input_precision="ieee"`/`"tf32x3"`, `allow_tf32=False`,
  or an autotuned `DOT_PRECISION`): that is a deliberate choice;
- the values exceed fp16 range (use bf16) or need more than 8 mantissa bits (keep fp32);
- the operand is a constant ones/triangular mask (see `native-cumsum`).

## References
- Triton tutorials `python/tutorials/03-matrix-multiplication.py` (`matmul_kernel`)
- Triton tutorials `python/tutorials/06-fused-attention.py` (`_attn_fwd_inner`: `p.to(...)` before the P·V dot)
- flash-linear-attention `fla/ops/gla/chunk.py` (`chunk_gla_fwd_kernel_o`: the fp32 gated `b_q * exp(b_g)` cast back with `.to(b_q.dtype)` before the dot, `b_o` kept in fp32) — at `49b00f0a94`, before 2025-07-01
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from skel.kernels.flow import args_of, call_name, calls_in, flow_of, has_kwarg, is_call, keywords, name_of, names_in
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, dot_operands_fp32, dot_operands_lowp, operand_dtype
from skel.skeletons.patterns import calls_where
from skel.skeletons.predicates.masks import triangular_ones

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.flow import Flow, Node
    from skel.kernels.model import Call, KernelFacts

_LOWP_OUT = ("float16", "bfloat16")


def _lowp_dot_fp32_out(c: Call, k: KernelFacts) -> bool:
    out = c.kwargs.get("out_dtype", "")
    return dot_operands_lowp(c, k) and not any(t in out for t in _LOWP_OUT)


def _deliberate_precision(c: Call) -> bool:
    prec = c.kwargs.get("input_precision")
    if prec is not None and prec.strip("'\" ") not in ("tf32",):
        return True  # ieee, tf32x3, bf16x3..., or a constexpr chosen elsewhere
    return "allow_tf32" in c.kwargs and "False" in c.kwargs["allow_tf32"]


def _switchable_upcast(fl: Flow, k: KernelFacts, node: cst.Call) -> bool:
    """An operand is upcast only under a constexpr flag (`if CAST_FP32: x = x.to(tl.float32)`):
    the kernel already offers both paths, the choice is the caller's."""
    flags = {p.name for p in k.params if p.constexpr}
    flag_ifs = {i["line"] for i in k.ifs if set(i.get("names", ())) & flags}
    for a in args_of(node)[:2]:
        name = name_of(a)
        if name is None:
            continue
        casts = [c for c in fl.named(".to") if name in c.targets and "float32" in fl.text(c.node)]
        if casts and all(any(line in flag_ifs for line, _ in c.branch) for c in casts):
            return True
    return False


def _lowp_cast(fl: Flow, value: Node) -> bool:
    if not is_call(value, ".to", "tl.cast"):
        return False
    call = cast("cst.Call", value)  # is_call tested its type
    if args_of(call) or keywords(call):
        text = fl.text(args_of(call)[-1] if args_of(call) else keywords(call)[0])
        return any(t in text for t in ("float16", "bfloat16", "float8", ".dtype", "element_ty"))
    return False


def _fp32_names(fl: Flow, k: KernelFacts) -> set[str]:
    """Names holding fp32 tensors: typed by the facts (casts, fp32 zeros), `tl.dot` results,
    and values computed from those without a cast back to low precision."""
    fp32 = {n for n, t in k.var_dtypes.items() if t == "fp32"}
    changed = True
    while changed:
        changed = False
        for n, defs in fl.defs.items():
            if n in fp32 or any(_lowp_cast(fl, d.value) for d in defs):
                continue
            for d in defs:
                dots = [c for c in calls_in(d.value) if call_name(c) == "tl.dot" and not has_kwarg(c, "out_dtype")]
                if dots or names_in(d.value) & fp32 and d.op == "=":
                    fp32.add(n)
                    changed = True
                    break
    return fp32


def _operands_fp32(fl: Flow, k: KernelFacts, c: Call, node: cst.Call) -> bool:
    if dot_operands_fp32(c, k):
        return True
    if len(args_of(node)) < 2:
        return False
    fp32 = _fp32_names(fl, k)
    return all(name_of(a) in fp32 or operand_dtype(fl.text(a), k) == "fp32" for a in args_of(node)[:2])


def _fp32_dot(c: Call, k: KernelFacts) -> bool:
    """A `tl.dot` on fp32 operands with no stated precision, not a triangular-ones matmul
    and not upcast only under a constexpr flag."""
    if _deliberate_precision(c):
        return False
    fl = flow_of(k)
    node = next((x.node for x in fl.named("tl.dot") if x.line == c.line), None)
    if node is None or not _operands_fp32(fl, k, c, node):
        return False
    return not (any(triangular_ones(fl, a) for a in args_of(node)[:2]) or _switchable_upcast(fl, k, node))


def _precision_stated(c: Call, k: KernelFacts) -> bool:
    return _deliberate_precision(c)


PRECISION_STATED = calls("tl.dot", where=_precision_stated, name="dot-precision-stated",
                         describe="a `tl.dot` with a stated precision (ieee / tf32x3 / allow_tf32=False / a constexpr)")
LOWP_OPERAND_DOT = calls("tl.dot", where=_lowp_dot_fp32_out, name="lowp-operand-dot",
                         describe="a `tl.dot` on fp16/bf16/fp8 operands (cast or typed) with an fp32 result")
FP32_DOT_IN_LOOP = calls_where(
    "tl.dot", in_loop=True, where=_fp32_dot, name="fp32-dot-in-loop",
    describe="a `tl.dot` in a loop on fp32 operands with no stated precision (not a triangular-ones matmul)")

SKELETON = Skeleton(
    id="lowp-dot-fp32-accumulator",
    title="Low-precision dot operands, fp32 accumulator",
    summary="Cast fp32 tiles to bf16/fp16 before tl.dot and accumulate in fp32: 2x+ MMA throughput, bounded error.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=LOWP_OPERAND_DOT,
    preconditions=[FP32_DOT_IN_LOOP, ~PRECISION_STATED],
    subject=FP32_DOT_IN_LOOP,
    env=Env(),
    helps=("compute",),
)
