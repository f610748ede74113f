"""Tell the cache what to keep: evict_first for streamed data, evict_last for reused data.

## What it does
Adds `eviction_policy="evict_first"` to loads (and stores) of data that each program
reads once while streaming through a loop, and `eviction_policy="evict_last"` to small
data every program reads again (a norm's weight vector, a gate, a lookup table). A
`cache_modifier=".cg"` (read around L1, for data other programs of the same launch
write) is a different control: it says nothing about what L2 keeps, so a kernel with
only `cache_modifier` does not use this technique yet.

## Why it is faster
L2 is shared by all SMs. A memory-bound kernel that streams rows or time steps
otherwise fills L2 with lines that are never read again and pushes out the lines that
*are* re-read (weights, per-head state, the other operand). Marking the stream
evict-first and the reused data evict-last keeps the reused working set resident, so
those re-reads cost L2 latency instead of HBM bandwidth. The gain appears only when the
streamed bytes exceed L2 (tens of MB) and the reuse pattern is clear; otherwise the hints
are neutral.

## Applies when
- there is no `tl.dot` (GEMM/attention tiles are re-read by other programs, where
  evict_first would hurt), and either
- a loop over a runtime length (`range(0, n_cols, BLOCK)`, not a constexpr count) streams
  a row that a later loop reads again (a two-pass max/sum-then-normalize kernel), or
- every program loads the same vector (its address does not depend on `tl.program_id`),
  next to per-row data that does, and that vector's length is a runtime size: its mask
  bounds the `tl.arange` offsets by a non-constexpr argument (`cols < n_cols`), as the
  hidden-size weight of a row-wise norm.

## Does not apply when
- the re-read data is small by construction: a shared vector whose extent is a constexpr
  block (`tl.arange(0, 256)` unmasked, `offs < HEAD_DIM`, `r < WORLD_SIZE`) — a q/k-norm
  weight of one head, a per-rank or per-head table of a few entries — or a two-pass row
  walked in a constexpr number of blocks: a few KB stay in L1/L2 whatever the hint says;
- the total data fits in L2: nothing gets evicted either way;
- the "streamed" data is re-read by another program soon after (shared K/V heads in GQA,
  overlapping windows): evict_first turns L2 hits into HBM reads;
- on AMD the hints map to different cache controls; measure instead of assuming;
- as with all hints, they are performance-only: no effect on results, but also no
  guaranteed gain — keep them only when a measurement shows one.

## References
- flash-linear-attention `fla/ops/rwkv7/fused_k_update.py` (evict_last on the shared `ka`) — at `49b00f0a94`, before 2025-07-01
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skel.kernels.flow import ORDERING, comparison, flow_of, has_call, walk
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, custom
from skel.skeletons.predicates.dots import NO_DOT
from skel.skeletons.predicates.loops import runtime_trip_count

if TYPE_CHECKING:
    from skel.kernels.flow import CallInfo, Flow, Node
    from skel.kernels.model import KernelFacts


def _is_vector_load(fl: Flow, c: CallInfo) -> bool:
    addr = c.arg(0, "pointer")
    return addr is not None and has_call(fl.closure(addr)[1], "tl.arange")


def _multi_pass_rereads(k: KernelFacts) -> list[int]:
    """The same address loaded in two different loops: a two-pass kernel (max/sum, then
    normalize) that reads its row again, which only hits L2 if the first pass kept it."""
    fl = flow_of(k)
    seen: dict[str, list[CallInfo]] = {}
    lines = []
    for c in fl.loads():
        # a loop over a constexpr count (`tl.static_range(4)`) walks a row of a few blocks,
        # which L1/L2 hold between the passes whatever the hint says
        addr = c.arg(0, "pointer")
        if not c.loops or not runtime_trip_count(fl, k, c.loops[-1]) or not _is_vector_load(fl, c) or addr is None:
            continue
        earlier = seen.setdefault(fl.key(addr), [])
        if any(e.loops[-1].line != c.loops[-1].line and not e.exclusive_with(c) for e in earlier):
            lines.append(c.line)
        earlier.append(c)
    return lines


def _runtime_bound(fl: Flow, k: KernelFacts, side: Node) -> bool:
    """``side`` of a mask comparison is a runtime length: it reads a non-constexpr kernel
    argument (`n_cols`, `N`) or a value loaded from memory."""
    runtime = {p.name for p in k.params if not p.constexpr}
    names, exprs = fl.closure(side)
    return bool(names & runtime) or has_call(exprs, "tl.load")


def _runtime_extent(fl: Flow, k: KernelFacts, c: CallInfo) -> bool:
    """The load's mask bounds its `tl.arange` offsets by a runtime length (`cols < n_cols`):
    the vector spans a size only known at launch (a hidden dimension), which may be large.
    Without such a mask the extent is a constexpr block (`tl.arange(0, 256)`, `offs <
    HEAD_DIM`, `r < WORLD_SIZE`): a head-dim norm weight or a table of a few entries,
    a few KB that stay in L1/L2 whatever policy the load carries."""
    mask = c.arg(1, "mask")
    if mask is None:
        return False
    _, exprs = fl.closure(mask)
    for e in exprs:
        for n in walk(e):
            cmp = comparison(n)
            if cmp is None or cmp[1] not in ORDERING:
                continue
            left, _, right = cmp
            for offs, bound in ((left, right), (right, left)):
                if has_call(fl.closure(offs)[1], "tl.arange") and _runtime_bound(fl, k, bound):
                    return True
    return False


def _shared_vector_loads(k: KernelFacts) -> list[int] | None:
    """Vector loads every program repeats (no program id in the address) and whose length
    is a runtime size, in a kernel whose other loads are per program."""
    fl = flow_of(k)
    shared, per_program = [], []
    for c in fl.loads():
        addr = c.arg(0, "pointer")
        if not _is_vector_load(fl, c) or addr is None:  # (a vector load has an address)
            continue
        names, exprs = fl.closure(addr)
        if has_call(exprs, "tl.program_id", "tl.num_programs"):
            per_program.append(c.line)
        elif not any(lp.targets & names or any(lp.holds(d.line) for n in names for d in fl.defs.get(n, ()))
                     for lp in c.loops) and _runtime_extent(fl, k, c):
            shared.append(c.line)
    return shared if shared and per_program else None


#: Only `eviction_policy=` is this technique. A `cache_modifier=` (".cg", ".ca") picks
#: which cache level a load goes through, not what L2 keeps: a kernel with only that has
#: not told L2 what to evict, and mined examples of it are no evidence of this skeleton.
HINT_USED = calls("tl.load", "tl.store", kw="eviction_policy", name="eviction-policy",
                  describe="`tl.load`/`tl.store` with `eviction_policy`")
MULTI_PASS_REREAD = custom(
    "multi-pass-reread", "the same row loaded again by a later loop over a runtime length (two-pass kernel)",
    _multi_pass_rereads)
SHARED_VECTOR_LOAD = custom(
    "shared-vector-load",
    "a runtime-length vector every program loads again (no program id in its address), e.g. a norm weight",
    _shared_vector_loads)

#: the subject: loads an eviction hint would steer
STREAMED_OR_REREAD = SHARED_VECTOR_LOAD | MULTI_PASS_REREAD

SKELETON = Skeleton(
    id="eviction-hints",
    title="L2 eviction hints for streamed and reused data",
    summary="evict_first on loads streamed once, evict_last on small data every program re-reads (weights).",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\beviction\w*", r"\bevict_(first|last)\b"),
    present=HINT_USED,
    preconditions=[NO_DOT, STREAMED_OR_REREAD],
    subject=STREAMED_OR_REREAD,
    env=Env(),
    helps=("memory",),
)
