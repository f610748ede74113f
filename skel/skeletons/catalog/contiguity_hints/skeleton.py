"""Restore the contiguity and alignment that irregular offset math hides from the compiler.

## What it does
Wraps offsets (or pointers) whose contiguity the compiler cannot infer in
`tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)`, marks gathered row starts with
`tl.multiple_of(row * stride, 16)`, or states a fact with `tl.assume(stride % 16 == 0)`,
so loads and stores of those addresses become 128-bit vector accesses.

## Why it is faster
Triton's axis analysis tracks, per dimension, how many consecutive elements are
contiguous and what power of two divides the address. `tl.arange` plus constexpr or
16-divisible (specialized) integer arguments keeps that information; a `% M` wrap, a
`// inner` flattening, a `tl.where` choosing between pointers or an index loaded from
memory throws it away, and the compiler falls back to scalar (32-bit) accesses. A true
hint restores vectorized loads, often a several-fold cut in memory instructions for
memory-bound kernels.

## Applies when
The address of a `tl.load`/`tl.store` (or a `tl.atomic_*`: scatter-adds in embedding and
MoE backward kernels) keeps a genuine unit-stride run along some axis (consecutive lanes at
consecutive elements: `arange + s`, possibly times a runtime stride that Triton may
specialize to 1), and that run is hidden from the compiler by one of:
- rows gathered through a vector of indices loaded from memory (`sorted_token_ids`, slot
  maps, embedding indices) and read along a unit-stride inner vector
  (`rows[:, None] * stride + cols[None, :]`), when the row starts' alignment is hidden
  too: the stride is kept out of specialization (`do_not_specialize`,
  `do_not_specialize_on_alignment`), the base pointer is read from memory (a table of
  per-layer or peer buffers), or the kernel is written for another vendor's Triton
  (Ascend, MLU, XPU), whose compiler was not checked — hint the inner dimension and the
  row-start alignment;
- `tl.arange`-derived offsets wrapped or split with `%` / `//` by a scalar known only at
  run time (the `offs % M` trick of the Triton matmul tutorial, flattened `idx // inner`
  loops);
- a per-element `tl.where` choosing between unit-stride pointers or offsets (selecting
  between source tensors).

## Does not apply when
- offsets are `pid * BLOCK + tl.arange(...)` or `row * stride` with ordinary integer
  arguments: Triton already specializes arguments divisible by 16, so the information is
  there and a hint adds nothing. The same holds for rows gathered through loaded indices
  (`rows[:, None] * stride + cols[None, :]`) with a specialized or constexpr stride: a
  loaded index times a 16-divisible stride is 16-divisible, and the inner `tl.arange` run
  is plain. On an H200 (Triton 3.6) such a gather compiled to the same 16-byte loads with
  and without hints, at the same time (0.272 ms); with the stride in `do_not_specialize`
  it fell to scalar loads and 0.87x, and a base pointer read from memory to 0.94x, both
  restored by the hints (`python -m benchmarks.performance.gather_hints`,
  `benchmarks/results/gather-hints-2026-12-03.md`);
- the hint would only restate what Triton's own specialisation gives: an integer argument
  equal to 1 is compiled as the constant 1, and one divisible by 16 gets a divisibility-16
  hint at launch (both unless `do_not_specialize` lists it), so `tl.multiple_of(stride, 16)`
  or `tl.assume(n % 16 == 0)` on such an argument pays nothing;
- the divisor of the wrap is a constexpr, a literal, or a local computed only from them
  (`half = ROTARY // 2; d % half`): Triton folds it and its axis analysis knows the runs;
- there is no unit-stride run to restore, so a hint would be false: interleaved
  addresses (`pair * 2`, `row * 2 + 1`: stride 2), `offs // n` alone (constant runs), a
  1-D gather (`tl.load(table + idx)`, one random element per lane: binary-search probes,
  tiny routing/rank tables indexed by `loaded // n`), scatters to positions from a prefix
  sum (`tl.cumsum(keep) - 1`: compaction), or a `tl.where` picking per-lane positions
  that are data (`tl.where(is_h, pos_h, pos_t)`); a wrong `multiple_of`/`max_contiguous`
  silently produces wrong results, not a slowdown;
- the hint might be false for other reasons (odd strides, unaligned slices, views): the
  tutorial's `% N` wrap is only safe to hint when N is a multiple of the vector width
  (16 bytes / element size): with N = 50257 fp16 in a row-padded buffer the hinted
  GEMM faulted with a misaligned address on an H200 (Triton 3.6), since the vectors
  after the wrap start at unaligned columns;
- scalar `//` / `%` on program ids (`i_b, i_h = i_bh // H, i_bh % H`), or a `tl.where`
  reduced to a scalar (`tl.sum(tl.where(...))`) before it reaches the address — that
  does not touch the vector offsets.

## References
- Triton tutorials `python/tutorials/03-matrix-multiplication.py` (`matmul_kernel`: `% M` then `tl.max_contiguous(tl.multiple_of(...))`)
- Triton tutorials `python/tutorials/09-persistent-matmul.py` (`matmul_kernel`)
- flash-linear-attention `fla/ops/generalized_delta_rule/dplr/chunk_A_bwd.py` (`chunk_dplr_bwd_kernel_intra`: the last-row pointer `gi + (min(i_t * BT + BT, T) - 1) * stride_qk + o_k` hinted with `tl.max_contiguous(tl.multiple_of(p_gn, BK), BK)`) — at `49b00f0a94`, before 2025-07-01
- triton_kernels `matmul_ogs_details/_p_matmul_ogs.py` (`_p_matmul_ogs`: `tl.assume`)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from skel.kernels.flow import (args_of, binary, branches, broadcast_axes, call_name, calls_in, constant, has_call,
                               is_call, is_none, is_slice, name_of, names_in, negated, operands, receiver,
                               subscript_pair, subscripted, walk)
from skel.skeletons.predicates.addresses import gathered_address
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls
from skel.skeletons.patterns import addresses

if TYPE_CHECKING:
    from skel.kernels.flow import CallInfo, Flow, Node
    from skel.kernels.model import KernelFacts

# --- how an integer tensor varies from lane to lane -------------------------------------
# Per axis ("v": a 1-D vector, "0": made a column by `[:, None]`, "1": a row by `[None, :]`),
# from hintable to hopeless. A hint can only restore a UNIT run: consecutive lanes at
# consecutive addresses. REGULAR and DATA lanes have no run to restore, and hinting them
# would be false (wrong results, not a slowdown).
UNIT = 1  # consecutive integers: `arange + s`, `offs % n` between wraps, `offs * stride` (stride may be 1)
REGULAR = 2  # a pattern without a run: `offs * 2` (interleaved pairs), `offs // n` (constant runs)
DATA = 3  # picked per lane by values read from memory: gathers, cumsum positions, data-chosen values


class Lanes(NamedTuple):
    axes: dict[str, int]  # axis -> UNIT / REGULAR / DATA; axes left out are uniform
    data: bool  # depends on memory (a loaded scalar is uniform, but data all the same)


SCALAR = Lanes({}, False)
ROW_AXIS = {"v": "0"}  # what `x[:, None]` does to a 1-D vector's axis
COL_AXIS = {"v": "1"}  # ... and `x[None, :]`
MEMORY = ("tl.load", "tl.atomic_add", "tl.atomic_max", "tl.atomic_min", "tl.atomic_and", "tl.atomic_or",
          "tl.atomic_xor", "tl.atomic_xchg", "tl.atomic_cas")
# the value is the first operand's, lanes unchanged (casts, hints, broadcasts)
SAME_LANES = ("tl.max_contiguous", "tl.multiple_of", "tl.max_constancy", "tl.cast", ".to", ".cast",
              "tl.broadcast_to", ".broadcast_to")
CLAMPS = ("tl.minimum", "tl.maximum", "tl.clamp", "min", "max")
UNIFORM = ("tl.program_id", "tl.num_programs", "tl.full", "tl.zeros", "tl.ones", "tl.zeros_like", "tl.ones_like",
           "tl.full_like", "tl.cdiv", "triton.cdiv", "triton.next_power_of_2")
REDUCTIONS = ("tl.sum", "tl.max", "tl.min", "tl.reduce", "tl.argmax", "tl.argmin", "tl.xor_sum",
              ".sum", ".max", ".min")
# scans and data-driven permutations: each lane's value follows the data, not the lane (a
# compaction's `tl.cumsum(keep) - 1` write positions)
SCANS = ("tl.cumsum", "tl.cumprod", "tl.associative_scan", "tl.sort", "tl.gather", "tl.histogram",
         ".cumsum", ".sort")


def _worst(*lanes: Lanes) -> Lanes:
    axes: dict[str, int] = {}
    for ln in lanes:
        for ax, kind in ln.axes.items():
            axes[ax] = max(axes.get(ax, 0), kind)
    return Lanes(axes, any(ln.data for ln in lanes))


def _broken(ln: Lanes) -> Lanes:
    """What an operation that breaks unit runs (`//`, `* 2`, a comparison) leaves."""
    return Lanes({ax: max(kind, REGULAR) for ax, kind in ln.axes.items()}, ln.data)


def _as_data(ln: Lanes) -> Lanes:
    return Lanes(dict.fromkeys(ln.axes, DATA), True)


def _sum(a: Lanes, b: Lanes) -> Lanes:
    """`a + b`: a unit run survives adding something regular on its axis (the flattened
    `row * stride + col` with `row, col = offs // n, offs % n`), not per-lane data."""
    axes = dict(a.axes)
    for ax, kind in b.axes.items():
        mine = axes.get(ax)
        if mine is None:
            axes[ax] = kind
        elif DATA in (mine, kind):
            axes[ax] = DATA
        elif mine == kind == UNIT:
            axes[ax] = REGULAR  # offs + offs: stride 2
        else:
            axes[ax] = min(mine, kind)
    return Lanes(axes, a.data or b.data)


def _literal_factor(e) -> int | None:
    """The integer a scalar factor certainly is: a literal, `-2`, `2 * 3` (None: unknown)."""
    value = constant(e)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    inner = negated(e)
    if inner is not None:
        v = _literal_factor(inner)
        return -v if v is not None else None
    if binary(e, "*"):
        left, right = (_literal_factor(x) for x in operands(e))
        return left * right if left is not None and right is not None else None
    return None


def _product(a: Lanes, b: Lanes, left, right) -> Lanes:
    """`a * b`: a literal factor other than ±1 spreads the lanes apart (`pair * 2`: the
    interleaved real/imaginary halves, stride 2). A runtime stride keeps the run: Triton
    specializes an argument equal to 1 (the inner dimension's stride)."""
    if a.axes and b.axes:
        return _broken(_worst(a, b))
    vec, factor = (a, right) if a.axes else (b, left)
    value = _literal_factor(factor)
    out = Lanes(vec.axes, a.data or b.data)
    return _broken(out) if value is not None and abs(value) != 1 else out


def _binary(e, env) -> Lanes:
    left, right = operands(e)
    a, b = _lanes(left, env), _lanes(right, env)
    if binary(e, "+", "-"):
        return _sum(a, b)
    if binary(e, "*"):
        return _product(a, b, left, right)
    if binary(e, "%") and not b.axes:
        return Lanes(a.axes, a.data or b.data)  # runs survive between the wraps
    return _broken(_worst(a, b))  # `//`, shifts, bit ops, a per-lane divisor


def _select(cond: Lanes, a: Lanes, b: Lanes) -> Lanes:
    """`tl.where(cond, a, b)` per element. Two runs (pointers or offsets into two sources)
    stay a run; a run with a uniform fallback (`tl.where(mask, offs, 0)`) too. Two uniform
    values picked per lane are no run, and data when either value or the choice is read
    from memory (a position per lane: `tl.where(is_h, pos_h, pos_t)`)."""
    axes: dict[str, int] = {}
    for ax in set(cond.axes) | set(a.axes) | set(b.axes):
        ka, kb = a.axes.get(ax), b.axes.get(ax)
        if DATA in (ka, kb):
            axes[ax] = DATA
        elif ka is None and kb is None:
            axes[ax] = DATA if a.data or b.data or cond.data else REGULAR
        elif ka is None or kb is None:
            fallback = a if ka is None else b
            axes[ax] = DATA if fallback.data else (ka or kb or REGULAR)
        else:
            axes[ax] = UNIT if ka == kb == UNIT else max(ka, kb)
    return Lanes(axes, cond.data or a.data or b.data)


def _call(c, env) -> Lanes:
    name = call_name(c)
    args = args_of(c)
    first = receiver(c) if name.startswith(".") else (args[0] if args else None)
    if name == "tl.arange":
        return Lanes({"v": UNIT}, False)
    if name in MEMORY:
        return _as_data(_lanes(first, env)) if first is not None else Lanes({}, True)
    if name == "tl.where" and len(args) >= 3:
        return _select(*(_lanes(x, env) for x in args[:3]))
    parts = [_lanes(x, env) for x in ([first] if name.startswith(".") and first is not None else []) + args]
    if name in SCANS:
        return _as_data(_worst(*parts))
    if name in REDUCTIONS or name in UNIFORM:  # (a partial reduction of a tile: approximated)
        return Lanes({}, _worst(*parts).data)
    if name in SAME_LANES and first is not None:
        return _lanes(first, env)
    if name in CLAMPS:
        return _worst(*parts)
    return _broken(_worst(*parts))  # a helper or math function: no run is known to survive


def _subscript(e, env) -> Lanes:
    inner = _lanes(subscripted(e), env)
    pair = subscript_pair(e)
    if pair is None:
        return inner
    a, b = pair
    move = ROW_AXIS if is_slice(a) and is_none(b) else COL_AXIS if is_none(a) and is_slice(b) else {}
    return Lanes({move.get(ax, ax): kind for ax, kind in inner.axes.items()}, inner.data)


def _lanes(e, env: dict[str, Lanes]) -> Lanes:
    """How ``e`` varies across lanes, given the names' lanes in ``env``."""
    name = name_of(e)
    if name is not None:
        return env.get(name, SCALAR)
    if is_call(e):
        return _call(e, env)
    if binary(e, "+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>", "@"):
        return _binary(e, env)
    arms = branches(e)
    if arms is not None:  # `a if FLAG else b`: chosen for the whole block
        return _worst(_lanes(arms[0], env), _lanes(arms[1], env))
    if subscript_pair(e) is not None:
        return _subscript(e, env)
    if not names_in(e) and not calls_in(e):
        return SCALAR  # literals
    # comparisons, `-x`, attributes, anything else: what it reads, with no run kept
    return _broken(_worst(*(env.get(n, SCALAR) for n in names_in(e)),
                          *(_call(c, env) for c in calls_in(e))))


def _name_lanes(fl) -> dict[str, Lanes]:
    """Every name's lanes over all its definitions (the worst wins: a hint must hold on
    every path), iterated over the name chains until nothing changes."""
    cached = fl.memo.get("contiguity-lanes")
    if isinstance(cached, dict):
        return cached
    # names in source order, each updated in place: a name defined from earlier ones is
    # final in the first sweep, and only loop-carried names take another (a sweep that
    # changes nothing ends it)
    order = sorted(fl.defs.items(), key=lambda kv: min(d.line for d in kv[1]))
    # `x *= 2`, `x //= n` ... change x's lanes; `x += s` is folded in by the merge of defs
    scaled = {n for n, defs in order if any(d.aug and d.op not in ("+=", "-=") for d in defs)}
    env: dict[str, Lanes] = {}
    # A definition's lanes depend only on the lanes of the names its value reads, so one is
    # evaluated again only when one of those changed since it last was: the same sweeps and
    # the same fixpoint, without re-deriving every unchanged definition in each sweep.
    reads = {id(d): names_in(d.value) for _, defs in order for d in defs}
    changed_at: dict[str, int] = {}  # name -> the step of its latest change
    kept: dict[int, tuple[int, Lanes]] = {}  # id(def) -> (the step it was evaluated at, its lanes)
    step = 0
    for _ in range(12):
        changed = False
        for n, defs in order:
            parts = []
            for d in defs:
                hit = kept.get(id(d))
                if hit is None or any(changed_at.get(r, -1) > hit[0] for r in reads[id(d)]):
                    hit = kept[id(d)] = (step, _lanes(d.value, env))
                parts.append(hit[1])
            lanes = _worst(*parts)
            if n in scaled:
                lanes = _broken(lanes)
            if env.get(n) != lanes:
                env[n] = lanes
                changed = True
                step += 1
                changed_at[n] = step
        if not changed:
            break
    fl.memo["contiguity-lanes"] = env
    return env


def _unit_run(ln: Lanes) -> bool:
    return UNIT in ln.axes.values()


# --- compile-time values ------------------------------------------------------------------
# calls whose value is known at compile time when their arguments are
FOLDABLE = ("triton.next_power_of_2", "triton.cdiv", "tl.cdiv", "tl.constexpr", "min", "max", "int", "abs")


def _compile_time(k, fl) -> set[str]:
    """Constexpr parameters and the locals computed only from them and literals
    (`half = ROTARY // 2`): Triton folds them, its axis analysis sees their values."""
    cached = fl.memo.get("contiguity-compile-time")
    if isinstance(cached, set):
        return cached
    known = {p.name for p in k.params if p.constexpr}
    changed = True
    while changed:
        changed = False
        for n, defs in fl.defs.items():
            if n not in known and all(names_in(d.value) <= known
                                      and all(call_name(c) in FOLDABLE for c in calls_in(d.value))
                                      for d in defs):
                known.add(n)
                changed = True
    fl.memo["contiguity-compile-time"] = known
    return known


# --- the three ways an address hides a run -------------------------------------------------
# Each test looks for its cheap structural sign first (a gather, a `%`/`//`, a `tl.where`)
# and only then asks for the lanes of every name (``_name_lanes``) or the compile-time names
# (``_compile_time``), both kept in the data flow's memo: most kernels have none of the
# three, and the lane analysis is the costly part.
def _gathered_rows(fl: Flow, addr: Node, exprs: list[Node]) -> bool:
    """Rows gathered through loaded indices and read along a unit-stride inner vector
    (`table + rows[:, None] * stride + cols[None, :]`): the runs a hint can restore. A
    1-D gather (`table + idx`) reads one random element per lane, and an interleaved
    inner vector (`pair[None, :] * 2`) has stride 2: no run to hint."""
    return (broadcast_axes(exprs) == {"col", "row"} and bool(gathered_address(fl, addr))
            and _unit_run(_lanes(addr, _name_lanes(fl))))


def _gathered_unaligned(fl: Flow, call: CallInfo, addr: Node, k: KernelFacts) -> bool:
    """Gathered rows (``_gathered_rows``) whose alignment the compiler cannot see
    (``_alignment_unknown``)."""
    exprs = fl.closure(addr)[1]
    return _gathered_rows(fl, addr, exprs) and _alignment_unknown(k, fl, exprs)


def _wrapped_offsets(fl: Flow, call: CallInfo, addr: Node, k: KernelFacts) -> bool:
    """`vec % n` or `vec // n` on offsets derived from `tl.arange` (not loaded: dividing
    an index read from memory, `expert // per_rank`, is a gather, not a wrap), with a
    scalar n known only at run time, in an address that keeps a unit run. A divisor
    from constexprs and literals is folded: Triton's axis analysis knows the runs."""
    exprs = fl.closure(addr)[1]
    divisions = [c for e in exprs for c in _divisions(e)]
    # lanes come only from `tl.arange`: a division whose dividend never reads one (`pid //
    # n_heads`) cannot count, and the lane analysis (``_name_lanes``) is the costly part
    divisions = [c for c in divisions if _reads_arange(fl, operands(c)[0])]
    if not divisions or not _unit_run(_lanes(addr, _name_lanes(fl))):
        return False
    for c in divisions:
        dividend, divisor = (_lanes(x, _name_lanes(fl)) for x in operands(c))
        if dividend.axes and DATA not in dividend.axes.values() and not divisor.axes \
                and not names_in(operands(c)[1]) <= _compile_time(k, fl):
            return True
    return False


def _divisions(e):
    return [n for n in walk(e) if binary(n, "%", "//")]


def _reads_arange(fl, e) -> bool:
    """``e`` reads a `tl.arange`, itself or through the definitions of the names it reads:
    every lane axis starts at one (see ``_call``), so without one ``e`` is uniform."""
    return has_call([e], "tl.arange") or not names_in(e).isdisjoint(_arange_names(fl))


def _arange_names(fl) -> set[str]:
    """Names with a definition that reads a `tl.arange`, directly or through other names."""
    cached = fl.memo.get("contiguity-arange-names")
    if isinstance(cached, set):
        return cached
    out = {n for n, defs in fl.defs.items() if any(has_call([d.value], "tl.arange") for d in defs)}
    changed = True
    while changed:
        changed = False
        for n, defs in fl.defs.items():
            if n not in out and any(not names_in(d.value).isdisjoint(out) for d in defs):
                out.add(n)
                changed = True
    fl.memo["contiguity-arange-names"] = out
    return out


def _pointer_select(fl: Flow, call: CallInfo, addr: Node) -> bool:
    """A per-element `tl.where` choosing between runs (pointers or offsets into two
    sources) inside an address that keeps a unit run. A scalar `tl.where(flag, a, b)`
    keeps both branches' alignment; a `tl.where` under a reduction (`tl.sum(tl.where(...))`)
    is a scalar by the time it reaches the address; one picking per-lane positions
    (cumsum write slots, binary-search probes, `tl.where(is_h, pos_h, pos_t)`) has no run."""
    exprs = fl.closure(addr)[1]
    if not any(call_name(c) == "tl.where" for e in exprs for c in calls_in(e)) \
            or not _unit_run(_lanes(addr, _name_lanes(fl))):
        return False
    for e in exprs:
        reduced = {id(inner) for c in calls_in(e) if call_name(c) in REDUCTIONS for inner in calls_in(c)}
        for c in calls_in(e):
            if call_name(c) != "tl.where" or id(c) in reduced or not args_of(c):
                continue
            if _lanes(args_of(c)[0], _name_lanes(fl)).axes and _unit_run(_lanes(c, _name_lanes(fl))):
                return True
    return False


#: atomics are memory accesses too: a scatter-add through loaded indices (embedding or MoE
#: backward) loses vector width the same way a gathered load does
ATOMICS = MEMORY[1:]
ACCESSES = ("tl.load", "tl.store", *ATOMICS)


HINTS_USED = calls("tl.multiple_of", "tl.max_contiguous", "tl.max_constancy", "tl.assume",
                   name="contiguity-hint",
                   describe="`tl.multiple_of` / `tl.max_contiguous` / `tl.max_constancy` / `tl.assume`")

#: the target type of a cast to a pointer: `tl.pointer_type(...)`, or a pointer argument's
#: `.dtype` (`tl.cast(v, out_ptr.dtype)`)
_POINTER_TYPE = re.compile(r"pointer_type|\w*ptr\w*\.dtype")


def _loaded_pointer(fl, exprs) -> bool:
    """A value read from memory cast to a pointer on the address's path (a table of
    per-layer or peer buffers: `tl.cast(tl.load(ptrs + layer), out_ptr.dtype)`): its
    alignment is unknown. A computed pointer re-typed (`(p + 576).to(tl.pointer_type(..))`)
    is not one."""
    for e in exprs:
        for c in calls_in(e):
            name, args = call_name(c), args_of(c)
            if name.endswith(".to") and args and _POINTER_TYPE.search(fl.text(args[0])):
                value = receiver(c)
            elif name == "tl.cast" and len(args) > 1 and _POINTER_TYPE.search(fl.text(args[1])):
                value = args[0]
            else:
                continue
            if value is not None and _is_load(fl, value):
                return True
    return False


def _is_load(fl, e, hops: int = 4) -> bool:
    """``e`` is a value read from memory: a `tl.load(...)`, or a name bound to one (through
    plain renames), not a value computed from one."""
    for _ in range(hops):
        if is_call(e, "tl.load"):
            return True
        n = name_of(e)
        defs = fl.defs.get(n, []) if n is not None else []
        if len(defs) != 1 or defs[0].aug:
            return False
        e = defs[0].value
    return False


def _alignment_unknown(k, fl, exprs) -> bool:
    """Why the compiler cannot see a gathered row start's alignment, if it cannot. Row
    starts `rows * stride` keep the alignment Triton specializes integer arguments on
    (divisible by 16, equal to 1): a loaded row index times a 16-divisible stride is
    16-divisible, and the inner `tl.arange` run is known. It is lost when an argument of the
    address is excluded from that specialization (`do_not_specialize`, or
    `do_not_specialize_on_alignment`) or when the base pointer itself is read from memory:
    the H200 run of `benchmarks/performance/gather_hints.py` shows all three, in PTX and in time."""
    if k.backend_hint not in ("", "rocm"):
        # checked on NVIDIA's compiler only (and AMD's shares its axis analysis): another
        # vendor's Triton (Ascend, MLU, XPU) may not carry the divisibility through a gather
        return True
    jit = k.decorator("triton.jit")
    unspecialized = set()
    if jit is not None:
        for kw in ("do_not_specialize", "do_not_specialize_on_alignment"):
            unspecialized |= set(re.findall(r"[A-Za-z_]\w*", jit.kwargs.get(kw, "")))
    names = set().union(*(names_in(e) for e in exprs)) if exprs else set()
    if names & unspecialized:
        return True
    return _loaded_pointer(fl, exprs)


GATHERED_ADDRESS = addresses(
    of=ACCESSES, kernel_where=_gathered_unaligned, name="address-from-loaded-indices",
    describe="a load/store/atomic address of rows gathered through an index vector loaded from memory, read "
    "along a unit-stride inner vector, whose alignment the compiler cannot see (a `do_not_specialize` stride, a "
    "pointer read from memory, another vendor's Triton)")
WRAPPED_OFFSETS = addresses(
    of=ACCESSES, kernel_where=_wrapped_offsets, name="address-from-runtime-mod-div",
    describe="a load/store address from `tl.arange` offsets wrapped with `% n` or split with `// n` (n known "
    "only at run time), keeping a unit-stride run")
POINTER_SELECT = addresses(
    of=ACCESSES, where=_pointer_select, name="address-from-per-element-where",
    describe="a load/store address chosen per element with `tl.where` between unit-stride pointers or offsets")
IRREGULAR_ADDRESS = GATHERED_ADDRESS | WRAPPED_OFFSETS | POINTER_SELECT

SKELETON = Skeleton(
    id="contiguity-hints",
    title="Contiguity and alignment hints",
    summary="Add tl.multiple_of / tl.max_contiguous / tl.assume where gathers or %, // hide contiguity.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bmultiple_of\b", r"\bmax_contiguous\b", r"\bcontiguity hints?\b"),
    present=HINTS_USED,
    preconditions=[IRREGULAR_ADDRESS],
    subject=IRREGULAR_ADDRESS,
    env=Env(),
    helps=("memory",),
)
