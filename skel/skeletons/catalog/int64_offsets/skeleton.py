"""Promote program ids and offsets to int64 so tensors past 2**31 elements index correctly.

## What it does
Casts the program id (or the first index derived from it) to 64 bits before it is
multiplied by a stride: `row = tl.program_id(0).to(tl.int64)` and then
`x_ptr + row * stride + cols`; in 2-D tiles `offs_m[:, None].to(tl.int64) * stride_m`; in
chunked kernels `i_b.to(tl.int64) * T`. Every product that depends on it is then computed
in int64, so `row * stride` no longer wraps.

## Why it is faster
It is not: this is a correctness technique with a small cost. `tl.program_id` is int32, and an integer
kernel argument below 2**31 (a stride, `n_cols`, `T`) is specialized as int32 too, so
`row * stride` is an int32 multiply that silently wraps once the product passes
2**31 - 1: with 32,768 columns that is row 65,536 of the tensor (4.3 GB of bf16). The
wrapped offset is negative, so the kernel reads or writes memory before the tensor — wrong
results or an illegal-address fault, only on large inputs (long-context logits `[B*T, V]`,
large-batch activations), never in small tests. Liger-Kernel added these casts to its
cross-entropy, SwiGLU/GeGLU, KL and JSD kernels after such overflows.
The cost is small but not zero: 64-bit integer multiplies and adds take two instructions
each, and the 64-bit address temporaries use more registers. In memory-bound row kernels
it does not show; in address-heavy tiled loops, promote once (the base offset of the
program) and keep the per-iteration tile offsets in int32.

## Applies when
- a load or store address multiplies a program-id-derived index (the program id, a row
  or tile index from it, `offs_m = pid_m * BM + tl.arange(...)`) by a runtime argument (a
  stride, `n_cols`, `T`, `H * K`): the product grows with the problem;
- nothing in the kernel is promoted to int64 yet (`.to(tl.int64)`, `.cast(tl.int64)`,
  `tl.cast(x, tl.int64)`, or an address reading a parameter declared `stride: tl.int64`);
- the tensors can exceed 2**31 elements in use (logits over a large vocabulary, long
  sequences times heads times head dim, large activations). In a serving engine's module
  (sglang, vLLM, lmdeploy, ...) one forward pass holds a bounded number of tokens, so the
  product must be one that passes 2**31 even then: a cache slot, page or block id loaded
  from a table (or any loaded index into a cache or pool) times a stride, a program id
  times two or more sizes (`i_nh * NT * K * V`: a state or slab per index), or
  vocabulary-wide rows (`logits + row * stride`).

## Does not apply when
- a serving engine's `row * stride_row` over a `[tokens, hidden]` activation: with chunked
  prefill a forward pass holds thousands to tens of thousands of tokens, and such a
  product wraps only past hundreds of thousands (hidden 4-16K). On hand-checked sglang and
  vLLM kernels this skeleton was judged wrong 80 times in 95, mostly for that reason
  (`benchmarks/retrieval/precision.py report --by skeleton --samples ,fresh2,...,fresh13`).
  A training library (flash-linear-attention, Liger) sees batch times sequence, and does
  reach it;
- the multiplier is a `tl.constexpr` and the program id a small block index (`pid * BLOCK`
  over a tensor known to stay far below 2**31 elements): the product cannot grow;
- the program only indexes small per-row tables (`tl.load(rstd + row)`): the index is
  below the number of rows;
- a stride or size is itself >= 2**31: Triton then passes it as int64 and the product is
  already 64-bit (but the next smaller problem silently is not — promote anyway);
- tight tiled inner loops where 64-bit offsets add measurable integer work: promote the
  base pointer once per program (`x_ptr += pid.to(tl.int64) * stride`) instead of every
  tile offset.

## References
- Liger-Kernel `src/liger_kernel/ops/cross_entropy.py` (`liger_cross_entropy_kernel`: — at `5e3bf99abb`, before 2025-07-01
  `program_id = tl.program_id(0).to(tl.int64)` with the comment on B*T*V overflow, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/swiglu.py` (`_swiglu_forward_kernel`, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/dyt.py` (`_dyt_fwd_kernel`: `tl.cast(tl.program_id(0), tl.int64)`, v0.5.10)
- Liger-Kernel commit 665751e2 ("tl.program_id() does indeed not have a cast method in
  triton2.3.1"): use `.to(tl.int64)`, which every Triton version has
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skel.kernels.flow import (NOT_CONSTANT, Flow, Node, args_of, binary, call_name, calls_in, constant, has_call,
                               name_of, names_in, operands, walk)
from skel.skeletons.predicates.payoff import offsets_past_int32
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.patterns import addresses, calls_where
from skel.skeletons.predicates.names import TILE_NAME
from skel.skeletons.predicates.workload import SERVING_ENGINE

if TYPE_CHECKING:
    from skel.kernels.flow import CallInfo
    from skel.kernels.model import Call, KernelFacts

_CASTS = (".to", ".cast", "tl.cast")
_INT64_TYPE = re.compile(r"\bu?int64\b")


def _int64_cast(c: Call, k: KernelFacts) -> bool:
    """A cast whose arguments name int64 (`.to(tl.int64)`, `tl.cast(x, tl.int64)`)."""
    return any("int64" in a for a in (*c.args, *c.kwargs.values()))


def _reads_int64_param(fl: Flow, c: CallInfo, addr: Node, k: KernelFacts) -> bool:
    """The address reads a parameter declared `tl.int64` in the signature (`stride_row:
    tl.int64`): Triton passes it as a 64-bit integer, so every product with it is computed
    in int64 already."""
    wide = {p.name for p in k.params if not p.constexpr and _INT64_TYPE.search(p.annotation)}
    return bool(wide) and bool((fl.closure(addr)[0] | names_in(addr)) & wide)


def _pid_dependent(fl: Flow, expr: Node, pid_loops: set[str]) -> bool:
    """``expr`` is computed from a program id: directly, through names, or through a loop
    index whose range starts at one (a grid-stride row loop)."""
    names, exprs = fl.closure(expr)
    return has_call(exprs, "tl.program_id") or bool(names & pid_loops)


def _runtime_factor(fl: Flow, expr: Node, runtime: set[str]) -> bool:
    names, _ = fl.closure(expr)
    return bool((names | names_in(expr)) & runtime)


def _pid_loops(fl: Flow) -> set[str]:
    """Indices of loops whose range starts at a program id (grid-stride row loops), once
    per kernel (kept with its data-flow view)."""
    key = "int64-offsets:pid-loops"
    if key not in fl.memo:
        pid_loops: set[str] = set()
        for lp in fl.loops:
            if lp.bounds is not None and has_call(fl.closure(lp.bounds)[1], "tl.program_id"):
                pid_loops |= lp.targets
        fl.memo[key] = pid_loops
    return cast("set[str]", fl.memo[key])  # what this function stored


def _int32_product(fl: Flow, addr: Node, k: KernelFacts, large: bool) -> bool:
    """The address multiplies a program-id-derived index by a runtime argument, in int32.
    ``large``: only a product whose extent can pass 2**31 when a forward pass holds a
    bounded number of tokens (``_large_extent``)."""
    runtime = {p.name for p in k.params if not p.constexpr}
    pid_loops = _pid_loops(fl)
    exprs = fl.closure(addr)[1]
    for e in exprs:
        for n in walk(e):
            if not binary(n, "*"):
                continue
            a, b = operands(n)
            if (_pid_dependent(fl, a, pid_loops) and _runtime_factor(fl, b, runtime)) or (
                    _pid_dependent(fl, b, pid_loops) and _runtime_factor(fl, a, runtime)):
                # the product that grows may sit elsewhere on the address's path than the
                # runtime factor (`i_tg = i_b * NT + i_t`, then `(i_tg * H + i_h) * V * K`)
                return not large or any(_large_extent(fl, x, addr, pid_loops) for x in exprs)
    return False


def _pid_times_runtime(fl: Flow, c: CallInfo, addr: Node, k: KernelFacts) -> bool:
    return _int32_product(fl, addr, k, large=False)


def _pid_times_runtime_large(fl: Flow, c: CallInfo, addr: Node, k: KernelFacts) -> bool:
    return _int32_product(fl, addr, k, large=True)


#: a table of cache locations: a slot, page or block id loaded from it indexes the whole KV
#: pool (every request's tokens of the layer), not one forward pass's activations
_CACHE_TABLE = re.compile(r"(?i)block|page|slot|loc|cache|pool|kv_ind|req_to_token|token_to_kv")
#: an address into a KV cache or a pool of per-request state
_CACHE_ADDRESS = re.compile(r"(?i)cache|pool|kv_buf")
#: rows as wide as the vocabulary (150-260K columns): a few thousand of them pass 2**31
_VOCAB_WIDE = re.compile(r"(?i)logit|vocab")


def _factors(fl: Flow, e: Node, depth: int = 0) -> list[Node]:
    """The factors of a product chain (`a * b * c` -> a, b, c); a local defined once as a
    product (`stride_h = H * K`) is read through."""
    if binary(e, "*"):
        a, b = operands(e)
        return _factors(fl, a, depth) + _factors(fl, b, depth)
    n = name_of(e)
    defs = fl.defs.get(n, []) if n is not None and depth < 3 else []
    if len(defs) == 1 and not defs[0].aug and binary(defs[0].value, "*"):
        return _factors(fl, defs[0].value, depth + 1)
    return [e]


def _large_extent(fl: Flow, expr: Node, addr: Node, pid_loops: set[str]) -> bool:
    """The int32 product in ``expr`` (a definition on the way to the address ``addr``) can
    pass 2**31 even when a forward pass holds only thousands of tokens:

    - an index loaded from a table of cache locations (a slot, page or block id), or any
      loaded index into a cache or pool, scales a size: it addresses the whole KV pool,
      every request's tokens;
    - a program-id index times two or more sizes (`i_nh * NT * K * V`, `pid_c * chunk_size *
      stride`, `head * num_seq * head_size`): a state or slab per index, not a row; tile
      sizes (`pid * BLOCK_M`) do not count, they only make the row index;
    - the address reads vocabulary-wide rows (`logits + row * stride`).

    `row * stride_row` over a `[tokens, hidden]` activation is none of these: it needs
    hundreds of thousands of tokens in one pass to wrap."""
    names = fl.closure(addr)[0] | names_in(addr)
    cache_address = any(_CACHE_ADDRESS.search(x) for x in names)
    for n in walk(expr):
        if not binary(n, "*"):
            continue
        parts = _factors(fl, n)
        pid = [f for f in parts if _pid_dependent(fl, f, pid_loops)]
        if not pid:
            continue
        pid_ids = {id(f) for f in pid}
        sizes = [f for f in parts if id(f) not in pid_ids and constant(f) is NOT_CONSTANT
                 and not TILE_NAME.fullmatch(name_of(f) or "")]
        if len(sizes) >= 2:
            return True
        if sizes and any(_cache_index(fl, f, cache_address) for f in pid):
            return True
    return any(_VOCAB_WIDE.search(x) for x in names)


def _cache_index(fl: Flow, index: Node, cache_address: bool) -> bool:
    """``index`` reads a value loaded from memory: a table of cache locations (`block_table`,
    `slot_mapping`), or any index table when the address itself is into a cache or pool."""
    for e in fl.closure(index)[1]:
        for c in calls_in(e):
            if call_name(c) == "tl.load" and args_of(c) and (
                    cache_address or _CACHE_TABLE.search(fl.text(args_of(c)[0]))):
                return True
    return False


INT64_PROMOTED = calls_where(
    *_CASTS, where=_int64_cast, name="int64-cast",
    describe="an int64 promotion (`.to(tl.int64)` / `tl.cast(x, tl.int64)`)") | addresses(
    kernel_where=_reads_int64_param, name="int64-parameter",
    describe="an address reading a parameter declared `tl.int64` in the signature")
INT32_PID_TIMES_RUNTIME = addresses(
    kernel_where=_pid_times_runtime, name="int32-pid-times-runtime-size",
    describe="an address multiplying a program-id-derived index by a runtime stride or size (an int32 product)")

INT32_PRODUCT_LARGE_IN_SERVING = ~SERVING_ENGINE | addresses(
    kernel_where=_pid_times_runtime_large, name="int32-product-past-2-31-in-serving",
    describe="an int32 product that can pass 2**31 with a forward pass of thousands of tokens (a cache slot, "
             "page or block id times a stride; a program id times two or more sizes; vocabulary-wide rows)")

SKELETON = Skeleton(
    id="int64-offsets",
    title="int64 program ids and offsets (no int32 wrap past 2**31 elements)",
    summary="Promote program ids / offsets to int64 (.to(tl.int64)) so indexing past 2**31 elements is correct.",
    category=Category.MEMORY,
    doc=__doc__,
    present=INT64_PROMOTED,
    preconditions=[INT32_PID_TIMES_RUNTIME, INT32_PRODUCT_LARGE_IN_SERVING],
    subject=INT32_PID_TIMES_RUNTIME,
    pays_in="correctness",
    env=Env(),
    payoff=offsets_past_int32,
    helps=(),
)
