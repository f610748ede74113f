"""Approximate math intrinsics (rsqrt, hardware tanh, fast exp/div) in elementwise kernels.

## What it does
Per-element transcendental arithmetic written in precise form is replaced by the
hardware's approximate instructions:

- `1 / tl.sqrt(x)` and `x / tl.sqrt(y)` per element → `tl.math.rsqrt` (one `MUFU.RSQ`);
- tanh emulated through exponentials (`2 * tl.sigmoid(2 * x) - 1`,
  `(tl.exp(2 * x) - 1) / (tl.exp(2 * x) + 1)`) → libdevice `tanh`
  (`triton.language.extra.libdevice.tanh`: `__nv_tanhf`, a few ULP, no IEEE division), or
  `tanh.approx.f32` through inline asm;
- sigmoid/SiLU/softplus with an IEEE division or `exp` per element
  (`x / (1 + tl.exp(-x))`, `tl.sigmoid(x)`, which Triton lowers the same way,
  `tl.log(1 + tl.exp(x))`) → `0.5 * tanh(0.5 * x) + 0.5` with libdevice `tanh`, or `fast_expf`,
  `fast_dividef`, `fast_logf`, or the core `tl.fdiv(x, y, ieee_rounding=False)` (`div.full.f32`
  instead of the IEEE `div.rn.f32` that `/` lowers to).

## Why it is faster
Triton lowers `/` on fp32 to an IEEE-correct division (a reciprocal plus a Newton step
and a fix-up branch, ~10 instructions) and `tl.exp` to `ex2.approx` with range
reduction; `1 / tl.sqrt` is a `sqrt.rn` plus a division. The approximate forms are one or
two MUFU instructions (2 ULP or so). In an activation kernel that is otherwise a load,
a few flops and a store, these sequences are the instruction bound once the data is in
L2 or the tensor is small (decode), and on bf16/fp16 outputs the extra precision is
rounded away anyway. Liger's GEGLU and DyT kernels call libdevice `tanh`; FLA switches its
`exp`/`div` to `fast_expf`/`fast_dividef` with `FLA_USE_FAST_OPS=1`.

## Applies when
- the kernel is elementwise (no `tl.dot`);
- it computes, per element, one of: a reciprocal square root through division, tanh
  through exponentials or sigmoid, a sigmoid/SiLU/softplus through `tl.sigmoid` or
  `1 + tl.exp(...)` and a division or log.

## Does not apply when
- the value is a per-row scalar (`1 / tl.sqrt(tl.sum(x * x) / N + eps)` in a norm): one
  instruction per row does not bound anything;
- the kernel is memory-bound at HBM bandwidth on large tensors: instruction savings do
  not show (measure on the target shape);
- the result must be bit-reproducible across GPUs/backends or is accumulated in a long
  reduction (training losses, log-sum-exp): approximate intrinsics differ by a few ULP
  and `fast_*` are CUDA libdevice only (ROCm's ocml has no `fast_dividef`);
- inputs outside the approximations' ranges (`fast_expf` flushes denormals, `fast_dividef`
  returns 0 for |y| > 2^126).

## References
- Liger-Kernel `src/liger_kernel/ops/geglu.py` (`_geglu_tanh_forward_kernel`: libdevice `tanh`, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/dyt.py` (`_dyt_fwd_kernel`: libdevice `tanh`, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/rms_norm.py` (`_rms_norm_forward_kernel`: `rsqrt`, v0.5.10)
- flash-linear-attention `fla/ops/utils/op.py` (`FLA_USE_FAST_OPS`: `div = fast_dividef`, `exp = fast_expf`, v0.2.2)
"""

from __future__ import annotations

import re

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.dots import NO_DOT
from skel.skeletons.predicates.names import IDENT

#: Approximate intrinsics as the extractor names them (libdevice functions read as tl.math.*).
_FAST = re.compile(r"(tl|libdevice|triton)(\.\w+)*\.(rsqrt|tanh|fast_\w+|fdiv)$")
_FAST_METHOD = re.compile(r"\.(rsqrt|tanh|fast_\w+|fdiv)$")
_APPROX_ASM = re.compile(r"\.approx|tanh\.|rsqrt")

