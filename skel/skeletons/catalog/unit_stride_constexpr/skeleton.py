"""Pass the innermost stride as a literal 1 (or constexpr) instead of a runtime argument.

## What it does
A kernel that takes every stride of a tensor as a runtime argument
(`s_k_h, s_k_t, s_k_d`; `stride_am, stride_ak`) and builds addresses with the innermost
one (`o_d[None, :] * stride_xd`, `tl.make_block_ptr(k, (T, K), (s_k_t, s_k_d), ..., (1, 0))`)
is changed to assume the last dimension is contiguous: the innermost stride becomes the
literal `1` (`(s_k_t, 1)`, `x + rows * stride_xm + cols`) or a `tl.constexpr`, the argument
is dropped, and the host makes inputs contiguous (`.contiguous()`, FLA's `input_guard`).

## Why it is faster
Vector loads need the compiler to know that consecutive lanes read consecutive addresses.
With `cols * stride_xd` and a runtime stride, that is unknowable, so each element is a
separate 2- or 4-byte load (no 128-bit `LDG.128`, 4-8x more load instructions, and no
TMA for a block pointer). Triton hides this by itself in the common case: an integer
argument equal to 1 is specialised to the constant 1 at launch (each new value of
`x == 1` is its own compiled variant), so a contiguous input already gets the vector
loads. It does not for an argument listed in `do_not_specialize`, which serving code
sets on strides and lengths to avoid recompiles. There the compiler never learns the
stride is 1: a literal 1 (or a constexpr) makes vectorisation unconditional, removes one
argument per tensor, and lets the same addresses feed `tl.make_tensor_descriptor`,
which requires a compile-time unit last stride. The gain is not assured even then:
on an H200 (Triton 3.6) the runnable example, whose "before" lists its strides in
`do_not_specialize`, measured 0.99x (no effect) on a memory-bound row scaling
(`benchmarks/results/gpu-2026-12-01-new2/`).

## Applies when
- a runtime (non-constexpr) stride argument is the innermost stride of its tensor: the
  last of that tensor's strides in the signature (`stride_xd` after `stride_xt`), or the
  fastest-varying stride of a `tl.make_block_ptr` (the one `order[0]` names);
- it multiplies an index in an address or sits in a block pointer's strides;
- and it is listed in `@triton.jit(do_not_specialize=[...])` (by name or position), so
  Triton's specialisation of arguments equal to 1 never sees it.

## Does not apply when
- the kernel must accept non-contiguous last dimensions (a transposed view, a strided
  slice of the hidden dimension) without a copy: forcing `.contiguous()` then costs a
  full copy on every call;
- the innermost stride is already the literal 1 (`(H*K, 1)`), a constexpr, or absent
  (`x + row * stride + cols`): nothing is left to specialise;
- every launch of the kernel in its file passes the literal `1` for the stride (`1`, not
  `x.stride(1)`): the authors fixed the stride at the call, and Triton compiles an integer
  argument equal to 1 as the constant 1 — unless `do_not_specialize` lists it, and then
  taking it off that list is the whole change, not this rewrite. Whether a `x.stride(1)` is
  1 at run time is not decidable from the code: such a launch still counts as a runtime
  stride;
- the runtime stride is an outer one (time, head, batch): only the contiguous dimension
  vectorises;
- the stride is an ordinary argument (not in `do_not_specialize`): Triton already
  compiles a contiguous call with the stride as the constant 1, and the change gains
  nothing (the precision check on sglang and vLLM kernels judged all six such
  suggestions wrong).

## References
- flash-linear-attention `fla/ops/gla/chunk.py` (`chunk_gla_fwd_A_kernel_intra_sub_inter`: the block pointers' — at `49b00f0a94`, before 2025-07-01
  `(s_k_t, s_k_d)` became `(s_k_t, 1)` and the `s_k_d` argument was dropped, commit 8ea0a626, 2024-09-23)
- flash-linear-attention `fla/ops/common/chunk_o.py` (`chunk_fwd_kernel_o`: `(H*K, 1)` strides, v0.2.2)
- Triton `python/triton_kernels/triton_kernels/matmul_ogs_details/_p_matmul_ogs.py` (`_make_tensor_desc`,
  `_update_tensor_desc`: the descriptors' last stride is `tl.constexpr(1)`, "last dim must be constexpr 1")
- Triton runtime specialisation (`native_specialize_impl`: an int argument equal to 1 becomes
  `('constexpr', 1)` unless listed in `do_not_specialize`; checked on Triton 3.7)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom, split_top
from skel.skeletons.patterns import any_of, assigns, calls_where, launches, per_kernel

if TYPE_CHECKING:
    from skel.kernels.model import Assign, Call, KernelFacts, Launch

#: A stride argument: `stride_xd`, `x_stride_1`, `s_k_d`, `stride`.
_STRIDE_PARAM = re.compile(r"(?i)(\w*stride\w*|s_[a-z]+_[a-z0-9]+)")
#: Dimension tokens that name outer (never contiguous) dimensions.
_OUTER_DIMS = {"b", "h", "t", "s", "n_ctx", "bs", "row", "rows", "batch", "head", "heads", "seq", "tok",
               "token", "0", "z", "g", "e", "l"}


def _split(name: str) -> tuple[str, str]:
    """(tensor, dimension) of a stride name: `stride_am` -> (a, m), `s_k_d` -> (k, d),
    `x_stride_1` -> (x, 1), `stride_q_t` -> (q, t), `stride_xd` -> (x, d)."""
    rest = re.sub(r"(?i)stride", " ", name)
    parts = [p for p in re.split(r"[_\s]+", rest) if p]
    if name.lower().startswith("s_") and "stride" not in name.lower():
        parts = parts[1:]  # the `s` of `s_k_d`
    if len(parts) >= 2:
        return "_".join(parts[:-1]).lower(), parts[-1].lower()
    if len(parts) == 1 and len(parts[0]) >= 2:
        return parts[0][:-1].lower(), parts[0][-1].lower()
    return (parts[0].lower() if parts else ""), ""


def _innermost_strides(k, constexpr: bool) -> list[str]:
    """Stride parameters that are the last of their tensor's strides in the signature
    (at least two strides per tensor, so the order is seen) and name an inner dimension."""
    groups: dict[str, list] = {}
    for p in k.params:
        if _STRIDE_PARAM.fullmatch(p.name):
            tensor, dim = _split(p.name)
            groups.setdefault(tensor, []).append((p, dim))
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        p, dim = members[-1]
        if p.constexpr == constexpr and dim not in _OUTER_DIMS:
            out.append(p.name)
    return out


def _block_ptr_inner(call) -> str | None:
    """The fastest-varying stride of a `tl.make_block_ptr` (the one `order[0]` names)."""
    args = list(call.args) + [""] * 6
    strides = call.kwargs.get("strides", args[2])
    order = call.kwargs.get("order", args[5])
    items = [s.strip() for s in split_top(strides.strip().strip("()")) if s.strip()]
    idx = [o.strip() for o in split_top(order.strip().strip("()")) if o.strip()]
    if not items or not idx or not idx[0].isdigit() or int(idx[0]) >= len(items):
        return None
    return items[int(idx[0])]


def _use_rx(name: str) -> re.Pattern[str]:
    """The stride ``name`` multiplying an index (`cols * stride_xd`, `stride_xd * cols`)."""
    return re.compile(r"(\*\s*\(?\s*\b" + re.escape(name) + r"\b|\b" + re.escape(name) + r"\s*\*)")


def _uses(k, name: str) -> list[int]:
    """Lines where a stride multiplies an index or sits in a block pointer's strides."""
    rx = _use_rx(name)
    lines = [a.line for a in k.assigns if rx.search(a.value)]
    for c in k.calls:
        if c.name in ("tl.load", "tl.store") and any(rx.search(x) for x in c.args):
            lines.append(c.line)
        if c.name == "tl.make_block_ptr" and _block_ptr_inner(c) == name:
            lines.append(c.line)
    return lines


