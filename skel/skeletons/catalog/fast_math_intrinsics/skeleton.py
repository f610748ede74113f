"""Approximate math intrinsics (rsqrt, hardware tanh, fast exp/div) in elementwise kernels.

## What it does
Per-element transcendental arithmetic written in a precise or multi-instruction form is
replaced by the hardware's approximate instructions:

- `1 / tl.sqrt(x)` and `x / tl.sqrt(y)` per element → `x * tl.math.rsqrt(y)` (one
  `MUFU.RSQ` instead of a square root and a division);
- tanh emulated through exponentials (`2 * tl.sigmoid(2 * x) - 1`,
  `(tl.exp(2 * x) - 1) / (tl.exp(2 * x) + 1)`) → libdevice `tanh`
  (`triton.language.extra.libdevice.tanh`), or `tanh.approx.f32` through inline asm;
- IEEE-rounded intrinsics where the precision is not needed: `tl.math.div_rn`,
  `tl.sqrt_rn`, libdevice `exp`/`log`/`pow`/`div_rn` → `/`, `tl.sqrt`, `tl.exp`, or libdevice
  `fast_expf`/`fast_dividef`/`fast_logf`.

## Why it is faster
In Triton, `/`, `tl.fdiv` and `tl.sqrt` on fp32 are already the fast forms (documented as
"fast division" and "fast square root"), and `tl.exp` is `ex2.approx` after a multiply;
the IEEE versions (`div_rn`, `sqrt_rn`, libdevice's precise `expf`) are several times
longer instruction sequences. `1 / tl.sqrt(x)` still costs two MUFU operations where
`rsqrt` is one, and tanh through `exp` and a division costs an `ex2`, a reciprocal and
fix-ups where the hardware has one `tanh.approx` (sm_75+). In an activation or optimizer
kernel that is otherwise a load, a few flops and a store, these sequences are the
instruction bound once the data is in L2 or the tensor is small (decode), and on 16-bit
outputs the extra precision is rounded away. Liger's GEGLU and DyT kernels call libdevice
`tanh`; FLA switches its `exp`/`div` to `fast_expf`/`fast_dividef` with `FLA_USE_FAST_OPS=1`.

## Applies when
- the kernel is elementwise (no `tl.dot`);
- it computes, per element, a reciprocal square root through a division, tanh through
  exponentials or a sigmoid, or an IEEE-rounded intrinsic (`div_rn`, `sqrt_rn`, libdevice
  `exp`/`log`/`pow`).

## Does not apply when
- the value is a per-row scalar (`1 / tl.sqrt(tl.sum(x * x) / N + eps)` in a norm): one
  instruction per row does not bound anything;
- plain `/`, `tl.sigmoid`, `tl.exp`: Triton already emits the approximate instructions;
- the kernel is memory-bound at HBM bandwidth on large tensors: instruction savings do
  not show (measure on the target shape);
- the result must be bit-reproducible across GPUs/backends or is accumulated in a long
  reduction (training losses, log-sum-exp): approximate intrinsics differ by a few ULP,
  and `fast_*` are CUDA libdevice only;
- inputs outside the approximations' ranges (`fast_expf` flushes denormals, `fast_dividef`
  returns 0 for |y| > 2^126).

## References
- Liger-Kernel `src/liger_kernel/ops/geglu.py` (`_geglu_tanh_forward_kernel`: libdevice `tanh`, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/dyt.py` (`_dyt_fwd_kernel`: libdevice `tanh`, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/rms_norm.py` (`_rms_norm_forward_kernel`: `rsqrt`, v0.5.10)
- flash-linear-attention `fla/ops/utils/op.py` (the `FLA_USE_FAST_OPS` switch: `div = fast_dividef`, `exp = fast_expf`, v0.2.2)
- Triton `python/triton/language/math.py` (`fdiv`: "fast division", `div_rn`: "precise division",
  `sqrt` / `sqrt_rn`, `rsqrt`; checked on Triton 3.7)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import calls_where
from skel.skeletons.predicates.dots import NO_DOT
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

#: Approximate intrinsics as the extractor names them (libdevice functions read as tl.math.*).
_FAST = re.compile(r"(tl|libdevice|triton)(\.\w+)*\.(rsqrt|tanh|fast_\w+|fdiv)$")
_FAST_METHOD = re.compile(r"\.(rsqrt|tanh|fast_\w+|fdiv)$")
_APPROX_ASM = re.compile(r"\.approx|tanh\.|rsqrt")

_RSQRT = re.compile(r"/\s*tl\.sqrt\(([^()]*(?:\([^()]*\))?[^()]*)\)")
_TANH = (re.compile(r"tl\.sigmoid\(\s*2(\.0*)?\s*\*"),
         re.compile(r"tl\.exp\(\s*-?\s*2(\.0*)?\s*\*[^)]*\)\s*[-+]\s*1"),
         re.compile(r"\(\s*(\w+)\s*-\s*1(\.0*)?\s*\)\s*/\s*\(\s*\1\s*\+\s*1(\.0*)?\s*\)"))
#: IEEE-rounded or full-precision intrinsics as the extractor names them.
_PRECISE = re.compile(r"(tl|libdevice|triton)(\.\w+)*\.(div_rn|sqrt_rn|expf?|logf?|log1p|pow|powf|exp2f?)$")
_REDUCE = {"tl.sum", "tl.max", "tl.min", "tl.reduce"}
#: Core ops that already lower to approximate instructions.
_FAST_CORE = {"tl.exp", "tl.exp2", "tl.log", "tl.log2", "tl.math.exp", "tl.math.exp2", "tl.math.log",
              "tl.math.log2"}


def _row_scalars(k: KernelFacts) -> set[str]:
    """Names holding per-row reductions (`var = tl.sum(x * x, 0) / N`), transitively."""
    out: set[str] = set()
    for _ in range(3):
        for a in k.assigns:
            if len(a.targets) == 1 and (set(a.calls) & _REDUCE or (set(a.names) & out and not
                                                                   re.search(r"tl\.load|tl\.arange", a.value))):
                out.add(a.targets[0])
    return out


def _exprs(k: KernelFacts) -> list[tuple[int, str]]:
    return [(a.line, a.value) for a in k.assigns] + [(c.line, x) for c in k.calls
                                                     if c.name in ("tl.store", "tl.where") for x in c.args]


def _precise_math(k: KernelFacts) -> list[int]:
    scalars = _row_scalars(k)
    lines = []
    for line, text in _exprs(k):
        for m in _RSQRT.finditer(text):
            arg = m.group(1)
            if not set(IDENT.findall(arg)) & scalars and not re.search(r"tl\.(sum|max|min|reduce)\(", arg):
                lines.append(line)
        if any(rx.search(text) for rx in _TANH):
            lines.append(line)
    # `tl.exp`/`tl.log` are the fast forms already; only library (libdevice/math) precise calls count
    lines += [c.line for c in k.calls if _PRECISE.match(c.name) and c.name not in _FAST_CORE]
    return lines


def _is_fast_call(c: Call) -> bool:
    if c.kwargs.get("ieee_rounding", "False").strip() == "True":
        return False  # `tl.fdiv(x, y, ieee_rounding=True)` is the precise division
    if _FAST.match(c.name):
        return True
    # `libdevice.tanh(x)` where the file's import is out of sight: a method on the module name
    return bool(_FAST_METHOD.match(c.name) and re.search(r"libdevice|tldevice|\bmath\b", c.receiver))


def _fast_math(c: Call, k: KernelFacts) -> bool:
    """An approximate intrinsic, or inline asm using `.approx` instructions."""
    if _is_fast_call(c):
        return True
    return c.name == "tl.inline_asm_elementwise" and bool(
        _APPROX_ASM.search(c.args[0] if c.args else c.kwargs.get("asm", "")))


PRECISE_ELEMENTWISE_MATH = custom(
    "precise-elementwise-math",
    "per-element math with a faster intrinsic (`1 / tl.sqrt`, tanh via exp/sigmoid, `div_rn`/`sqrt_rn`, "
    "libdevice precise `exp`/`log`/`pow`)",
    _precise_math)
FAST_MATH = calls_where(
    where=_fast_math, name="fast-math",
    describe="approximate intrinsics (`tl.math.rsqrt`, libdevice `tanh`/`fast_*`, `tl.fdiv`, `.approx` inline asm)")

SKELETON = Skeleton(
    id="fast-math-intrinsics",
    title="Approximate math intrinsics in elementwise kernels",
    summary="Use approximate intrinsics (rsqrt, libdevice tanh/fast_expf/fast_dividef) in elementwise-bound kernels.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=FAST_MATH,
    preconditions=[NO_DOT, PRECISE_ELEMENTWISE_MATH],
    subject=PRECISE_ELEMENTWISE_MATH,
    env=Env(),
    helps=("compute", "latency"),
)
