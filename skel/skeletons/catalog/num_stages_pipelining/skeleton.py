"""Software-pipeline tile loads across loop iterations with `num_stages`.

## What it does
Sets the pipeline depth of the kernel's main loop explicitly: `num_stages=` in the
autotune `triton.Config(...)`s (tuned together with the tiles), at the launch
(`kernel[grid](..., num_stages=3)`), or per loop with `tl.range(lo, hi, step,
num_stages=k)`. Triton's software pipeliner then keeps `k - 1` iterations of loads in
flight (cp.async on Ampere, TMA/async copies on Hopper) into multi-buffered shared
memory while the current iteration computes.

## Why it is faster
A loop that loads a tile and then uses it waits for global-memory latency on every
iteration unless the loads are issued ahead. Multi-buffering overlaps the next tiles'
loads with this tile's math (`tl.dot`, reductions), which is what lets a K-loop or a
recurrent scan approach bandwidth or tensor-core peak. The right depth depends on
tile size and SMEM: too shallow leaves latency exposed, too deep runs out of shared
memory or lowers occupancy — hence tuning it rather than relying on the backend default
(`num_stages=3` in the NVIDIA backend options of Triton 3.7).

## Applies when
- the kernel has a `range`/`tl.range` loop that streams *tiles*: its loads' addresses are
  vectors of offsets (`tl.arange`), block pointers or tensor descriptors, not scalars;
- and those tiles feed a `tl.dot` in the loop (the case the pipeliner handles best), or
  are 2-D tiles over a runtime-length dimension whose values are computed on (reductions,
  a scan, an online softmax). A tile gathered through a page index loaded in the same
  iteration still counts (paged attention): the pipeliner issues the index load a stage
  ahead of the tile;
- a loop streaming 1-D vectors into computation (a grid-stride loop over rows, a short
  constexpr loop over heads), their addresses reading no value loaded in the loop, is a
  near miss: `tl.range(..., num_stages=)` can pipeline it, at a smaller gain;
- no `num_stages` is set anywhere: in the autotune configs (written out, built by a helper
  function of the module such as `configs=gen_config()`, or spread from option dicts with
  `triton.Config({...}, **opts)`), at the launch (a keyword, or a `**opts` dict that sets
  it), or on a loop.

## Does not apply when
- the only streaming loops run over a LoRA rank (`range(0, tl.cdiv(K, BLOCK_K))` after
  `K = tl.minimum(K, rank)`): one to four iterations, nothing for a pipeline to overlap;
- the launch config comes from a tuned table: `kernel[grid](..., **config)` with the dict
  from a lookup (`get_config(M, E)`, `try_get_optimal_moe_config(...)`), a JSON file the
  module loads, or a table-format literal (`BLOCK_SIZE_*` keys, or both `num_warps` and
  `num_stages`); or JSON tables in a `configs/` folder beside the file. The table is
  already per-shape, per-GPU measurement (a plain `**kwargs` of a hand-set value or two
  does not count);
- the loop is a `tl.static_range` (unrolled, nothing to pipeline), a `while` loop, a
  `range` with a literal trip count (`range(2)`) or a 0/1 guard (`range(HAS_X)`);
- the loop's loads are scalars: a prefix sum of lengths, a serial prefix match, one
  interval's bounds per iteration — bookkeeping, with no tile to issue ahead;
- each iteration's load address depends on a value loaded in an earlier iteration:
  pointer chasing or a binary search (each probe moves the bounds of the next);
- the only vector loads are 1-D per-token gathers through a block-table entry loaded in
  the same iteration (a row dequantised or copied per token, in `static_range` chunks):
  no 2-D tile stream or dot for the pipeliner;
- the loop only copies: the loaded tiles are stored back as they are (or only cast), so
  there is no computation to overlap the loads with — more bytes in flight come from
  more programs or wider blocks, not from pipeline stages;
- SMEM is already the limit (large tiles with many stages fail with "out of resources";
  prune those configs);
- on backends without async copies (pre-Ampere NVIDIA) the extra stages buy little;
  on AMD the meaning of `num_stages` differs (stream-pipeliner depth) — tune it there
  separately.
- on an H200 with Triton 3.6, raising a fp16 GEMM from the default 3 stages to 4 measured no effect
  (1.01×, `benchmarks/results/gpu-2026-12-01-catalog/verify_catalog_2026-12-01.md`): the default already pipelines a plain K loop.

## References
- flash-linear-attention `fla/ops/common/chunk_h.py` (`chunk_fwd_kernel_h`: `num_stages in [2, 3, 4]` autotuned with `BK`/`BV` over the `for i_t in range(NT)` loop of `tl.dot`s) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/generalized_delta_rule/dplr/chunk_h_fwd.py` (`chunk_dplr_fwd_kernel_h`) — at `49b00f0a94`, before 2025-07-01
- Triton tutorial `02-fused-softmax.py` (`softmax_kernel`, `tl.range(..., num_stages=num_stages)`)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skel.kernels.flow import (CallInfo, Flow, LoopInfo, Node, constant, contains_call, flow_of, has_call, is_call,
                               name_of, names_in, positional, receiver)
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import LAUNCH_CONFIG_DICT, custom, launched_with, loop, soft
from skel.skeletons.patterns import decorators, launches
from skel.skeletons.predicates.addresses import is_block_ptr_address, is_vector_expr, tile_load_2d
from skel.skeletons.predicates.autotune import autotune_config_keys
from skel.skeletons.predicates.loops import RANK_LOOPS, at_most_one_trip, runtime_trip_count

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.model import Decorator, KernelFacts, Launch

_LOOPS = ("range", "tl.range")
#: Tensor-descriptor loads: `desc.load([...])` and the experimental free function.
_DESC_LOADS = (".load", "tl._experimental_descriptor_load")
#: Stores whose second positional argument is the value stored.
_STORES = ("tl.store", ".store", "tl._experimental_descriptor_store")


def _config_num_stages(d: Decorator, k: KernelFacts) -> bool:
    """The kernel's `@triton.autotune` whose configs set `num_stages`."""
    return d is k.decorator("triton.autotune") and "num_stages" in autotune_config_keys(k)