_RSQRT = re.compile(r"/\s*tl\.sqrt\(([^()]*(?:\([^()]*\))?[^()]*)\)")
_TANH = (re.compile(r"tl\.sigmoid\(\s*2(\.0*)?\s*\*"),
         re.compile(r"tl\.exp\(\s*-?\s*2(\.0*)?\s*\*[^)]*\)\s*[-+]\s*1"),
         re.compile(r"\(\s*(\w+)\s*-\s*1(\.0*)?\s*\)\s*/\s*\(\s*\1\s*\+\s*1(\.0*)?\s*\)"))
_SIGMOID_DIV = re.compile(r"/\s*\(\s*1(\.0*)?\s*\+\s*tl\.exp\(|tl\.sigmoid\(")
_SOFTPLUS = re.compile(r"tl\.log\(\s*1(\.0*)?\s*\+\s*tl\.exp\(")
_REDUCE = {"tl.sum", "tl.max", "tl.min", "tl.reduce"}


def _row_scalars(k) -> set[str]:
    """Names holding per-row reductions (`var = tl.sum(x * x, 0) / N`), transitively."""
    out: set[str] = set()
    for _ in range(3):
        for a in k.assigns:
            if len(a.targets) == 1 and (set(a.calls) & _REDUCE or (set(a.names) & out and not
                                                                   re.search(r"tl\.load|tl\.arange", a.value))):
                out.add(a.targets[0])
    return out


def _exprs(k) -> list[tuple[int, str]]:
    return [(a.line, a.value) for a in k.assigns] + [(c.line, x) for c in k.calls
                                                     if c.name in ("tl.store", "tl.where") for x in c.args]


def _precise_math(k) -> list[int]:
    scalars = _row_scalars(k)
    lines = []
    for line, text in _exprs(k):
        for m in _RSQRT.finditer(text):
            arg = m.group(1)
            if not set(IDENT.findall(arg)) & scalars and not re.search(r"tl\.(sum|max|min|reduce)\(", arg):
                lines.append(line)
        if any(rx.search(text) for rx in _TANH) or _SIGMOID_DIV.search(text) or _SOFTPLUS.search(text):
            lines.append(line)
    return lines


def _is_fast_call(c) -> bool:
    if c.kwargs.get("ieee_rounding", "False").strip() == "True":
        return False  # `tl.fdiv(x, y, ieee_rounding=True)` is the precise division
    if _FAST.match(c.name):
        return True
    # `libdevice.tanh(x)` where the file's import is out of sight: a method on the module name
    return bool(_FAST_METHOD.match(c.name) and re.search(r"libdevice|tldevice|\bmath\b", c.receiver))


def _fast_math(k) -> list[int]:
    lines = [c.line for c in k.calls if _is_fast_call(c)]
    lines += [c.line for c in k.calls_named("tl.inline_asm_elementwise")
              if _APPROX_ASM.search(c.args[0] if c.args else c.kwargs.get("asm", ""))]
    return lines


PRECISE_ELEMENTWISE_MATH = custom(
    "precise-elementwise-math",
    "per-element precise math with an approximate intrinsic (`1 / tl.sqrt`, tanh via exp/sigmoid, "
    "`tl.sigmoid`, `x / (1 + tl.exp(-x))`, `tl.log(1 + tl.exp(x))`)",
    _precise_math)
FAST_MATH = custom(
    "fast-math",
    "approximate intrinsics (`tl.math.rsqrt`, libdevice `tanh`/`fast_*`, `tl.fdiv`, `.approx` inline asm)",
    _fast_math)

SKELETON = Skeleton(
    id="fast-math-intrinsics",
    title="Approximate math intrinsics in elementwise kernels",
    summary="Use approximate intrinsics (rsqrt, libdevice tanh/fast_expf/fast_dividef) in elementwise-bound kernels.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=FAST_MATH,
    preconditions=[NO_DOT, PRECISE_ELEMENTWISE_MATH],
    env=Env(),
    helps=("compute", "latency"),
)