# --- runtime innermost strides: block pointers whose fastest stride is a runtime parameter,
# and the uses (assignments, loads, stores) of the innermost runtime stride of each tensor in
# the signature


@per_kernel  # read by every element tested: once per kernel
def _runtime_strides(k: KernelFacts) -> list[str]:
    return _innermost_strides(k, constexpr=False)


def _multiplies(text: str, strides: list[str]) -> bool:
    return any(_use_rx(name).search(text) for name in strides)


def _runtime_block_ptr(c: Call, k: KernelFacts) -> bool:
    inner = _block_ptr_inner(c)
    return inner is not None and (inner in {p.name for p in k.params if not p.constexpr}
                                  or inner in _runtime_strides(k))


def _runtime_stride_assign(a: Assign, k: KernelFacts) -> bool:
    return _multiplies(a.value, _runtime_strides(k))


def _runtime_stride_access(c: Call, k: KernelFacts) -> bool:
    strides = _runtime_strides(k)
    return any(_multiplies(x, strides) for x in c.args)


def _unit_inner_stride(k: KernelFacts) -> list[int]:
    """Block pointers and descriptors with a literal unit inner stride, the uses of a
    constexpr innermost stride, and addresses with a bare column index."""
    lines = []
    for c in k.calls_named("tl.make_block_ptr"):
        inner = _block_ptr_inner(c)
        if inner is not None and re.fullmatch(r"1|tl\.constexpr\(1\)", inner):
            lines.append(c.line)
    for c in k.calls_named("tl.make_tensor_descriptor"):
        strides = c.kwargs.get("strides", c.args[2] if len(c.args) > 2 else "")
        items = [s.strip() for s in split_top(strides.strip().strip("[]()")) if s.strip()]
        if items and re.fullmatch(r"1|tl\.constexpr\(1\)", items[-1]):
            lines.append(c.line)
    for name in _innermost_strides(k, constexpr=True):
        lines += _uses(k, name) or [k.line_start]
    return lines + _implicit_unit_stride(k)


