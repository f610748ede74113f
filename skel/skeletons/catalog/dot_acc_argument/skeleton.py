"""Accumulate inside the MMA: `acc = tl.dot(a, b, acc)` instead of `acc += tl.dot(a, b)`.

## What it does
Passes the running accumulator as the third argument of `tl.dot` (`acc = tl.dot(a, b, acc)`,
or `acc=acc`) instead of computing a fresh product and adding it (`acc += tl.dot(a, b)` /
`acc = acc + tl.dot(a, b)`).

## Why it is faster
Tensor-core MMAs compute `D = A·B + C` natively. With the accumulator passed in, the
product lands directly in the accumulator registers (and on Hopper the wgmma chain can
keep accumulating asynchronously); the separate form materializes a zero-initialized
product tile and then issues an elementwise add over `BM x BN` fp32 values per
iteration, with twice the live accumulator registers at the add. Triton's combine pass
often rewrites `acc + dot(a, b)` into the fused form by itself, so the measured gain is
frequently zero — the rewrite makes it explicit and robust when something sits between
the dot and the add (casts, scaling) that would defeat the pattern match.

## Applies when
- inside a loop, an accumulator is updated with `acc += tl.dot(a, b)` or
  `acc = acc + tl.dot(a, b)`, where the dot's result is added unmodified;
- the accumulator has the dot's output dtype (fp32 for fp16/bf16/fp32 operands, int32
  for int8), as `tl.dot`'s `acc` requires.

## Does not apply when
- the product is scaled or masked before the add (`acc += tl.dot(a, b) * scale`): the
  scale would have to move onto an operand, which changes rounding;
- `acc -= tl.dot(...)`: negate an operand instead, or leave it;
- the accumulator is kept in a different dtype than the dot's output (an fp16 accumulator);
- on Blackwell, code that wraps some dots precisely to stop the compiler fusing add and
  dot works around a Triton bug (triton-lang/triton#8695) — do not undo such workarounds.
- Triton 3.6 already fuses `acc += tl.dot(a, b)` into the MMA accumulator: on an H200 the two forms
  compiled to the same PTX (`benchmarks/results/gpu-2026-12-01-catalog/verify_catalog_2026-12-01.md`), so the rewrite is a no-op there.

## References
- Triton tutorials `python/tutorials/03-matrix-multiplication.py` (`matmul_kernel`: `accumulator = tl.dot(a, b, accumulator)`)
- Triton tutorials `python/tutorials/06-fused-attention.py` (`_attn_fwd_inner`)
- flash-linear-attention `fla/ops/utils/matmul.py` (`matmul_kernel`: `b_acc = tl.dot(b_a, b_b, acc=b_acc, allow_tf32=ALLOW_TF32)`) — at `49b00f0a94`, before 2025-07-01
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skel.kernels.flow import args_of, binary, flow_of, has_kwarg, is_call, name_of, operands
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, custom

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts


def _has_acc(node) -> bool:
    return len(args_of(node)) >= 3 or has_kwarg(node, "acc", "out")


def _bare_dot(expr) -> bool:
    return is_call(expr, "tl.dot") and not _has_acc(expr)


def _separate_accumulations(k: KernelFacts) -> list[int]:
    """Definitions inside a loop that add a bare `tl.dot` (one without an accumulator
    argument) to the name they define: the flow's definitions, not the kernel's
    assignments, so `acc = acc + tl.dot(a, b)` is read as an expression tree."""
    fl = flow_of(k)
    lines = []
    for name, defs in fl.defs.items():
        for d in defs:
            if not d.loops:
                continue
            if d.op == "+=" and _bare_dot(d.value):
                lines.append(d.line)
            elif d.op == "=" and binary(d.value, "+"):
                sides = operands(d.value)
                if any(name_of(x) == name for x in sides) and any(_bare_dot(x) for x in sides):
                    lines.append(d.line)
    return lines


DOT_WITH_ACC = calls("tl.dot", where=lambda c, k: len(c.args) >= 3 or "acc" in c.kwargs or "out" in c.kwargs,
                     name="dot-acc", describe="`tl.dot(a, b, acc)` / `tl.dot(..., acc=...)`")
ACC_PLUS_DOT_IN_LOOP = custom(
    "acc-plus-dot-in-loop", "`acc += tl.dot(a, b)` (or `acc = acc + tl.dot(a, b)`) inside a loop",
    _separate_accumulations)

SKELETON = Skeleton(
    id="dot-acc-argument",
    title="Pass the accumulator to tl.dot",
    summary="Write acc = tl.dot(a, b, acc) instead of acc += tl.dot(a, b) so the MMA accumulates in place.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=DOT_WITH_ACC,
    preconditions=[ACC_PLUS_DOT_IN_LOOP],
    subject=ACC_PLUS_DOT_IN_LOOP,
    env=Env(),
    helps=("compute",),
)
