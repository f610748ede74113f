"""Reduce within each warp with `__shfl_xor_sync`, not a shared-memory tree with a barrier per step.

## What it does
A block reduction written as the textbook shared-memory tree — every thread stores its
partial into `__shared__ float red[BLOCK]`, then `for (s = BLOCK / 2; s > 0; s >>= 1) { if
(tid < s) red[tid] += red[tid + s]; __syncthreads(); }` — becomes two levels: each warp
reduces its 32 values in registers with five `__shfl_xor_sync(0xffffffff, v, o)` steps
(`o` = 16, 8, 4, 2, 1; `__shfl_down_sync` when only lane 0 needs the result), lane 0 of
each warp writes one partial into `__shared__ float red[WARPS]`, one `__syncthreads()`, and
the first warp (or every warp, when all threads need the result) reduces those ≤ 32
partials with shuffles again. The same for max, min, or any associative operator; a
second slot set (`red[2][WARPS]`) avoids the barrier that guards reuse between two
reductions in a row (softmax: max, then sum).

## Why it is faster
The tree costs log2(BLOCK) barriers — 10 for 1024 threads — and at each step every thread
of the block waits for the slowest warp, while half of the remaining threads idle and the
other half do one shared-memory load, one add and one store. A shuffle exchanges registers
between lanes in one instruction with no shared memory and no block barrier (the warp
executes it together), so the whole reduction is ~10 shuffles and 1 barrier. In a row
kernel (softmax, RMSNorm, LayerNorm) with short rows, the reduction is a large share of
the time, and the saved barriers also let the other resident blocks' memory traffic
proceed instead of stalling behind them.

## Applies when
- the kernel reduces through a `__shared__` array in a loop that halves a stride
  (`s >>= 1`, `s /= 2`) with `__syncthreads()` inside the loop, accumulating into the
  array (`red[tid] += red[tid + s]`, `red[tid] = fmaxf(red[tid], red[tid + s])`).

## Does not apply when
- the loop is not a reduction (a bitonic sort's compare-and-swap, a transpose) even though
  it halves a stride and synchronises;
- the values are not 32-bit-or-smaller registers a shuffle can move in one or two steps
  (large structs: shuffling them field by field can cost more than the tree);
- the kernel targets hardware whose warps are not 32 lanes (AMD wavefronts are 64: the
  masks and the number of steps change, use `__shfl_xor` with the wavefront size there);
- only a few threads take part (a tree over 32 values or fewer is already one warp's work).
A `__shfl_sync(mask, v, 0)` broadcast (lane 0 hands its value to the warp) is not a shuffle
reduction: with no xor/down offsets and no accumulation, a kernel holding only that still
reduces through its tree, and is suggested. Already using shuffles, the skeleton is
suggested as a refinement when a shared-memory tree with a barrier per step is left beside
them (the per-warp partials still combined by halving).

## References
- CUDA C++ Programming Guide, "Warp Shuffle Functions" (`__shfl_sync`, `__shfl_down_sync`,
  `__shfl_xor_sync`, the mask argument, the reduction example):
  https://docs.nvidia.com/cuda/cuda-c-programming-guide/
- DeepGEMM `deep_gemm/include/deep_gemm/common/math.cuh` (lines 127-135: a butterfly of
  `__shfl_xor_sync(mask, value, 16 … 1)` generic over the operator) — at `54e2261`, 2026-06-23
- sglang 0.5.23 (wheel) `sglang/kernels/jit/csrc/diffusion/qknorm_rope.cuh`
  (`part[0] += __shfl_xor_sync(0xffffffffu, part[0], mask)`: the RMS of a head in registers)
- the runnable pair: `skel/skeletons/catalog/warp_shuffle_reduction/example.py` (row softmax, two
  block reductions: shared tree → shuffles)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import absent, any_of, calls_where, names_where
from skel.skeletons.predicates.cuda import HALVING, code, line_of, shared_arrays, sync_lines

if TYPE_CHECKING:
    from skel.kernels.model import Assign, Call, KernelFacts, Loop

#: warp-level exchange or reduction already in the kernel: shuffles (with or without the
#: mask), the sm_80 `__reduce_*_sync`, cooperative groups' tile methods and `cg::reduce`,
#: CUB's warp/block reductions (built on shuffles), their PTX
SHUFFLES = re.compile(r"^(?:__shfl(?:_xor|_down|_up)?(?:_sync)?|__reduce_\w+_sync|"
                      r"\.shfl(?:_xor|_down|_up)?|(?:cg|cooperative_groups)::reduce|"
                      r"ptx:shfl\.\S*|ptx:redux\.sync\S*)$")
WARP_PRIMITIVE_TYPES = re.compile(r"^(?:\w+::)*(?:WarpReduce|BlockReduce)$")
_COMBINE = re.compile(r"\b(?:fmaxf|fminf|fmax|fmin|max|min|__hmax|__hmin|__hadd)\s*\(|[+*|&^]")


def _tree_loops(k: KernelFacts) -> list[int]:
    """A loop that halves a stride, has `__syncthreads()` inside, and combines two elements of a
    `__shared__` array into one (`red[tid] += red[tid + s]`)."""
    shared = shared_arrays(k)
    if not shared:
        return []
    syncs = sync_lines(k)
    text = code(k)
    lines: list[int] = []
    for lp in k.loops:
        header = " ".join(lp.args) if lp.args else ""
        halving = HALVING.search(header) or next(
            (m for a in k.assigns if a.targets and lp.line <= a.line <= lp.end_line
             for m in [HALVING.search(f"{a.targets[0]} {a.op} {a.value}")] if m), None)
        if not halving or not any(lp.line <= s <= lp.end_line for s in syncs):
            continue
        stride = halving.group(1) or halving.group(3)
        combine = [a.line for a in k.assigns if lp.line <= a.line <= lp.end_line and _combines(a, shared, stride)]
        combine += _combining_lines(k, text, lp, shared, stride)
        if combine:
            lines += [lp.line, min(combine)]
    return lines


def _combining(rhs: str) -> bool:
    """An operator joins two values (`+`, `fmaxf(..)`), not counting what sits inside a
    subscript (`s[tid ^ j]` is a bitonic sort's partner index, not a combination)."""
    return bool(_COMBINE.search(re.sub(r"\[[^\]]*\]", "[]", rhs)))


def _partner(rhs: str, shared: set[str], stride: str) -> bool:
    """The right-hand side reads the shared array at an index holding the stride:
    `red[tid + s]` (a scan's `buf[ai]`, computed from another offset, is not a tree's partner)."""
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\[([^\]]*)\]", rhs):
        if m.group(1) in shared and re.search(rf"\b{re.escape(stride)}\b", m.group(2)):
            return True
    return False