def _plus_terms(text: str) -> list[str]:
    """Top-level `+` terms of an expression (`x + row * s + cols` -> [x, row * s, cols])."""
    terms, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "+" and depth == 0:
            terms.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return terms + [cur.strip()]


_BARE_INDEX = re.compile(r"\(?\s*([A-Za-z_]\w*)\s*\)?(\s*\[\s*None\s*,\s*:\s*\])?")


def _implicit_unit_stride(k) -> list[int]:
    """An address with a runtime row stride and a bare column index (`x + row * stride + cols`,
    `p + o_t[:, None] * s_t + o_d[None, :]`): the last dimension is taken as contiguous."""
    aranged = {t for a in k.assigns if "tl.arange" in a.calls for t in a.targets}
    strides = {p.name for p in k.params if _STRIDE_PARAM.fullmatch(p.name)}
    values: dict[str, str] = {}
    for a in k.assigns:
        if a.op == "=" and len(a.targets) == 1:
            values.setdefault(a.targets[0], a.value)
    lines = []
    for c in k.calls_named("tl.load", "tl.store"):
        ptr = c.args[0] if c.args else c.kwargs.get("pointer", "")
        for text in (ptr, values.get(ptr.strip(), "")):
            terms = _plus_terms(text)
            strided = any("*" in t and strides & set(re.findall(r"\w+", t)) for t in terms)
            bare = any((m := _BARE_INDEX.fullmatch(t)) and m.group(1) in aranged for t in terms)
            if strided and bare:
                lines.append(c.line)
                break
    return lines


@per_kernel  # read by every element tested: once per kernel
def _unspecialized(k) -> set[str]:
    """Parameters kept out of Triton's value specialisation: `do_not_specialize` of
    `@triton.jit`, by name (`["stride_xn"]`) or by position (`[4]`)."""
    d = k.decorator("triton.jit")
    text = d.kwargs.get("do_not_specialize", "") if d is not None else ""
    names = set(re.findall(r"[\"'](\w+)[\"']", text))
    for idx in re.findall(r"(?<![\w.\"'])(\d+)(?![\w.\"'])", text):
        if int(idx) < len(k.params):
            names.add(k.params[int(idx)].name)
    return names


# --- the same, for the strides listed in `do_not_specialize` only


@per_kernel  # read by every element tested: once per kernel
def _unspecialized_strides(k: KernelFacts) -> list[str]:
    kept_out = _unspecialized(k)
    return [name for name in _innermost_strides(k, constexpr=False) if name in kept_out] if kept_out else []