_STAR_NUM_STAGES = re.compile(r"""['"]num_stages['"]\s*:|\bnum_stages\s*=(?!=)""")


def _star_num_stages(ln: Launch, k: KernelFacts) -> bool:
    """A launch spreading a dict that sets `num_stages` (`kernel[grid](..., **opts)` after
    `opts = {"num_stages": 3}` or `dict(num_stages=3)`)."""
    return any(_STAR_NUM_STAGES.search(src) for src in ln.star_sources)


def _jit_num_stages(k: KernelFacts) -> list[int] | None:
    return [d.line for d in k.decorators if "num_stages" in d.kwargs] or None


def _issuing_loop(c: CallInfo) -> LoopInfo | None:
    """The loop whose iterations issue the load: the innermost enclosing loop that is not a
    `tl.static_range` (an unrolled loop's body belongs to the loop around it), when that
    is a `range`/`tl.range` loop."""
    for lp in reversed(c.loops):
        if lp.kind != "tl.static_range":
            return lp if lp.kind in _LOOPS else None
    return None


def _address_parts(c: CallInfo) -> list[Node]:
    """What places the load: its pointer, or a descriptor load's offsets."""
    if c.name == "tl.load":
        addr = c.arg(0, "pointer")
        return [addr] if addr is not None else []
    return positional(c.node)


def _is_tile_load(fl: Flow, c: CallInfo) -> bool:
    """A tile, not a scalar: the address is a vector of offsets (built from `tl.arange`),
    a block pointer, or a tensor descriptor."""
    if c.name in _DESC_LOADS:
        return True
    addr = c.arg(0, "pointer")
    return addr is not None and (is_vector_expr(fl, addr) or is_block_ptr_address(fl, addr))


def _carried_in(fl: Flow, name: str, lp: LoopInfo) -> bool:
    """``name`` is redefined inside ``lp`` from its own previous value."""
    return any(lp.holds(d.line) and (d.aug or name in fl.closure(d.value, within=lp)[0])
               for d in fl.defs.get(name, ()))


