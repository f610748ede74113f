"""Keep a row that fits one block in registers: one load, statistics and output from the same values.

## What it does
A row-wise kernel (a norm, a softmax, a cross-entropy, a gated activation over one row)
that reads the same row of global memory twice in one program is rewritten to read it
once. Two shapes of the waste:

- **store, then reload**: an intermediate row (the centred `x - mean`, the exponentials
  of a softmax, the normalised row before the weight is applied) is written to a
  scratch or output buffer and loaded back a few lines later in the same program;
- **two passes over a row that fits one block**: the row is loaded for the statistics
  (a `tl.sum(x * x)`, a max), then loaded again for the output, either as two
  `tl.load`s of the same address or as two column loops over the same range
  (`for off in range(0, N, BLOCK)`) each re-reading `x`, although the launcher makes
  `BLOCK` cover the whole row (`BLOCK = next_power_of_2(N)`), so each loop runs once.

The rewrite loads the row once into a `[BLOCK]` tensor, computes the statistics from it
and the output from the same values:

    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    xc = tl.where(mask, x - tl.sum(x, axis=0) / n_cols, 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride + cols, (xc * rstd * w + b).to(...), mask=mask)

A scratch buffer that only carried the intermediate goes with its stores and loads; a
stored row the caller needs (an output) keeps its store, and only the reload goes.

## Why it is faster
A row kernel is memory-bound: its cost is the bytes each program moves. A reload costs
a second trip through the load path for every element of the row (L2 at best, HBM when
the row has been evicted by the other programs' rows), and a store-then-reload adds the
write of the intermediate too: for a LayerNorm that stores the centred row and loads it
back, 2 reads + 2 writes per element become 1 + 1. The compiler does not remove these:
Triton does not forward a store to a later load, and it keeps two loads of one address
apart when a store (to any pointer) or a loop boundary lies between them. Two identical
loads with nothing written between them it does merge (they compiled to the same PTX as
one load for sm_90 with Triton 3.7): those are left alone. The saving shrinks as the row
widens: a row held whole in registers costs `BLOCK / (32 * num_warps)` registers a
thread per live copy, and past ~16K elements a program spills, where a column loop that
re-reads from L2 is the right design (and `online-softmax` merges its passes).

## Applies when
- one program reads the same row twice, the address unchanged in between (no pointer
  stepped, no loop index moved, no other store into that tensor):
  - a `tl.store` and a later `tl.load` of the same address, the stored row a scratch
    buffer (`tmp`, `buf`, `workspace`) or overwritten later by the final output;
  - two `tl.load`s of the same address in the same iteration with a store between them
    (which keeps the compiler from merging them);
  - two sibling column loops over the same range (`for off in range(0, N, BLOCK)`) each
    loading the row, where every launch in the file makes `BLOCK` cover the row:
    `next_power_of_2(N)` uncapped, capped with a `raise` for wider rows (Triton's
    layer-norm tutorial), or Liger's `calculate_settings(N)`;
- the row is a vector or tile (offsets from `tl.arange`, or a block pointer) indexed by
  the program id, both accesses run together (not in two different `if`s), they fill
  masked lanes alike (`other=`), and the kernel has no `tl.dot`;
- pays when the row (`cols`) fits one program's registers: at most 8,192 elements; it
  does not pay past 16,384; between, and with the width unknown, it is conditional
  (`--shape cols=N`).

## Does not apply when
- the second read is of another tensor (the weight after the input, `dy` after `x`), or
  of another part of the row (a pointer advanced, a loop index that moved), or of values
  another store changed in between (a 2-D view of the same scratch row);
- the row cannot fit one block: column loops over a row wider than the block (a capped
  block with no `raise`, a kernel the host launches only when `n_cols > BLOCK_SIZE`, a
  vocabulary-wide cross-entropy) re-read from L2 by design (see `online-softmax`);
- the stored row is an output the caller needs and nothing overwrites it (a fused
  residual add writing `x + r` back in place, probabilities returned to the caller): the
  store must stay, only the reload can go — a smaller edit than this skeleton's rewrite;
- the reload reads what other programs wrote (an atomic, a `tl.debug_barrier` between
  the store and the load): that is communication, not a round trip;
- two identical loads with nothing written between them: the compiler already emits one.

## References
Promoted from the candidate cluster "fewer call tl.load" (`skel skeletons candidates`: 3
repositories, 4 commits, 8 kernels) and issue #38's expert gap "keeping a normalised row
in registers instead of storing and reloading it". The cluster's instances each take a
load out of a program; two are this technique's kind (data already in registers not read
again, a tile built in registers and stored once), the others are related edits:
- flash-linear-attention `fla/ops/common/chunk_delta_h.py` (`chunk_gated_delta_rule_bwd_kernel_dhu_blockdim64`:
  the `K > 192` branch loaded `b_d4` from `p_d4` twice, the edit keeps one load; with no store between, Triton
  already merged the two) — at `465bc33079`, 2025-04-13, "[Gated DeltaNet] optimize UT transform (#349)"
- flash-linear-attention `fla/ops/abc/chunk_gate.py` (`chunk_gated_abc_bwd_kernel_intra_K`: the `[BC, BC]` tile of
  `dA` built in registers with `tl.where` and stored once, instead of one `tl.store` per column) — at `4929ae7370`,
  2024-06-11, "[GSA] Online indexing for secondary chunking"
- lightllm `lightllm/models/mistral/triton_kernel/token_attention_nopad_att1.py` (`_fwd_kernel_token_att1`; and
  `token_attention_nopad_reduceV.py`, `_fwd_kernel_token_att2`: the window start computed in registers,
  `tl.maximum(seq_len - sliding_window, 0)`, instead of loaded from a tensor the host built) — at `0bf7ec9f24`,
  2024-06-12, "use triton to init window info (#420)"
- lmdeploy `lmdeploy/pytorch/kernels/mbgmv.py` (`_x_a_mv_kernel`, `_acc_b_mv_kernel`; `mbgmm.py`'s `_x_a_mm_kernel`,
  `_acc_b_mm_kernel` alike: a page-table load dropped, row offsets read directly) — at `398c2aae74`, 2024-05-08,
  "Optimize slora (#1447)" (its message states no number)
Kernels of the mined repositories (snapshots before 2025-07-01) with the pattern, the before side of the rewrite:
- ColossalAI `colossalai/kernel/triton/rms_layernorm.py` (`_rmsnorm_kernel`: a variance loop and a normalise loop
  each re-reading `X`, `BLOCK_SIZE = min(MAX_FUSED_SIZE, next_power_of_2(N))` with a `raise` for wider rows) — at
  `b2c0d9ff2`, 2024-03-11
- tritonbench `tritonbench/operators/layer_norm/tutorial.py` (`_layer_norm_fwd_fused`, Triton's layer-norm tutorial:
  three loops re-reading `X`, each running once) — at `359dfb4`, 2024-11-11
- lightllm `lightllm/models/llama/triton_kernel/rotary_emb.py` (`_rotary_kernel`: the `cos`/`sin` tile loaded for
  `Q`, stored, then loaded again for `K`; introduced by `00aeedc349`, 2024-01-25, "[Update] KV Merge And FFn up gate
  merge. (#320)") — at `35f6d850`, 2024-02-26
The rule matches the before side of none of the 987 drafts mined from the 26 repositories' history before
2025-07-01 (the rotary kernel above matches on the after side of the commit that introduced it): its GPU evidence
has to come from the example pair.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skel.kernels.flow import CallInfo, Flow, Node, args_of, flow_of, has_call, is_call, name_of, names_in
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.addresses import is_block_ptr_address, is_vector_expr
from skel.skeletons.predicates.dots import no_dot
from skel.skeletons.predicates.host import own_launches
from skel.skeletons.predicates.pointers import pointer_bases
from skel.skeletons.predicates.payoff import row_shape

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload  # the floor re-exports the type (catalog modules import no kernels.workload)

#: a row this wide (elements a program) still fits the registers: 32 fp32 values a thread at 8 warps
FITS = 8192
#: past this a row held in registers spills (64 fp32 values a thread at 8 warps): a column loop is the design
SPILLS = 16384
#: reductions whose result, with the loaded row, makes the output (a statistic of the row)
_REDUCTIONS = frozenset({"tl.sum", "tl.max", "tl.min", "tl.reduce", "tl.xor_sum"})
#: calls that order memory between programs or threads: a reload after one reads what others wrote
_SYNC = re.compile(r"tl\.atomic_\w+|tl\.debug_barrier")
#: a row as wide as a vocabulary (150-260K columns): streaming it in column blocks is the design
_VOCAB = re.compile(r"(?i)^(v|n_?vocab|vocab\w*|\w*_vocab\w*|\w*logits?\w*|n_?classes|num_classes)$")
#: a buffer that only carries an intermediate (`tmp_ptr`, `scratch`, `workspace`, `buf`)
_SCRATCH = re.compile(r"(?i)(^|_)(tmp|temp|scratch|buf|buffer|workspace|ws|staging|inter|intermediate)(_|$|ptr$)")


def _address(c: CallInfo) -> Node | None:
    return c.arg(0, "pointer")


def _loops_compatible(a: CallInfo, b: CallInfo, fl: Flow, k: KernelFacts) -> bool:
    """The two accesses run in the same iteration: both outside loops, both in the same
    loop, or each in one of two sibling loops over the same range (two passes over a row:
    the same kind, index and bounds, the first ending before the second starts) whose
    block covers the row (``_block_covers_row``): a column loop over a row wider than its
    block re-reads by design."""
    if a.loops == b.loops:
        return True
    if len(a.loops) != len(b.loops) or a.loops[:-1] != b.loops[:-1]:
        return False
    la, lb = a.loops[-1], b.loops[-1]
    return (la.end < lb.line and la.kind == lb.kind and la.targets == lb.targets and la.bounds is not None
            and lb.bounds is not None and fl.key(la.bounds) == fl.key(lb.bounds)
            and _block_covers_row(lb.bounds, k))


def _block_covers_row(bounds: Node, k: KernelFacts) -> bool:
    """The loop `range(0, N, BLOCK)` steps by a constexpr that every launch of the kernel in
    its file sets to cover the row, so the loop runs once: `next_power_of_2(N)` uncapped,
    or capped (`min(MAX_FUSED_SIZE, next_power_of_2(N))`) with the launcher raising when
    the row is wider (Triton's layer-norm tutorial), or Liger/Unsloth's
    `calculate_settings(n)` (which raises past 65,536). A launch chosen by the row's width
    (`if n_cols <= BLOCK_SIZE: ... else: <this kernel>`), unseen launches, a literal block
    or a cap without a raise say nothing: the row may be wider, and the loop is the design."""
    if not is_call(bounds, "range", "tl.range"):
        return False
    args = args_of(cast("cst.Call", bounds))  # a call: checked above
    step = name_of(args[2]) if len(args) > 2 else None
    if step is None:
        return False
    param = k.param(step)
    launches = own_launches(k)
    if param is None or not param.constexpr or not launches:
        return False
    for ln in launches:
        values = [ln.kwargs.get(step, ""), *ln.kwarg_sources.get(step, [])]
        if any(re.search(rf"\b{re.escape(step)}\b", g) for g in ln.guards):
            return False  # the host picks this kernel by comparing the row with the block
        if any("calculate_settings(" in v for v in values):
            continue
        if not any("next_power_of_2(" in v for v in values):
            return False
        if any("min(" in v for v in values) and not _raises_when_wider(ln.calls_before):
            return False
    return True


def _raises_when_wider(calls_before: list[str]) -> bool:
    """The launching function raises an error after sizing the block (`if N > BLOCK_SIZE:
    raise RuntimeError(...)`): a capped block that still covers every row it launches."""
    sized = [i for i, c in enumerate(calls_before) if c.endswith("next_power_of_2")]
    return bool(sized) and any(c.endswith(("Error", "Exception")) for c in calls_before[sized[0]:])


def _same_branch(a: CallInfo, b: CallInfo) -> bool:
    """One access's `if` arms hold the other's: both run whenever the inner one does. Two
    loads under different `if`s (`if HAS_Z and not NORM_BEFORE_GATE:` ... `if HAS_Z and
    NORM_BEFORE_GATE:`) may never both run."""
    return set(a.branch) <= set(b.branch) or set(b.branch) <= set(a.branch)


def _same_fill(fl: Flow, a: CallInfo, b: CallInfo) -> bool:
    """Two loads that fill masked lanes alike (`other=`): a reload with another fill value
    (`other=max_len` after `other=0`) reads different values there."""
    if a.name != "tl.load":
        return True
    fa, fb = a.arg(2, "other"), b.arg(2, "other")
    return (fa is None) == (fb is None) and (fa is None or fb is None or fl.key(fa) == fl.key(fb))


def _merged_by_compiler(fl: Flow, first: CallInfo, second: CallInfo) -> bool:
    """Two loads of one address in the same iteration with no write to memory between them
    (no `tl.store`, no atomic): Triton's common-subexpression pass already makes them one
    load (they compiled to the same PTX as a single load for sm_90, Triton 3.7), so the
    rewrite would change nothing. A store between, to any pointer, keeps both."""
    if first.name != "tl.load" or first.loops != second.loops:
        return False
    return not any((c.name == "tl.store" or c.name.startswith("tl.atomic_")) and first.line < c.line < second.line
                   for c in fl.calls)


def _per_program(fl: Flow, addr: Node) -> bool:
    """The address depends on a program id: each program reads its own row."""
    return has_call(fl.closure(addr)[1], "tl.program_id")


def _row(fl: Flow, addr: Node) -> bool:
    """The address is a row (or tile) of elements: offsets from `tl.arange`, or a block pointer."""
    return is_vector_expr(fl, addr) or is_block_ptr_address(fl, addr)


def _vocabulary_loop(fl: Flow, first: CallInfo, second: CallInfo, addr: Node) -> bool:
    """Two column passes over a vocabulary-wide row (a loop bound `V`/`vocab_size`, or an
    address into logits): the row cannot fit one block, re-reading it is the design."""
    if first.loops == second.loops or not second.loops:
        return False
    bounds = second.loops[-1].bounds
    names = (names_in(bounds) if bounds is not None else set()) | names_in(addr) | fl.closure(addr)[0]
    return any(_VOCAB.match(n) for n in names)


def _unchanged_between(fl: Flow, addr: Node, first: CallInfo, second: CallInfo) -> bool:
    """No name the address reads is given a new value between the two accesses: every
    definition between them repeats the one the first access saw (a second column loop
    recomputing `cols = off + tl.arange(0, BLOCK)`), none steps a pointer (`p += BLOCK`,
    `p = tl.advance(p, ...)`) or reads a loop index other than the two passes' own."""
    names = fl.closure(addr)[0] | names_in(addr)
    for n in names:
        defs = fl.defs.get(n, [])
        seen = [d for d in defs if d.line <= first.line]
        reaching = max(seen, key=lambda d: d.line) if seen else None
        for d in defs:
            if not first.line < d.line < second.line:
                continue
            if d.aug or reaching is None or reaching.aug or fl.key(d.value) != fl.key(reaching.value):
                return False
    # a loop index of no loop around the two accesses (one left over from an earlier loop)
    around = {t for c in (first, second) for lp in c.loops for t in lp.targets}
    return not {n for n in names if _is_loop_index(fl, n)} - around


def _is_loop_index(fl: Flow, name: str) -> bool:
    return any(name in lp.targets for lp in fl.loops)


def _synced_between(fl: Flow, first: CallInfo, second: CallInfo) -> bool:
    return any(_SYNC.fullmatch(c.name) and first.line < c.line < second.line for c in fl.calls)


def _rewritten_between(fl: Flow, first: CallInfo, second: CallInfo, key: str, k: KernelFacts) -> bool:
    """A store between the two accesses writes the same tensor at another address (a 2-D
    view of a scratch row, a shifted slice): the reload may read values the first access
    never saw."""
    addr = _address(second)
    bases = pointer_bases(fl.text(addr), k, second.line) if addr is not None else set()
    for c in fl.calls:
        a = _address(c)
        if (c.name == "tl.store" or c.name.startswith("tl.atomic_")) and first.line < c.line < second.line \
                and a is not None and fl.key(a) != key and bases & pointer_bases(fl.text(a), k, c.line):
            return True
    return False


def _scratch_or_overwritten(fl: Flow, store: CallInfo, load: CallInfo, key: str, k: KernelFacts) -> bool:
    """The stored row only carries an intermediate: its buffer is named as scratch, or a
    later store to the same address overwrites it with the final output. A row stored
    for the caller and then reloaded keeps its store (only the reload could go)."""
    bases = names_in(_address(store) or store.node) | fl.closure(_address(store) or store.node)[0]
    if any(_SCRATCH.search(b) for b in bases if k.param(b) is not None):
        return True
    return any(c.name == "tl.store" and c.line > load.line and not c.exclusive_with(load)
               and (a := _address(c)) is not None and fl.key(a) == key for c in fl.calls)


def reread_rows(k: KernelFacts) -> list[int] | None:
    """Lines of a row read twice by one program: a later vector `tl.load` of an address
    an earlier `tl.store` (of a scratch or overwritten row) or `tl.load` in the same
    iteration used, the address unchanged in between, nothing ordering memory between
    them, and the compiler unable to make the two loads one. Stays a function: it pairs
    calls through the data-flow view (their addresses, loops and the definitions between
    them), which no one-element pattern can."""
    return _rereads(k, waste_only=True)


def any_reread(k: KernelFacts) -> list[int] | None:
    """``reread_rows`` counting every reread, wasteful or not: an output stored and read
    back, two loads the compiler merges. A kernel with one does not keep its row in
    registers as written."""
    return _rereads(k, waste_only=False)


def _rereads(k: KernelFacts, waste_only: bool) -> list[int] | None:
    fl = flow_of(k)
    if not fl.ok:
        return None
    accesses = [c for c in fl.calls if c.name in ("tl.load", "tl.store") and _address(c) is not None]
    lines: list[int] = []
    for second in accesses:
        addr = _address(second)
        if second.name != "tl.load" or addr is None or not _row(fl, addr):
            continue
        key = fl.key(addr)
        earlier = [c for c in accesses if c.line < second.line and not c.exclusive_with(second)
                   and fl.key(_address(c) or c.node) == key]
        if not earlier:
            continue
        first = max(earlier, key=lambda c: c.line)  # the nearest: what the reload re-reads
        if not (_same_branch(first, second) and _same_fill(fl, first, second) and _per_program(fl, addr)):
            continue
        if waste_only and _merged_by_compiler(fl, first, second):
            continue
        if not _loops_compatible(first, second, fl, k) or not _unchanged_between(fl, addr, first, second):
            continue
        if _synced_between(fl, first, second) or _rewritten_between(fl, first, second, key, k) \
                or _vocabulary_loop(fl, first, second, addr):
            continue
        if waste_only and first.name == "tl.store" and not _scratch_or_overwritten(fl, first, second, key, k):
            continue
        lines += [first.line, second.line]
    return sorted(set(lines))


def _kept_in_registers(k: KernelFacts) -> list[int] | None:
    """Lines of a row loaded once outside loops whose values make both a reduction (a
    statistic) and a stored output together with that statistic: `x = tl.load(...)`,
    `rstd = ...tl.sum(x * x)...`, `tl.store(y, x * rstd)`."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    rows = {}
    for c in fl.loads():
        addr = _address(c)
        if not c.loops and addr is not None and _row(fl, addr):
            for t in c.targets:
                rows[t] = c.line
    if not rows:
        return None
    reductions = [c for c in fl.calls if c.name in _REDUCTIONS and not c.loops and c.targets]
    for s in fl.named("tl.store"):
        value = s.arg(1, "value")
        if value is None:
            continue
        feeds = fl.closure(value)[0] | names_in(value)
        for r in reductions:
            if not set(r.targets) & feeds:
                continue
            reads = fl.closure(r.node)[0] | names_in(r.node)
            shared = reads & feeds & set(rows)
            if shared:
                return sorted({rows[n] for n in shared} | {r.line, s.line})
    return None


#: the same row read twice by one program (a store then a reload, or two loads)
ROW_READ_TWICE = custom(
    "row-read-twice",
    "one program reads the same row twice: a stored intermediate loaded back, or a second load of the row "
    "(two passes over the same range)",
    reread_rows)
#: any second read of a row (wasteful or not): the row is not kept in registers as written
ANY_REREAD = custom("row-read-again", "a row read again by the program that loaded or stored it", any_reread)
#: a row loaded once whose values make both its statistic and the output
ROW_KEPT_IN_REGISTERS = custom(
    "row-kept-in-registers",
    "a row loaded once whose values make both a reduction (a statistic) and the stored output",
    _kept_in_registers)


def row_fits_registers(k: KernelFacts, wl: Workload) -> Payoff:
    """The row (``cols``, a width parameter, or the largest tensor's last dimension) fits
    one program's registers: ≤ 8,192 elements pays, > 16,384 spills and does not."""
    _, cols = row_shape(k, wl)
    if cols is None:
        return Payoff(UNKNOWN, f"pays if the row fits one program's registers (≤ {FITS:,} columns)",
                      "--shape cols=N")
    if cols <= FITS:
        return Payoff(PAYS, f"a row of {cols:,} columns fits one block in registers (≤ {FITS:,}: at most "
                      f"{-(-cols // 256)} fp32 values a thread at 8 warps): the second read goes")
    if cols > SPILLS:
        return Payoff(DOES_NOT_PAY, f"a row of {cols:,} columns does not fit one program's registers (> {SPILLS:,}: "
                      "it would spill); a column loop re-reading from L2 is the right design")
    return Payoff(UNKNOWN, f"a row of {cols:,} columns is between {FITS:,} (fits) and {SPILLS:,} (spills): "
                  "measure it with `skel verify`")


SKELETON = Skeleton(
    id="row-in-registers",
    title="Keep the row in registers: no store-and-reload, no second pass",
    summary="Load a row that fits one block once; compute its statistics and output from the same registers.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\b(in|into) registers?\b", r"\breload\w*", r"\bround[\s-]?trip\b", r"\bregister pressure\b"),
    present=ROW_KEPT_IN_REGISTERS & ~ANY_REREAD,
    preconditions=[ROW_READ_TWICE, no_dot("a row-wise kernel, not a matmul")],
    subject=ROW_READ_TWICE,
    env=Env(),
    payoff=row_fits_registers,
    helps=("memory", "latency"),
)