def _unspecialized_block_ptr(c: Call, k: KernelFacts) -> bool:
    inner = _block_ptr_inner(c)
    return inner is not None and inner in _unspecialized(k)


def _unspecialized_stride_assign(a: Assign, k: KernelFacts) -> bool:
    return _multiplies(a.value, _unspecialized_strides(k))


def _unspecialized_stride_access(c: Call, k: KernelFacts) -> bool:
    strides = _unspecialized_strides(k)
    return any(_multiplies(x, strides) for x in c.args)


def _passed_as_literal_one(ln: Launch, k: KernelFacts) -> bool:
    """Every launch of the kernel in its file passes the literal `1` (not `x.stride(1)`)
    for one of its innermost runtime strides: the call site fixes the stride at 1."""
    own = [x for x in k.launches if x.kernel == k.name]
    if not own or ln not in own:
        return False
    index = {p.name: i for i, p in enumerate(k.params)}
    for name in _runtime_strides(k):
        if all(_argument(x, name, index[name]).strip() == "1" for x in own):
            return True
    return False


def _argument(ln: Launch, name: str, position: int) -> str:
    """What a launch passes for the parameter ``name`` at ``position`` ("" when unseen)."""
    if name in ln.kwargs:
        return ln.kwargs[name]
    return ln.args[position] if position < len(ln.args) else ""


#: The launcher passes `1` itself: the stride is a constant at the call, which Triton
#: specialises on (an integer argument equal to 1 compiles as the constant 1).
LITERAL_UNIT_STRIDE_LAUNCH = launches(
    own=True, where=_passed_as_literal_one, name="unit-stride-passed-as-literal-1",
    describe="every launch passes the literal `1` for the innermost stride (a constant at the call)")

RUNTIME_INNER_STRIDE = any_of(
    calls_where("tl.make_block_ptr", where=_runtime_block_ptr, name="runtime-inner-stride-block-ptr",
                describe="a block pointer whose fastest stride is a runtime parameter"),
    assigns(where=_runtime_stride_assign, name="runtime-inner-stride-assign",
            describe="an assignment multiplying by a tensor's innermost runtime stride"),
    calls_where("tl.load", "tl.store", where=_runtime_stride_access, name="runtime-inner-stride-access",
                describe="a load or store whose address multiplies by a tensor's innermost runtime stride"),
    name="runtime-inner-stride",
    describe="a runtime innermost stride in an address (`cols * stride_xd`, block-pointer strides `(s_t, s_d)`)")
UNIT_INNER_STRIDE = custom(
    "unit-inner-stride",
    "a compile-time unit innermost stride (block-pointer/descriptor strides ending in `1`, a constexpr stride, "
    "or a bare column index next to a runtime row stride)",
    _unit_inner_stride)
UNSPECIALIZED_INNER_STRIDE = any_of(
    calls_where("tl.make_block_ptr", where=_unspecialized_block_ptr, name="unspecialized-inner-stride-block-ptr",
                describe="a block pointer whose fastest stride is listed in `do_not_specialize`"),
    assigns(where=_unspecialized_stride_assign, name="unspecialized-inner-stride-assign",
            describe="an assignment multiplying by an innermost stride listed in `do_not_specialize`"),
    calls_where("tl.load", "tl.store", where=_unspecialized_stride_access, name="unspecialized-inner-stride-access",
                describe="a load or store whose address multiplies by an innermost stride listed in "
                         "`do_not_specialize`"),
    name="unspecialized-inner-stride",
    describe="a runtime innermost stride listed in `do_not_specialize` (Triton specialises any other stride equal to 1)")

SKELETON = Skeleton(
    id="unit-stride-constexpr",
    title="Literal / constexpr unit innermost stride",
    summary="Pass the innermost stride as literal 1 / constexpr (drop runtime stride_*_d args) so loads vectorise.",
    category=Category.MEMORY,
    doc=__doc__,
    present=(UNIT_INNER_STRIDE & ~RUNTIME_INNER_STRIDE) | LITERAL_UNIT_STRIDE_LAUNCH,
    preconditions=[UNSPECIALIZED_INNER_STRIDE],
    subject=UNSPECIALIZED_INNER_STRIDE,
    env=Env(),
    helps=("memory",),
)
