"""Compute a prefix over a small shared array once, not in every program that needs its own offset.

## What it does
A grouped or varlen kernel needs, per program, where its work starts: the tile offset of its
expert in a grouped GEMM, the output offset of its block in a scan or a compaction, the first
sorted slot of its expert. The before has every program walk the same small array to find it:
`for e in range(num_experts): n = tl.load(counts + e); ...; offset += cdiv(n, BM)` until its
own tile falls inside, or `for i in range(pid): base += tl.load(partials + i)`, or a scan of the
whole sorted-id list counting its expert's entries. The after computes the prefix once — a
`torch.cumsum` in the launcher, or one tiny kernel that runs `tl.cumsum` over the array and
writes a table (`block_starts`, tile → (expert, m-block)) — and each program reads its entry
with one load (`tl.load(block_start + pid)`, `tl.load(tile_to_expert + pid_m)`).

## Why it is faster
The walk is the same in every program: P programs reading an L-entry array do P × L loads
where L would do. Worse, the walk is serial: each iteration's load sits on the program's
critical path (a scalar loop with a loop-carried sum is not pipelined by `num_stages`), about
half a microsecond from L2 per iteration, before the program's real work starts. A 160-expert
walk is ~80 µs of latency per program; a walk over the 64K entries of a sorted-id list in
128-wide tiles is 512 iterations. A `tl.cumsum` over the array in one program, or
`torch.cumsum` in the launcher, costs one small launch (~3-5 µs) once. Past a few dozen
iterations the walk costs more than that launch; under ten it does not (the walk is cheaper
than the extra kernel).

## Applies when
- inside a loop, the kernel loads from an array at an address that varies with the loop and
  not with the program id (every program reads the same entries: per-expert counts, group
  sizes, the partial sums of other blocks, a sorted-id list);
- a value carried around that loop (a running offset or count, `offset += n`, `tile_idx -=
  num_tiles`) is made from those loads and locates the program's work: it feeds an address, a
  mask or an `if`/`while` test, or the loop walks the program's predecessors (`range(pid)`);
- the grid is not persistent, or the walk repeats for every task of a persistent program (the
  walk sits inside the grid-stride loop): a grid of SM count whose programs walk once and then
  stride over many tiles (Triton's grouped-GEMM tutorial) already amortises it;
- it pays when the walk is long: ≥ 64 iterations (the array length over the loop's step),
  and does not at ≤ 8.

## Does not apply when
- the loop's loads depend on the program id (each program reads its own row or its own
  tokens): nothing is shared;
- the prefix is computed in registers in one step (`tl.cumsum` over one tile of the counts,
  then `tl.sum(tl.where(idx == pid, starts, 0))`): a parallel scan per program, not a serial
  walk, and as cheap as reading a table;
- one program computes it (`grid = (1,)`, or `if pid == 0:`): nothing is repeated;
- the loop carries a result that is only the program's output (a dot product of a shared weight
  vector with the program's own row): that is data, not an offset;
- a persistent grid that walks the groups once per program and strides over their tiles;
- a binary search over the offsets (`log L` loads, each address made from the program's own
  target): short, and each program's path differs;
- the array is a handful of entries (a walk of ≤ 8 iterations is cheaper than the extra launch).

## References
- ModelTC/lightllm `lightllm/common/fused_moe/grouped_fused_moe.py` (`grouped_matmul_kernel`:
  every program walked `for expert_id in range(expert_num)`, loading each expert's token count and
  subtracting its tile count from `tile_idx` until its tile fell inside; the new `moe_align2_kernel`
  computes `block_starts = tl.cumsum(expert_to_block_num) - expert_to_block_num` once and writes
  `mblocks_to_expert_id` / `mblocks_to_m_index`, which the GEMM reads by `pid_m`) — at `b19a832920`,
  2025-05-14, "improve group_gemm kernel. (#891)", before 2025-07-01
- InternLM/lmdeploy `lmdeploy/pytorch/kernels/cuda/fused_moe.py` (`_start_end_kernel`: one
  program per expert scanned the whole `SortedIdx` list in 128-wide tiles, counting its expert's
  entries to find its start; replaced by one `cumsum` over the expert × token mask and
  `_get_start_end_kernel`, which reads each start from it) — at `d8684fd7e6`, 2025-04-03, "optimize
  moe get sorted idx (#3356)", before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skel.kernels.flow import args_of, flow_of, has_call, is_call, names_in
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.programs import grid_stride_loops

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.flow import CallInfo, Flow, LoopInfo
    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload

#: a parameter holding the SM count: a persistent grid, whose programs walk once for many tiles
_SM_PARAM = re.compile(r"(?i)n?num_?sms?|n_?sms?|num_?(ctas|workers)|num_?programs")
#: a table the program reads its offset from (the technique): starts, offsets, prefix sums
_PREFIX_TABLE = re.compile(r"(?i)\w*(block|tile|expert|group|chunk)s?_?(starts?|offsets?|cumsum)\w*|"
                           r"\w*(block|tile)s?_to_\w+|\w*_(row|m)_starts?\w*|(expert_|token_)?cumsum(_ptr)?")

#: walk iterations at or under which the walk is cheaper than a second launch
CHEAP_WALK = 8
#: walk iterations from which the walk's serial latency exceeds a small launch
LONG_WALK = 64


def _varies_with(fl: Flow, names: set[str], lp: LoopInfo) -> bool:
    """``names`` (an address's closure) read the loop's index or a name the loop redefines."""
    if names & lp.targets:
        return True
    return any(any(lp.holds(d.line) for d in fl.defs.get(n, ())) for n in names)


def _pid_loop_indices(fl: Flow) -> set[str]:
    """Indices of loops that start at a program id (`for row in range(row_start, row_end)` after
    `row_start = pid * ROWS`, a grid-stride `range(pid, n, NUM_SMS)`), or at the index of such a
    loop, transitively: each program visits its own entries. A loop from 0 up to the program id
    (`range(pid)`) visits entries every later program visits too: shared."""
    out: set[str] = set()
    for _ in range(3):
        for lp in fl.loops:
            if lp.bounds is None or lp.targets <= out or not is_call(lp.bounds, "range", "tl.range"):
                continue
            args = args_of(cast("cst.Call", lp.bounds))  # a call: checked above
            if len(args) < 2:
                continue
            names, exprs = fl.closure(args[0])
            if has_call(exprs, "tl.program_id", "tl.num_programs") or (names | names_in(args[0])) & out:
                out |= lp.targets
    return out


def _shared_loads(fl: Flow) -> list[tuple[CallInfo, LoopInfo]]:
    """Loads inside a loop whose address varies with the loop and not with any program id."""
    out = []
    pid_indices = _pid_loop_indices(fl)
    for c in fl.loads():
        addr = c.arg(0, "pointer")
        if addr is None or not c.loops or not c.targets:
            continue
        names, exprs = fl.closure(addr)
        if has_call(exprs, "tl.program_id", "tl.num_programs") or (names | names_in(addr)) & pid_indices:
            continue
        names |= names_in(addr)
        for lp in reversed(c.loops):  # the innermost loop it varies with: the walk
            if lp.kind != "tl.static_range" and _varies_with(fl, names, lp):
                out.append((c, lp))
                break
    return out


def _pid_names(fl: Flow) -> set[str]:
    """Names whose value comes from a program id."""
    out = set()
    for n, defs in fl.defs.items():
        if any(has_call(fl.closure(d.value)[1], "tl.program_id") for d in defs):
            out.add(n)
    return out


def _uses(fl: Flow, k: KernelFacts, acc: str) -> bool:
    """The carried value locates the program's work: an address, a mask, an `if` or a loop
    test reads it (or a name made from it)."""
    for c in fl.calls:
        if c.name not in ("tl.load", "tl.store") and not c.name.startswith("tl.atomic_"):
            continue
        for x in (c.arg(0, "pointer"), c.arg(1 if c.name == "tl.load" else 2, "mask")):
            if x is not None and acc in (fl.closure(x)[0] | names_in(x)):
                return True
    for lp in fl.loops:
        if lp.bounds is not None and acc in (fl.closure(lp.bounds)[0] | names_in(lp.bounds)):
            return True
    for test in k.ifs:
        reads = set(test.get("names", []))
        if acc in reads or any(acc in fl.closure(d.value)[0] for n in reads for d in fl.defs.get(n, ())):
            return True
    return False


def _walks(k: KernelFacts) -> list[int] | None:
    """Lines of a per-program walk over a shared array: a load in a loop whose address does
    not depend on the program id, feeding a value carried around that loop which locates the
    program's work (an address, a mask, a test) or a loop over the program's predecessors."""
    if not k.calls_named("tl.program_id"):
        return None
    fl = flow_of(k)
    if not fl.ok:
        return None
    strided = set(grid_stride_loops(k))
    persistent = bool(strided) or any(_SM_PARAM.fullmatch(p.name) for p in k.params)
    pids = _pid_names(fl)
    lines: list[int] = []
    for load, lp in _shared_loads(fl):
        if persistent and not any(outer.line in strided for outer in load.loops if outer is not lp):
            continue  # a persistent program walks once for all its tiles; per task it would repeat
        carried = [d for n, defs in fl.defs.items() for d in defs
                   if lp.holds(d.line) and (d.aug or n in fl.closure(d.value)[0])
                   and (n in load.targets or set(load.targets) & (fl.closure(d.value)[0] | names_in(d.value)))]
        if not carried:
            continue
        # a walk over the program's predecessors (`for i in range(pid): base += tl.load(partials + i)`):
        # the loop's own index makes the address, and its range reads the program id
        addr = load.arg(0, "pointer")
        indexed = addr is not None and bool((fl.closure(addr)[0] | names_in(addr)) & lp.targets)
        bound_pid = indexed and lp.bounds is not None and bool(
            (fl.closure(lp.bounds)[0] | names_in(lp.bounds)) & pids or has_call(fl.closure(lp.bounds)[1],
                                                                                 "tl.program_id"))
        if bound_pid or any(_uses(fl, k, d.name) for d in carried):
            lines += [lp.line, load.line] + [d.line for d in carried]
    return sorted(set(lines)) or None


def _reads_prefix_table(k: KernelFacts) -> list[int] | None:
    """A scalar load of a prefix table at a program-id index (`tl.load(block_starts + pid)`,
    `tl.load(tile_to_expert + pid_m)`) and no walk: the technique."""
    if _walks(k):
        return None
    fl = flow_of(k)
    if not fl.ok:
        return None
    out = []
    for c in fl.loads():
        addr = c.arg(0, "pointer")
        if addr is None:
            continue
        names, exprs = fl.closure(addr)
        names |= names_in(addr)
        if has_call(exprs, "tl.program_id") and not has_call(exprs, "tl.arange") and any(
                _PREFIX_TABLE.fullmatch(n) and k.param(n) is not None for n in names):
            out.append(c.line)
    return out or None


#: the subject: every program walks the same small array to find its offset
SHARED_WALK = custom(
    "per-program-prefix-walk",
    "each program walks the same array in a loop (loads not indexed by the program id) and carries a running "
    "offset or count that locates its own work", _walks)
#: the technique: the program reads its offset from a prefix table computed once
PREFIX_TABLE_READ = custom(
    "prefix-table-read", "the program reads its offset from a prefix table at its program id, with no walk",
    _reads_prefix_table)


def _walk_iterations(k: KernelFacts, wl: Workload) -> tuple[int | None, str]:
    """How many iterations the longest walk makes: the loop's bound over its step, from the
    workload's sizes (a parameter's value or a tile size) or literals at the launch."""
    fl = flow_of(k)
    if not fl.ok:
        return None, ""
    best: tuple[int | None, str] = (None, "")
    for _, lp in _shared_loads(fl):
        if lp.bounds is None or not is_call(lp.bounds, "range", "tl.range"):
            continue
        args = [fl.text(a) for a in args_of(cast("cst.Call", lp.bounds))]  # a call: checked above
        stop = args[1] if len(args) > 1 else args[0]
        step = args[2] if len(args) > 2 else "1"
        n, s = _size(stop, k, wl), _size(step, k, wl)
        if n is None or s is None or s <= 0:
            return None, stop
        it = -(-n // s)
        if best[0] is None or it > best[0]:
            best = (it, stop)
    return best


def _size(text: str, k: KernelFacts, wl: Workload) -> int | None:
    text = text.strip()
    if text.isdigit():
        return int(text)
    v = wl.size(text)
    if v is not None:
        return v
    for ln in k.launches:
        if ln.kernel == k.name and ln.kwargs.get(text, "").strip().isdigit():
            return int(ln.kwargs[text])
    return None


def walk_length(k: KernelFacts, wl: Workload) -> Payoff:
    """A walk of ≥ 64 iterations per program costs more serial latency than the small launch
    that computes the prefix once; ≤ 8 iterations cost less."""
    its, bound = _walk_iterations(k, wl)
    if its is None:
        flag = f"--shape {bound}=N" if bound and bound.isidentifier() else "--shape programs=N"
        return Payoff(UNKNOWN, f"pays if each program's walk is long (≥ {LONG_WALK} iterations: the array's "
                      "length over the loop's step)", flag)
    programs = wl.size("programs")
    total = f"; {programs:,} programs read {programs * its:,} entries where {its:,} would do" if programs else ""
    if its <= CHEAP_WALK:
        return Payoff(DOES_NOT_PAY, f"a walk of {its} iterations ({bound}) costs each program less than the "
                      "extra launch that would compute the prefix once")
    if its >= LONG_WALK:
        return Payoff(PAYS, f"each program walks {its:,} iterations ({bound}) of serial loads before its own "
                      f"work{total}")
    return Payoff(UNKNOWN, f"a walk of {its} iterations ({bound}) is between {CHEAP_WALK} (cheaper than a launch) "
                  f"and {LONG_WALK}; measure it with `skel verify`")


SKELETON = Skeleton(
    id="shared-prefix-once",
    title="Compute a shared prefix once: no per-program walk over group sizes or partial sums",
    summary="Precompute the offsets every program scans for (torch.cumsum or a tiny kernel); each program reads one.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=PREFIX_TABLE_READ,
    preconditions=[SHARED_WALK],
    subject=SHARED_WALK,
    env=Env(),
    payoff=walk_length,
    helps=("latency", "memory"),
)
