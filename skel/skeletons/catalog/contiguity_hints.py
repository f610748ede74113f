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
MoE backward kernels) depends on one of:
- a vector of indices loaded from memory (gathers through `sorted_token_ids`, slot maps,
  embedding indices) selecting rows that are read along a contiguous inner vector
  (`rows[:, None] * stride + cols[None, :]`) — hint the inner dimension and the
  row-start alignment;
- an offset vector wrapped or split with `%` / `//` (the `offs % M` trick of the Triton
  matmul tutorial, flattened `idx // inner` loops);
- a pointer chosen per element with `tl.where` (selecting between source tensors).

## Does not apply when
- offsets are `pid * BLOCK + tl.arange(...)` or `row * stride` with ordinary integer
  arguments: Triton already specializes arguments divisible by 16, so the information is
  there and a hint adds nothing;
- the hint might be false (odd strides, unaligned slices, views): a wrong
  `multiple_of`/`max_contiguous` silently produces wrong results, not a slowdown; the
  tutorial's `% N` wrap is only safe to hint when N is a multiple of the vector width
  (16 bytes / element size): with N = 50257 fp16 in a row-padded buffer the hinted
  GEMM faulted with a misaligned address on an H200 (Triton 3.6), since the vectors
  after the wrap start at unaligned columns;
- scalar `//` / `%` on program ids (`i_b, i_h = i_bh // H, i_bh % H`) — that does not
  touch the vector offsets;
- a 1-D gather (`tl.load(table + idx)`, one random element per lane: binary-search
  probes, routing tables, compaction scatters): there is no contiguous run to restore,
  and a hint would be false.

## References
- Triton tutorials `python/tutorials/03-matrix-multiplication.py` (`matmul_kernel`: `% M` then `tl.max_contiguous(tl.multiple_of(...))`)
- Triton tutorials `python/tutorials/09-persistent-matmul.py` (`matmul_kernel`)
- flash-linear-attention `fla/ops/generalized_delta_rule/dplr/chunk_A_bwd.py` (`chunk_dplr_bwd_kernel_intra`: the last-row pointer `gi + (min(i_t * BT + BT, T) - 1) * stride_qk + o_k` hinted with `tl.max_contiguous(tl.multiple_of(p_gn, BK), BK)`) — at `49b00f0a94`, before 2025-07-01
- triton_kernels `matmul_ogs_details/_p_matmul_ogs.py` (`_p_matmul_ogs`: `tl.assume`)
"""

from __future__ import annotations

from skel.kernels.flow import (args_of, binary, broadcast_axes, call_name, calls_in, flow_of, names_in, operands,
                               walk)
from skel.skeletons.predicates.addresses import gathered_address, is_vector_expr
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, custom


def _wrapped_offsets(fl, exprs, constexprs: set[str]) -> bool:
    """`vec % M` or `vec // n` on an arange-derived vector, with a runtime divisor.

    A literal or constexpr divisor is left out: Triton's axis analysis folds those
    (or the result is genuinely not contiguous, like `arange // 2`)."""
    for e in exprs:
        for n in walk(e):
            if binary(n, "%", "//") and is_vector_expr(fl, operands(n)[0]):
                divisor = names_in(operands(n)[1])
                if divisor and not divisor <= constexprs:
                    return True
    return False


def _pointer_select(fl, exprs) -> bool:
    """A per-element `tl.where` inside the address (choosing pointers or offsets by a
    vector condition); a scalar `tl.where(flag, a, b)` keeps both branches' alignment."""
    for e in exprs:
        for c in calls_in(e):
            if call_name(c) == "tl.where" and args_of(c) and is_vector_expr(fl, args_of(c)[0]):
                return True
    return False


ATOMICS = ("tl.atomic_add", "tl.atomic_max", "tl.atomic_min", "tl.atomic_and", "tl.atomic_or",
           "tl.atomic_xor", "tl.atomic_xchg", "tl.atomic_cas")


def _addresses(k, test):
    fl = flow_of(k)
    constexprs = {p.name for p in k.params if p.constexpr}
    lines = []
    # atomics are memory accesses too: a scatter-add through loaded indices (embedding or
    # MoE backward) loses vector width the same way a gathered load does
    for c in fl.named("tl.load", "tl.store", *ATOMICS):
        addr = c.arg(0, "pointer")
        if addr is not None and test(fl, addr, fl.closure(addr)[1], constexprs):
            lines.append(c.line)
    return lines


HINTS_USED = calls("tl.multiple_of", "tl.max_contiguous", "tl.max_constancy", "tl.assume",
                   name="contiguity-hint",
                   describe="`tl.multiple_of` / `tl.max_contiguous` / `tl.max_constancy` / `tl.assume`")


def _gathered_rows(fl, addr, exprs) -> bool:
    """Rows gathered through loaded indices and read along a contiguous inner vector
    (`table + rows[:, None] * stride + cols[None, :]`): the runs a hint can restore. A
    1-D gather (`table + idx`) reads one random element per lane: no run to hint."""
    return bool(gathered_address(fl, addr)) and broadcast_axes(exprs) == {"col", "row"}


GATHERED_ADDRESS = custom(
    "address-from-loaded-indices",
    "a load/store/atomic address of rows gathered through an index vector loaded from memory, read along a "
    "contiguous inner vector",
    lambda k: _addresses(k, lambda fl, addr, exprs, cx: _gathered_rows(fl, addr, exprs)))
WRAPPED_OFFSETS = custom(
    "address-from-runtime-mod-div",
    "a load/store address from offsets wrapped with `% n` or split with `// n` (runtime n)",
    lambda k: _addresses(k, lambda fl, addr, exprs, cx: _wrapped_offsets(fl, exprs, cx)))
POINTER_SELECT = custom(
    "address-from-per-element-where", "a load/store address chosen per element with `tl.where`",
    lambda k: _addresses(k, lambda fl, addr, exprs, cx: _pointer_select(fl, exprs)))
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
    env=Env(),
    helps=("memory",),
)