def _reads_loaded_value(fl: Flow, c: CallInfo, lp: LoopInfo, *, carried_only: bool) -> bool:
    """The load's address reads a value loaded inside ``lp``: a gather through an index
    loaded in the same iteration (a block table), or, with ``carried_only``, only one
    carried over from the previous iteration (pointer chasing, a binary search's bounds)."""
    for part in _address_parts(c):
        names, exprs = fl.closure(part, within=lp)
        if not carried_only:
            if has_call(exprs, "tl.load", *_DESC_LOADS):
                return True
            continue
        for n in names:
            if not _carried_in(fl, n, lp):
                continue
            defs = [d.value for d in fl.defs.get(n, ()) if lp.holds(d.line)]
            if any(has_call(fl.closure(v, within=lp)[1] + [v], "tl.load", *_DESC_LOADS) for v in defs):
                return True
    return False


def _uncast(e: Node) -> Node:
    while is_call(e, ".to"):
        rec = receiver(cast("cst.Call", e))
        if rec is None:
            break
        e = rec
    return e


def _store_use(store: CallInfo, value: cst.Call | str) -> str:
    """How a store (`tl.store`, a descriptor's `.store`) uses a loaded value (the load call
    itself, or a name holding it): "copy" (stored as is, or only cast), "index" (in the
    pointer or mask only), "compute" (the stored value computes on it)."""
    stored = store.arg(1, "value")
    if stored is None:
        return "index"
    bare = _uncast(stored)
    if bare is value or (isinstance(value, str) and name_of(bare) == value):
        return "copy"
    hit = value in names_in(stored) if isinstance(value, str) else contains_call(stored, value)
    return "compute" if hit else "index"


def _feeds_compute(fl: Flow, c: CallInfo, lp: LoopInfo) -> bool:
    """The loaded tile is computed on in the loop (a `tl.dot`, a reduction, arithmetic),
    not only written back by a store (a copy loop: nothing to overlap the loads with)."""
    inside = [x for x in fl.calls if lp.holds(x.line) and lp in x.loops]
    stores = [x for x in inside if x.name in _STORES]
    if not c.targets:  # `tl.store(dst, tl.load(src))`, `acc += tl.sum(tl.load(p))` ...
        enclosing = [s for s in stores if contains_call(s.node, c.node)]
        return not enclosing or any(_store_use(s, c.node) == "compute" for s in enclosing)
    own = [d for t in c.targets for d in fl.defs.get(t, ()) if lp.holds(d.line) and contains_call(d.value, c.node)]
    if any(d.aug or _uncast(d.value) is not c.node for d in own):
        return True  # `acc += tl.load(...)`, `x = tl.load(...) * w`
    todo, seen = list(c.targets), set()
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen.add(t)
        for n, defs in fl.defs.items():
            for d in defs:
                if not lp.holds(d.line) or t not in names_in(d.value) or contains_call(d.value, c.node):
                    continue
                if not d.aug and name_of(_uncast(d.value)) == t:
                    todo.append(n)  # a rename or a cast: still the loaded value
                elif not is_call(d.value, "tl.load"):
                    return True
        for x in inside:
            if x.targets or t not in names_in(x.node) or x.name in ("tl.load", ".to"):
                continue
            if x.name in _STORES:
                if _store_use(x, t) == "compute":
                    return True
            elif not any(contains_call(s.node, x.node) for s in stores):
                return True  # `tl.atomic_add(p, x)`, a helper call ...
    return False


def _literal_trip_count(lp: LoopInfo) -> bool:
    """`range(4)`, `range(0, 8, 2)`: a handful of iterations fixed by the algorithm."""
    bounds = lp.bounds
    args = positional(cast("cst.Call", bounds)) if bounds is not None and is_call(bounds) else []
    return bool(args) and all(isinstance(constant(a), int) for a in args)


def _streaming_loads(k: KernelFacts) -> list[tuple[LoopInfo, CallInfo]]:
    """(loop, load) for each tile load a `range`/`tl.range` loop issues whose address does not
    chase a value loaded in an earlier iteration: the loads a pipeliner can issue ahead."""
    fl = flow_of(k)
    out = []
    for c in fl.calls:
        if c.name != "tl.load" and c.name not in _DESC_LOADS:
            continue
        lp = _issuing_loop(c)
        if lp is None or at_most_one_trip(fl, k, lp) or not _is_tile_load(fl, c):
            continue
        if _reads_loaded_value(fl, c, lp, carried_only=True):
            continue
        out.append((lp, c))
    return out