def _combines(a: Assign, shared: set[str], stride: str) -> bool:
    target = (a.targets[0] if a.targets else "").strip()
    base = re.match(r"[A-Za-z_]\w*", target)
    if not base or base.group(0) not in shared or "[" not in target or not _partner(a.value, shared, stride):
        return False
    return a.op in ("+=", "*=", "|=", "&=", "^=", "-=") or (a.op == "=" and _combining(a.value))


def _combining_lines(k: KernelFacts, text: str, lp: Loop, shared: set[str], stride: str) -> list[int]:
    """The same test on the source, for statements the facts may record differently:
    `red[tid] += red[tid + s];`, `red[tid] = fmaxf(red[tid], red[tid + s]);` inside the loop."""
    names = "|".join(map(re.escape, sorted(shared)))
    pat = re.compile(rf"\b(?:{names})(?:\s*\[[^\]]*\])+\s*(\+=|\*=|\|=|&=|\^=|-=|=(?!=))([^;]*);")
    out = []
    for m in pat.finditer(text):
        ln = line_of(k, text, m.start())
        if not lp.line <= ln <= lp.end_line:
            continue
        op, rhs = m.group(1), m.group(2)
        if _partner(rhs, shared, stride) and (op != "=" or _combining(rhs)):
            out.append(ln)
    return out


#: an indexed shuffle (`__shfl_sync(mask, v, src)`, `__shfl(v, src)`): a broadcast or a
#: gather from one lane unless the source lane moves with an offset (`lane ^ o`, `lane + o`)
_INDEXED_SHUFFLE = re.compile(r"^(?:__shfl(?:_sync)?|\.shfl)$")


def _reducing_shuffle(c: Call, k: KernelFacts) -> bool:
    """A shuffle that reduces: xor/down/up offsets, the `__reduce_*_sync` and group
    reductions, or an indexed `__shfl_sync` whose source lane is an offset from the lane
    (`lane ^ o`). `__shfl_sync(mask, v, 0)` broadcasts lane 0's value: no tree, no
    accumulation."""
    if not _INDEXED_SHUFFLE.match(c.name):
        return True
    src = c.args[-1] if c.args else ""
    if c.name == "__shfl_sync" and len(c.args) >= 3:
        src = c.args[2]
    elif c.name in ("__shfl", ".shfl") and len(c.args) >= 2:
        src = c.args[1]
    return bool(re.search(r"[\^+-]", src))


SHUFFLE_USED = any_of(
    calls_where(like=SHUFFLES, where=_reducing_shuffle, name="shuffle-calls",
                describe="warp shuffle / reduce calls (`__shfl_xor_sync`; a broadcast `__shfl_sync(mask, v, 0)` "
                "is not one)"),
    names_where(WARP_PRIMITIVE_TYPES, name="warp-reduce-types", describe="CUB warp/block reduce types"),
    name="warp-shuffle", describe="warp shuffles or warp/block reduce primitives (`__shfl_xor_sync`, "
    "`__shfl_down_sync`, `cub::WarpReduce`)")
SHARED_TREE = custom(
    "shared-tree-reduction",
    "a `__shared__` reduction tree: a loop halving a stride with `__syncthreads()` inside, combining `red[tid]` "
    "with `red[tid + s]`",
    _tree_loops)

#: Present and complete: no shared-memory tree left beside the shuffles. A kernel that
#: reduces each warp with shuffles but still combines the per-warp partials (or a second
#: reduction) with a halving loop and a barrier per step keeps those barriers.
NO_TREE_LEFT = absent(
    SHARED_TREE, name="no-shared-tree-left",
    describe="no shared-memory tree left beside the shuffles (a halving loop with `__syncthreads()` per step "
    "still combines partials: reduce the per-warp partials with shuffles too)")

SKELETON = Skeleton(
    id="warp-shuffle-reduction",
    title="Warp-shuffle reductions instead of a shared-memory tree",
    summary="Reduce 32 lanes in registers with __shfl_xor_sync, then one slot per warp: 2 barriers, not log2(BLOCK).",
    category=Category.ARITHMETIC,
    doc=__doc__,
    ruled_out_by=(r"\bshuffles?\b", r"\b__shfl\w*", r"\bwarp[- ](level )?reduc\w*"),
    present=SHUFFLE_USED,
    preconditions=[SHARED_TREE],
    subject=SHARED_TREE,
    env=Env(backends=("cuda",)),
    helps=("latency",),
    languages=("cuda",),
    refine=[NO_TREE_LEFT],
)
