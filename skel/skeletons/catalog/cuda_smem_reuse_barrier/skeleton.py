"""A `__syncthreads()` between the last read of a shared buffer and its next write (reuse without a barrier races).

## What it does
A `__shared__` buffer that threads exchange data through — a `cub::BlockReduce`/`BlockScan`
`TempStorage`, a scratch of per-warp partials `partial[warp]`, a staged tile — is used again: by
a second reduction, by the next trip of a loop, by an epilogue that writes its results where the
main loop's operand tile was. Between the last read of the first use and the first write of the
next, the kernel puts a block barrier:

    hi = BlockReduce(temp).Reduce(hi, cub::Max());          hi = BlockReduce(temp).Reduce(hi, cub::Max());
                                                      →      __syncthreads();   // temp is free again
    lo = BlockReduce(temp).Reduce(lo, cub::Min());          lo = BlockReduce(temp).Reduce(lo, cub::Min());

    for (row ...) {                                          for (row ...) {
      if (lane == 0) partial[warp] = s;                        if (lane == 0) partial[warp] = s;
      __syncthreads();                                         __syncthreads();
      for (w ...) total += partial[w];                         for (w ...) total += partial[w];
                                                      →        __syncthreads();   // all have read
      ...                                                      ...
    }                                                        }

Or the second use gets its own buffer (a second `TempStorage`, a double-buffered `partial[it & 1]`)
where shared memory allows: then one barrier per trip is enough.

## Why it is faster
It is not: this is a correctness fix with a small cost. A barrier orders the writes before it against the reads after it, nothing more. Once a warp has
read the buffer it runs on: into the next reduction or the next trip, where it writes the buffer
again — while a slower warp (or thread 0, walking the buffer serially) is still reading the old
contents. That write-after-read race gives wrong results only when the schedule is unlucky, so
tests on small inputs pass and the output is wrong at random under load; CUB's documentation says
it for every collective: "a subsequent `__syncthreads()` threadblock barrier should be invoked after
calling this method if the collective's temporary storage is to be reused or repurposed". The
barrier costs a few hundred cycles per use; a second buffer costs shared memory instead.

## Applies when
- a `__global__` kernel writes a `__shared__` buffer (or a pointer into one, or a member path of a
  shared struct such as `temp_storage.reduce`), passes a block barrier, reads it (an exchange between
  threads), and then writes it again with no block barrier between that read and the write — later in
  the kernel, or on the next trip of the loop around them;
- a CUB block collective called as `BlockReduce(storage).Sum(...)`, `BlockScan(storage).InclusiveSum`,
  `BlockRadixSort(storage).Sort` counts as a write, a barrier and a read of `storage`: two of them on one
  storage, or one in a loop, with no barrier between, race;
- a call to a device function of the same file that holds a block barrier, or to a function whose name
  says it synchronises (`cta_sync()`, `block.sync()`), counts as a barrier.
It is a correctness fix: it pays wherever the block has more than one warp, at any size.

## Does not apply when
- a barrier already sits between the last read and the next write (the broadcast of a result through
  `s_max` after the first reduction, a `__syncthreads()` at the end or the start of the loop body);
- each use has its own buffer (two `TempStorage` objects), or the buffer is double-buffered by the trip
  (`partial[it & 1]`, `smem[stage]`): the next write goes elsewhere;
- the read and the write are one statement of one thread (`red[tid] += red[tid + s]` in a tree whose steps
  end with a barrier), the same element (`c[i] += ...; c[i] = ...`), or one step of a tree loop (a stride
  halving or doubling per trip: its pairs are disjoint by design);
- the write is of fixed elements (`smem[0] = total`, a scalar) rather than a per-thread reuse of the buffer:
  whether the writing thread is one of the readers is not visible, so it is left alone; and so are a read
  and a write both inside one warp's (or one thread's) branch (`if (warp == 0) {...}`: RMSNorm's second
  level), and the two arms of an `if`/`else`;
- the buffer is a warp's own slice ordered by `__syncwarp()`: no other warp reads it;
- the buffer is handed whole to an opaque helper (`load_matrix_sync(frag, smem, ...)`): who writes it is not
  visible in the kernel.

## References
- flash-attention `csrc/flash_attn/src/flash_bwd_kernel.h` (`compute_dq_dk_dv_1colblock`: dK/dV are written
  to the shared memory that holds `sK`/`sV`; the barrier was skipped unless `Is_V_in_regs`, now it is taken
  whenever `!Is_last`: "some thread might modify the location of sK while another thread is reading it for
  dQ gemm") — at `1c41d2b0e5`, 2023-08-01, "Fix race condition in bwd (overwriting sK)", before 2025-07-01
- flashinfer `include/flashinfer/sampling.cuh` (`TopPRenormProbKernel`, `TopKMaskLogitsKernel`: two
  `BlockReduce(temp_storage.block_prim.reduce)` calls per pivot, a `__syncthreads()` after each) — at
  `0dce178389`, 2024-08-20, "misc: improve error handling of sampling kernels (#456)", and the dual-pivot
  rewrite at `e19cb7bafb`, 2025-03-27, "perf: dual pivot top-p/top-k renorm (#974)"; `GetMinMaxValue`'s
  max and min reductions on one storage with a barrier after each at `e3853ddcab`, "perf: use max
  probability instead of 1 as upper bound in top-p/k sampling", before 2025-07-01
- bitsandbytes `csrc/kernels.cu` (`kEstimateQuantiles`: a loop reusing one `__shared__` union for
  `BlockLoad`, `BlockRadixSort` and an index table; the table's fill with -1 and its scattered writes
  raced until a barrier went between them) — at `5b28fd3f7c`, 2024-02-14, "Fix race condition in
  kEstimateQuantiles (#1061)", before 2025-07-01
- the candidate cluster "more call __syncthreads" (5 repositories, 14 commits: flashinfer sampling,
  ThunderKittens attention backward, lmdeploy sampling, exllamav2, bitsandbytes)
- CUB `cub::BlockReduce` documentation ("a subsequent `__syncthreads()` ... if the collective's temporary
  storage is to be reused or repurposed"); CUDA C++ Programming Guide, "Synchronization Functions"
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skel.skeletons.base import PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.cuda import SYNC_THREADS, code, line_of, shared_arrays
from skel.skeletons.predicates.cuda_tiles import is_kernel

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload

_WORD = re.compile(r"[A-Za-z_]\w*")
#: a buffer index computed to alternate: `next_buf = buf ^ 1`, `stage = it % 2`, `k = i & 1`
_CYCLIC_VALUE = re.compile(r"\^\s*1\b|&\s*1\b|%\s*(?:2|\w*STAGES?\w*|\w*[Ss]tages?)\b")
#: a loop stepping a stride by halves or doubles: a tree's steps
_STRIDE = re.compile(r"(?:<<=|>>=)\s*1\b|[*/]=\s*2\b|=\s*\w+\s*(?:<<|>>)\s*1\b|=\s*\w+\s*[*/]\s*2\b")
#: an index of literals and constants only (`[0]`, `[TILE_SIZE - 1]`, `[kN]`)
_CONSTANT = re.compile(r"(?:\[(?:\s*(?:\d+|[A-Z][A-Z0-9_]*|k[A-Z]\w*)\s*[-+*/]?)+\])+")
#: `X(storage).Method(` — the CUB collective idiom (`BlockReduce(temp).Sum(v)`, `cub::BlockScan<int, 256>(s)
#: .ExclusiveSum(...)`): group 1 the storage path, group 2 the method
_COLLECTIVE = re.compile(r"\b(?:\w+::)*\w+\s*(?:<[^;{}()]*>)?\s*[({]\s*([A-Za-z_][\w.]*(?:\[[^\[\]]*\])?)\s*[)}]\s*\.\s*"
                         r"(\w+)\s*(?:<[^;{}()]*>)?\s*\(")
#: collectives that move data through the storage without a block barrier inside (warp-transposing loads)
_NO_BARRIER_METHODS = {"Load", "Store"}
#: calls that synchronise the block by their name: `cta_sync()`, `block.sync()`, `bar_sync(...)`, `cg::sync(g)`
_SYNC_NAME = re.compile(r"(?i)(?:^|[.:])(?:sync|barrier|(?:cta|block|bar|threadblock|named_barrier|barrier)_?sync\w*|"
                        r"barrier_(?:sync|wait|arrive_and_wait))$")
_ASSIGN_AFTER = re.compile(r"\s*(?:\[[^\[\]]*\]\s*)*(?:=(?!=)|\+=|-=|\*=|/=|\|=|&=|\^=|<<=|>>=|\+\+|--)")
#: a first subscript cycling with the trip (`it & 1`, `stage % 2`, `buf ^ 1`, `stage`): a multi-buffered scratch
_CYCLIC = re.compile(r"[&%^]|\b(?:stage|phase|buf(?:fer)?_?idx|pipe\w*|ping\w*|pong\w*)\b")


@dataclass(frozen=True)
class _Event:
    pos: int  # offset in the kernel's text (order), or a barrier's
    line: int
    kind: str  # "R", "W" or "B"
    key: str  # the buffer: a shared name with its member path (`temp.reduce`); "" for a barrier
    index: str = ""  # the first subscript, when there is one
    collective: bool = False


def _shared_names(k: KernelFacts) -> set[str]:
    """`__shared__` arrays and the pointers declared into them; an element store is no pointer."""
    text = code(k)
    names = {n for n in shared_arrays(k) if re.search(rf"__shared__[^;]*\b{re.escape(n)}\b", text)}
    for _ in range(2):
        for a in k.assigns:
            if len(a.targets) == 1 and _WORD.fullmatch(a.targets[0]) and set(a.names) & names \
                    and a.targets[0] in shared_arrays(k):
                names.add(a.targets[0])
    return names


def _barrier_lines(k: KernelFacts) -> set[int]:
    """Lines in the kernel's own text that synchronise the block: `__syncthreads()`, a call named for a
    barrier, a call to a same-file device function that holds one (folded into the kernel's facts)."""
    own = range(k.line_start, k.line_end + 1)
    folded = getattr(k, "folded", None) or {}
    syncing = {name for name, (a, b) in folded.items()
               if any(c.name in SYNC_THREADS and a <= c.line <= b for c in k.calls)}
    out = set()
    for c in k.calls:
        if c.line not in own:
            continue
        group = f"{c.receiver} {' '.join(c.args)}".lower()
        if c.name in SYNC_THREADS or c.name in syncing or (
                _SYNC_NAME.search(c.name) and not re.search(r"warp|tile|lane", f"{c.name} {group}".lower())):
            out.add(c.line)
    return out


def _events(k: KernelFacts) -> tuple[list[_Event], set[str]]:
    """Reads, writes and barriers in text order, and the buffers touched opaquely (passed whole to a call
    that is no collective: left out of the analysis)."""
    text = code(k)
    shared = _shared_names(k)
    if not shared:
        return [], set()
    events: list[_Event] = []
    opaque: set[str] = set()
    covered: list[tuple[int, int]] = []
    for m in _COLLECTIVE.finditer(text):
        path = re.sub(r"\[[^\[\]]*\]", "", m.group(1))
        ln = line_of(k, text, m.start())
        if path.split(".")[0] not in shared:
            if re.search(r"Block\w*\s*(?:<[^;{}()]*>)?\s*[({]\s*$", text[m.start():m.start(1)]) \
                    and m.group(2) not in _NO_BARRIER_METHODS:
                events.append(_Event(m.start() + 1, ln, "B", "", collective=True))  # storage not seen, barrier is
            continue
        events.append(_Event(m.start(), ln, "W", path, collective=True))
        if m.group(2) not in _NO_BARRIER_METHODS:
            events.append(_Event(m.start() + 1, ln, "B", "", collective=True))  # a block barrier inside
        events.append(_Event(m.start() + 2, ln, "R", path, collective=True))
        covered.append((m.start(1), m.end(1)))
    names = re.compile(rf"\b(?:{'|'.join(map(re.escape, sorted(shared)))})\b((?:\s*\.\s*[A-Za-z_]\w*)*)")
    for m in names.finditer(text):
        if any(a <= m.start() < b for a, b in covered) or text[max(0, m.start() - 1)] == ".":
            continue
        path = m.group(0).replace(" ", "")
        after = text[m.end():]
        sub = re.match(r"\s*\[([^\[\]]*)\]", after)
        before = text[:m.start()].rstrip()
        ln = line_of(k, text, m.start())
        if re.search(r"__shared__[^;]*$", before):
            continue  # the declaration
        if before.endswith("&") and not before.endswith("&&"):
            if re.search(r"[(,]\s*&$", before) and not re.search(r"\batomic\w*\s*\(\s*&$", before):
                opaque.add(path.split(".")[0])  # its address handed to a call: who writes it is not seen
            continue  # an address taken (`float* c_rd = &sh[i]`): no access by itself
        if not sub and (before.endswith(("(", ",")) and not re.search(r"[=?:]\s*[(]?$", before)):
            opaque.add(path.split(".")[0])  # passed whole to a call
            continue
        if not sub and re.match(r"\s*[+\-]\s*[\w(]", after) and before.endswith(("(", ",")):
            opaque.add(path.split(".")[0])
            continue
        subs = re.match(r"(?:\s*\[[^\[\]]*\])+", after)
        index = re.sub(r"\s+", "", subs.group(0)) if subs else ""
        writes = bool(_ASSIGN_AFTER.match(after)) or before.endswith(("++", "--"))
        atomic = re.search(r"\batomic\w*\s*\(\s*&\s*$", before)
        if atomic or (writes and not re.match(r"\s*(?:\[[^\[\]]*\]\s*)*=(?!=)", after)):
            events.append(_Event(m.start(), ln, "R", path, index))  # a compound update reads first
        events.append(_Event(m.start() + 1, ln, "W" if writes or atomic else "R", path, index))
    for ln in _barrier_lines(k):
        # a barrier's offset: the start of its line, so it orders against accesses on lines before and after
        pos = _line_pos(text, ln - k.line_start)
        events.append(_Event(pos, ln, "B", ""))
    events.sort(key=lambda e: e.pos)
    return events, opaque


def _line_pos(text: str, n: int) -> int:
    pos = 0
    for _ in range(n):
        pos = text.index("\n", pos) + 1 if "\n" in text[pos:] else len(text)
    return pos


def _conflict(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


@dataclass(frozen=True)
class _Race:
    read: _Event
    write: _Event
    loop_line: int  # the loop whose next trip writes, 0 for a later statement


def _races_in(seq: list[tuple[_Event, int]], loop_line: int, blocks: list[tuple[int, int, int, int]],
              single: list[tuple[int, int]], threads: set[str], trees: list[tuple[int, int]],
              cyclic: set[str]) -> list[_Race]:
    """Reads of an exchanged buffer (a write, then a barrier, then the read) followed by a write of it with
    no barrier between. `seq` holds (event, trip): the loop body twice for a loop, once for the kernel."""
    out = []
    for i, (r, trip) in enumerate(seq):
        if r.kind != "R":
            continue
        # the read sees other threads' writes: some write before it, a barrier between
        exchanged = False
        barrier_seen = False
        for e, _t in reversed(seq[:i]):
            if e.kind == "B" and (not e.key or _conflict(e.key, r.key)):
                barrier_seen = True
            elif e.kind == "W" and _conflict(e.key, r.key) and barrier_seen:
                exchanged = True
                break
        if not exchanged:
            continue
        for w, wtrip in seq[i + 1:]:
            if w.kind == "B" and (not w.key or _conflict(w.key, r.key)):
                break
            if w.kind != "W" or not _conflict(w.key, r.key):
                continue
            if w.line == r.line and wtrip == trip:
                continue  # one statement of one thread: `red[tid] += red[tid + s]`
            if not w.collective and not (set(_WORD.findall(w.index)) & threads):
                continue  # a write of fixed elements (`smem[0]`, a scalar): which thread, and which reads it
                #           could conflict with, is not visible; a reuse of the buffer writes per thread
            if any(a <= r.line <= b and a <= w.line <= b for a, b in trees) and wtrip == trip:
                continue  # one step of a tree (a stride halving or doubling per trip): its pairs are disjoint
            if r.index and r.index == w.index:
                continue  # each thread rewrites the element it read: `c[i] += ...; c[i] = ...`
            if r.index and w.index and r.index != w.index and _CONSTANT.fullmatch(r.index) \
                    and _CONSTANT.fullmatch(w.index):
                continue  # two fixed elements: `smem[TILE - 1]` read, `smem[TILE]` written
            if any(_apart(r.pos, w.pos, b) for b in blocks) or any(
                    a[0] <= r.pos < a[1] and a[0] <= w.pos < a[1] for a in single):
                continue  # the two arms of an if/else, or one warp's (one thread's) own block
            if (wtrip != trip or _first(w.index) != _first(r.index)) and any(
                    _CYCLIC.search(f) or set(_WORD.findall(f)) & cyclic for f in (_first(w.index), _first(r.index))):
                continue  # the other buffer of a double-buffered scratch (`buf[k ^ 1]`, `partial[it & 1]`)
            out.append(_Race(r, w, loop_line))
            break
    return out


def _thread_names(k: KernelFacts) -> set[str]:
    """`threadIdx` and the names computed from it (`tid`, `warp`, `lane`, `row = threadIdx.x / 64`)."""
    names = {"threadIdx"}
    for _ in range(3):
        for a in k.assigns:
            if len(a.targets) == 1 and _WORD.fullmatch(a.targets[0]) and (set(a.names) & names
                                                                          or "threadIdx" in a.value):
                names.add(a.targets[0])
    return names


def _first(index: str) -> str:
    m = re.match(r"\[([^\[\]]*)\]", index)
    return m.group(1) if m else ""


def _apart(a: int, b: int, blk: tuple[int, int, int, int]) -> bool:
    """`a` and `b` in the two arms of one if/else."""
    t0, t1, e0, e1 = blk
    return (t0 <= a < t1 and e0 <= b < e1) or (t0 <= b < t1 and e0 <= a < e1)


def _close(text: str, i: int, open_: str, close: str) -> int:
    """The offset just past the bracket matching the one at `i`."""
    depth = 0
    for j in range(i, len(text)):
        depth += (text[j] == open_) - (text[j] == close)
        if depth == 0:
            return j + 1
    return len(text)


def _arm(text: str, i: int) -> tuple[int, int]:
    """The statement or `{...}` block starting at or after `i`: (start, end); an `if` with its else chain."""
    j = i + len(text[i:]) - len(text[i:].lstrip())
    if text.startswith("{", j):
        return j, _close(text, j, "{", "}")
    m = re.match(r"if\s*(?:constexpr\s*)?\(", text[j:])
    if m:
        _, end = _arm(text, _close(text, j + m.end() - 1, "(", ")"))
        e = re.match(r"\s*else\b", text[end:])
        return (j, _arm(text, end + e.end())[1]) if e else (j, end)
    end = text.find(";", j)
    return j, (end + 1 if end >= 0 else len(text))


#: a condition that keeps one warp or one thread: `ty == 0`, `warp_id == 0`, `threadIdx.x < 32`, `tid == 0`
_ONE_WARP = re.compile(r"^\s*\(?\s*(?:\w*(?:warp\w*|wid|ty|tx|tid|thread_?id\w*)|threadIdx\.[xyz]"
                       r"(?:\s*(?:>>\s*5|/\s*(?:32|warpSize|\w*WARP_SIZE)))?)\s*\)?\s*"
                       r"(?:==\s*0|<\s*(?:32|warpSize|\w*WARP_SIZE))\s*$")


def _if_blocks(k: KernelFacts) -> tuple[list[tuple[int, int, int, int]], list[tuple[int, int]]]:
    """The if/else pairs of the kernel (then-arm and else-arm offsets), and the arms kept to one warp."""
    text = code(k)
    pairs, single = [], []
    for m in re.finditer(r"\bif\s*(?:constexpr\s*)?\(", text):
        cond_end = _close(text, m.end() - 1, "(", ")")
        t0, t1 = _arm(text, cond_end)
        if _ONE_WARP.match(text[m.end():cond_end - 1]):
            single.append((t0, t1))
        e = re.match(r"\s*else\b", text[t1:])
        if e:
            e0, e1 = _arm(text, t1 + e.end())
            pairs.append((t0, t1, e0, e1))
    return pairs, single


def _races(k: KernelFacts) -> list[_Race]:
    if not is_kernel(k):
        return []
    events, opaque = _events(k)
    events = [e for e in events if not e.key or e.key.split(".")[0] not in opaque]
    if not any(e.kind == "R" for e in events):
        return []
    blocks, single = _if_blocks(k)
    threads = _thread_names(k)
    trees = [(lp.line, lp.end_line) for lp in k.loops if _STRIDE.search(" ".join(lp.args))]
    cyclic = {a.targets[0] for a in k.assigns if len(a.targets) == 1 and _CYCLIC_VALUE.search(a.value)}
    races = _races_in([(e, 0) for e in events], 0, blocks, single, threads, trees, cyclic)
    for lp in k.loops:
        if not k.line_start <= lp.line <= k.line_end:
            continue
        body = [e for e in events if lp.line <= e.line <= lp.end_line]
        if any(e.kind == "R" for e in body):
            twice = [(e, 0) for e in body] + [(e, 1) for e in body]
            races += [r for r in _races_in(twice, lp.line, blocks, single, threads, trees, cyclic) if r.loop_line and r not in races]
    seen: set[tuple[int, int]] = set()
    unique = []
    for r in sorted(races, key=lambda r: (r.read.line, r.write.line)):
        if (r.read.pos, r.write.pos) not in seen:
            seen.add((r.read.pos, r.write.pos))
            unique.append(r)
    return unique


def _sequences(k: KernelFacts) -> list[list[_Event]]:
    """The kernel's events in text order, and each loop's body twice (a trip, then the next)."""
    events, opaque = _events(k)
    events = [e for e in events if not e.key or e.key.split(".")[0] not in opaque]
    seqs = [events]
    for lp in k.loops:
        if k.line_start <= lp.line <= k.line_end:
            body = [e for e in events if lp.line <= e.line <= lp.end_line]
            seqs.append(body + body)
    return seqs


def _protected(k: KernelFacts) -> list[int]:
    """A reuse done right: an exchanged buffer read, a block barrier, then written again (the read's line)."""
    if not is_kernel(k):
        return []
    lines = []
    for seq in _sequences(k):
        for i, r in enumerate(seq):
            if r.kind != "R":
                continue
            later = seq[i + 1:]
            for j, b in enumerate(later):
                if b.kind == "B" and not b.key:
                    if any(w.kind == "W" and _conflict(w.key, r.key) for w in later[j + 1:]):
                        lines.append(r.line)
                    break
    return sorted(set(lines))


def _race_lines(k: KernelFacts) -> list[int]:
    return sorted({ln for r in _races(k) for ln in (r.read.line, r.write.line)})


RACE = custom(
    "shared-reuse-without-barrier",
    "a `__shared__` buffer read after a barrier (an exchange between threads), then written again — by a later "
    "statement or the next trip of its loop — with no block barrier between the read and the write",
    _race_lines)
PROTECTED = custom(
    "shared-reuse-after-barrier",
    "an exchanged `__shared__` buffer rewritten only after a block barrier that follows its last read",
    _protected)
#: present: the kernel reuses its shared buffers behind barriers, and no reuse is left unprotected
PRESENT = PROTECTED & ~RACE


def _payoff(k: KernelFacts, wl: Workload) -> Payoff:
    races = _races(k)
    if not races:
        return Payoff(UNKNOWN, "no shared buffer rewritten without a barrier after its last read")
    r = races[0]
    what = f"`{r.read.key}`" + (" (a block collective's storage)" if r.read.collective else "")
    when = f"on the next trip of the loop at line {r.loop_line}" if r.loop_line else "later in the kernel"
    return Payoff(PAYS, f"{what} is read at line {r.read.line} after a barrier and written at line {r.write.line} "
                  f"{when} with no block barrier between: a warp that has read it can overwrite it while another "
                  "is still reading — a `__syncthreads()` after the last read (or a second buffer) removes the "
                  "race at every size")


SKELETON = Skeleton(
    id="cuda-smem-reuse-barrier",
    title="A barrier between the last read of a shared buffer and its reuse",
    summary="A shared buffer (cub TempStorage, partials, a tile) rewritten after its last read needs a "
    "__syncthreads() between.",
    category=Category.MEMORY,
    doc=__doc__,
    present=PRESENT,
    preconditions=[RACE],
    subject=RACE,
    env=Env(),
    helps=("latency",),
    languages=("cuda",),
    pays_in="correctness",
    payoff=_payoff,
)
