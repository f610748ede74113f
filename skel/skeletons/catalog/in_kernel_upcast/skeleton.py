"""Load low-precision data and upcast it in registers instead of passing an fp32 copy.

## What it does
Removes a host-side `x.float()` / `x.to(torch.float32)` made only to feed a kernel, passes
the original fp16/bf16 tensor, and casts inside the kernel right after the load:
`x = tl.load(ptrs, mask=m, other=0.0).to(tl.float32)`. Outputs are cast back on store
with `.to(y_ptr.dtype.element_ty)`.

## Why it is faster
A host upcast is a whole extra kernel: it reads the bf16 tensor, writes an fp32 copy twice
its size, and the Triton kernel then reads that copy — three passes over memory where one
half-width read would do. For a memory-bound kernel the load itself halves in bytes, and
the temporary fp32 allocation disappears. The math stays fp32 because the cast happens in
registers.

## Applies when
- the kernel applies fp32-only math (`tl.exp`, `tl.log`, `tl.sqrt`, `tl.rsqrt`,
  `tl.sigmoid`, ...) to loaded values that are never cast in the kernel. Triton 3.x refuses
  these on fp16/bf16 ("Expected dtype ['fp32', 'fp64'] but got bf16", checked with triton
  3.7.1), so the kernel can only take fp32 tensors and every bf16 caller must make an fp32
  copy first; or
- loaded values reach a reduction (`tl.sum`, `tl.cumsum`) uncast — with bf16 data that
  would accumulate in bf16 — and the launching file makes fp32 copies on the host
  (`x.float()`), the sign that the copy exists only to feed the kernel.

## Does not apply when
- the tensors are fp32 in the model anyway: nothing to save (the kernel alone cannot
  tell; check the caller);
- the fp32 copy is reused by several kernels or kept for the backward pass: removing it
  moves the cost, it does not remove it;
- the value is used only in a `tl.dot`: keep fp16/bf16 operands there (tensor cores) and
  let the dot accumulate in fp32;
- stores must round the same way as the old host path (`fp_downcast_rounding` matters for
  bit-exact comparisons).

## References
- Liger-Kernel `src/liger_kernel/ops/cross_entropy.py` (`liger_cross_entropy_kernel`: `tl.load(...).cast(tl.float32)`) — at `5e3bf99abb`, before 2025-07-01
- flash-linear-attention `fla/modules/l2norm.py` (`l2norm_fwd_kernel`: `tl.load(p_x, boundary_check=(0, 1)).to(tl.float32)`) — at `49b00f0a94`, before 2025-07-01
- Triton `triton/language/math.py` (`_check_dtype`: exp/log/sqrt accept fp32/fp64 only)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import args_of, call_name, calls_in, flow_of, is_call, kwarg, name_of, receiver
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import file_calls, implies, launches

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.flow import Flow, Node
    from skel.kernels.model import KernelFacts, Launch

_CASTS = (".to", ".cast", "tl.cast")
_FP32_ONLY = (
    "tl.exp", "tl.exp2", "tl.log", "tl.log2", "tl.sqrt", "tl.sqrt_rn", "tl.rsqrt", "tl.sigmoid",
    "tl.math.exp", "tl.math.exp2", "tl.math.log", "tl.math.log2", "tl.math.sqrt", "tl.math.rsqrt",
    "tl.softmax", "tl.erf", "tl.math.erf",
)
_REDUCTIONS = ("tl.sum", "tl.cumsum", "tl.reduce")
# bare helpers such as flash-linear-attention's `exp(x)` cast inside (`tl.exp(x.to(tl.float32))`),
# so they are not fp32-only entry points and an argument passing through one is not raw


def _dtype_arg(fl: Flow, node: cst.Call) -> str:
    args = args_of(node)
    if call_name(node) == "tl.cast":
        arg = args[1] if len(args) > 1 else kwarg(node, "dtype")
    else:
        arg = args[0] if args else kwarg(node, "dtype")
    return fl.text(arg) if arg is not None else ""


def _cast_operand(node: cst.Call) -> Node | None:
    if call_name(node) == "tl.cast":
        return args_of(node)[0] if args_of(node) else None
    return receiver(node)


def _loaded_names(fl: Flow) -> set[str]:
    return {t for c in fl.loads() for t in c.targets}


def _upcasts_of_loads(k: KernelFacts) -> list[int]:
    fl = flow_of(k)
    loaded = _loaded_names(fl)
    lines = []
    for c in fl.named(*_CASTS):
        if "float32" not in _dtype_arg(fl, c.node):
            continue
        x = _cast_operand(c.node)
        if x is not None and (is_call(x, "tl.load") or name_of(x) in loaded):
            lines.append(c.line)
    return lines


def _raw_loads_into(k: KernelFacts, math_calls: tuple[str, ...]) -> list[int] | None:
    """Loads whose values reach ``math_calls`` without any cast."""
    fl = flow_of(k)
    cast_names: set[str] = set()
    cast_loads: set[int] = set()
    for c in fl.named(*_CASTS):
        x = _cast_operand(c.node)
        if x is None:
            continue
        name = name_of(x)
        if name is not None:
            cast_names.add(name)
        elif is_call(x):
            cast_loads.add(id(x))
    raw = {}
    for c in fl.loads():
        if id(c.node) in cast_loads or set(c.targets) & cast_names or not c.targets:
            continue
        # `x = tl.load(...) * s` still counts; `x = tl.load(...).to(...)` was excluded above
        for t in c.targets:
            raw[t] = c.line
    if not raw:
        return None
    lines = []
    for m in fl.named(*math_calls):
        if not args_of(m.node):
            continue
        arg = args_of(m.node)[0]
        if any(not call_name(c).startswith("tl.") for c in calls_in(arg)):
            continue  # through a helper or a method (`.to`): may already be fp32
        names, exprs = fl.closure(arg, hops=3)
        if names & raw.keys() and not names & cast_names and not _mixes_fp32(fl, k, names, exprs):
            lines.append(m.line)
    return lines


def _mixes_fp32(fl: Flow, k: KernelFacts, names: set[str], exprs: list[Node]) -> bool:
    """An fp32 value (a tl.dot result, fp32 zeros, an fp32 cast) takes part: type promotion
    makes the math fp32 whatever the loaded dtype, so nothing forces an fp32 input."""
    if any(k.var_dtypes.get(n) == "fp32" for n in names):
        return True
    for e in exprs:
        for c in calls_in(e):
            if call_name(c) == "tl.dot" or "float32" in fl.text(c):
                return True
    return False


def _raw_loads_in_fp32_only_math(k: KernelFacts) -> list[int] | None:
    return _raw_loads_into(k, _FP32_ONLY)


def _raw_loads_in_reduction(k: KernelFacts) -> list[int] | None:
    return _raw_loads_into(k, _REDUCTIONS)


_FLOAT_COPY = re.compile(r"\.float$")


def _float_copy_before(ln: Launch, k: KernelFacts) -> bool:
    """The launching function calls `x.float()` before this launch."""
    return any(_FLOAT_COPY.search(c) for c in ln.calls_before)


UPCAST_AFTER_LOAD = custom(
    "upcast-after-load", "`tl.load(...).to(tl.float32)` (or a cast of a loaded value to fp32)", _upcasts_of_loads)
RAW_LOADS_IN_FP32_ONLY_MATH = custom(
    "raw-loads-in-fp32-only-math",
    "loaded values reach `tl.exp`/`tl.log`/`tl.sqrt`/`tl.sigmoid` (fp32-only in Triton 3.x) with no cast:"
    " the kernel cannot take fp16/bf16 tensors",
    _raw_loads_in_fp32_only_math)
RAW_LOADS_IN_REDUCTION = custom(
    "raw-loads-in-reduction", "loaded values reach `tl.sum`/`tl.cumsum` with no cast",
    _raw_loads_in_reduction)
#: a host call `x.float()` anywhere in the file (as `predicates.host.host_fp32_copies` reads it)
HOST_FP32_COPY = file_calls(r"\.float$", lines=False, name="host-fp32-copy",
                            describe="the launching file makes fp32 copies on the host (`x.float()`)")

#: fp32 copies on the host, or a kernel launched from another file (its callers' dtypes are
#: out of sight). A file that launches the kernel on tensors it never upcasts feeds it fp32
#: already: moving a cast that does not exist into the kernel changes nothing.
HOST_FP32_COPY_OR_UNSEEN = implies(
    launches(own=True, name="launched-here", describe="a launch of the kernel in its own file"),
    launches(own=True, where=_float_copy_before, name="fp32-copy-before-launch",
             describe="a launch preceded by a host fp32 copy (`x.float()`)"),
    name="host-fp32-copy-or-unseen",
    describe="the launching file makes fp32 copies on the host (`x.float()`), or the kernel is launched from "
    "another file")

#: the subject: raw low-precision loads the kernel could upcast itself
RAW_LOADS_UPCAST = (RAW_LOADS_IN_FP32_ONLY_MATH & HOST_FP32_COPY_OR_UNSEEN) | (RAW_LOADS_IN_REDUCTION & HOST_FP32_COPY)

SKELETON = Skeleton(
    id="in-kernel-upcast",
    title="Upcast in the kernel, not on the host",
    summary="Pass fp16/bf16 tensors and tl.load(...).to(tl.float32) in registers instead of a host .float() copy.",
    category=Category.MEMORY,
    doc=__doc__,
    present=UPCAST_AFTER_LOAD,
    preconditions=[RAW_LOADS_UPCAST],
    subject=RAW_LOADS_UPCAST,
    env=Env(),
    helps=("memory",),
)