def _dot_in(fl: Flow, lp: LoopInfo) -> bool:
    return any(lp in d.loops for d in fl.named("tl.dot", "tl.dot_scaled"))


def pipelinable_loops(k: KernelFacts) -> list[int]:
    """`range`/`tl.range` loops that stream tiles into computation: tile loads (vector
    offsets, block pointers, descriptors) feeding a `tl.dot` in the loop, or 2-D tiles over
    a runtime-length dimension whose values are computed on, not only copied. A tile
    gathered through an index loaded in the same iteration (a page through a block table)
    counts: the pipeliner issues the index load a stage ahead of the tile."""
    fl = flow_of(k)
    out = set()
    for lp, c in _streaming_loads(k):
        if _dot_in(fl, lp):
            out.add(lp.line)
        elif (runtime_trip_count(fl, k, lp) and (c.name in _DESC_LOADS or tile_load_2d(fl, c))
              and _feeds_compute(fl, c, lp)):
            out.add(lp.line)
    return sorted(out)


def tile_streaming_loops(k: KernelFacts) -> list[int]:
    """Loops that stream tiles of any rank (1-D vectors included) into computation: a tile
    load whose address is a vector (or block pointer, descriptor), reads no value loaded in
    the loop, and feeds computation, over more than a literal handful of iterations.
    Scalar loads (a prefix sum of lengths, a serial match), binary searches, per-token
    gathers through a block table and copy loops are not."""
    fl = flow_of(k)
    out = set()
    for lp, c in _streaming_loads(k):
        if _literal_trip_count(lp) or _reads_loaded_value(fl, c, lp, carried_only=False):
            continue
        if _feeds_compute(fl, c, lp):
            out.add(lp.line)
    return sorted(out)


STAGES_SET = (
    decorators("triton.autotune", where=_config_num_stages, name="autotune-num-stages",
               describe="autotune configs setting `num_stages`")
    | launched_with("num_stages", name="launch-num-stages")
    | launches(where=_star_num_stages, name="launch-dict-num-stages",
               describe="a launch spreading a dict that sets `num_stages` (`**opts`)")
    | loop(kind="tl.range", kw="num_stages", name="tl-range-num-stages",
           describe="`tl.range(..., num_stages=)`")
    | custom("jit-num-stages", "`num_stages` on the jit decorator", _jit_num_stages)
)
PIPELINABLE_LOOP = custom("pipelinable-load-loop",
                          "a loop loading tiles that feed `tl.dot`, or streaming 2-D tiles over a runtime length into computation",
                          pipelinable_loops)

TILE_STREAM_LOOP = custom("tile-streaming-loop",
                          "a `range` loop streaming vector tiles (not scalars, copies or pointer chasing) into computation",
                          tile_streaming_loops)

#: the subject: the loop whose loads software pipelining would overlap
PIPELINABLE = soft(PIPELINABLE_LOOP, relaxed=TILE_STREAM_LOOP)

SKELETON = Skeleton(
    id="num-stages-pipelining",
    title="Software pipelining with num_stages",
    summary="Set/tune num_stages (configs, launch or tl.range) so tile loads of later iterations overlap compute.",
    category=Category.TUNING,
    doc=__doc__,
    ruled_out_by=(r"\bnum_?stages\b", r"\bpipelin\w*", r"\bsoftware[\s-]pipelin\w*"),
    present=STAGES_SET,
    # a loop streaming 1-D tiles into computation can be pipelined too (`tl.range(...,
    # num_stages=)`); 2-D tiles over a runtime length or a `tl.dot` are where it pays most,
    # so such a loop is a near miss. Scalar-load loops, copies and pointer chasing are not.
    preconditions=[PIPELINABLE, ~LAUNCH_CONFIG_DICT, ~RANK_LOOPS],
    subject=PIPELINABLE,
    env=Env(),
    helps=("memory", "latency"),
)
