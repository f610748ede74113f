"""Compile out per-iteration load masks when the loop extent divides the block (EVEN_K).

## What it does
Adds a constexpr flag such as `EVEN_K` (computed on the host or in
`@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})`) and
splits the loop's loads: `if EVEN_K: a = tl.load(a_ptrs)` else
`a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k, other=0.0)`. The flag is a
constexpr, so each variant compiles only one path.

## Why it is faster
A mask that changes every iteration (`offs < K - k * BLOCK_K`) costs integer compares,
predicate registers and selects on every element of every tile, and a masked load with
an unknown bound can block the widest vector loads. When the extent is a multiple of
the block, every tile is full and the mask is always true: dropping it removes that
work from the hot loop. The effect is largest in memory- or issue-bound loops with
small tiles; in big compute-bound GEMMs the MMAs hide most of it.

## Applies when
- a `range`/`tl.range` loop loads tiles with a `mask=` that depends on the loop index
  (a bounds check against K, T or n_cols), and
- the extent is often a multiple of the block size (model dimensions, padded lengths),
  so the unmasked variant actually runs.

## Does not apply when
- the divisibility is not guaranteed: dropping the mask reads out of bounds. The flag
  must be derived from the actual arguments (heuristics or the launcher), never assumed;
- the mask is loop-invariant (a head-dim mask outside the K loop): the compiler already
  hoists it;
- the mask is semantic (causal, sparsity, data-dependent), not a bounds check;
- `tl.static_range` loops, whose trip count and bounds are compile-time already;
- sequence lengths vary per call (`do_not_specialize=["T"]` kernels): a T-divisibility flag
  doubles the compiled variants for little gain, or a peeled last iteration is better.

## References
- Triton (history) `python/triton/ops/blocksparse/matmul.py` (`_dsd_kernel`)
- triton_kernels `matmul_ogs_details/_p_matmul_ogs.py` (`_p_matmul_ogs`, `EVEN_K`)
- SGLang `python/sglang/kernels/ops/moe/fused_moe_triton_kernels.py` (`fused_moe_kernel`, `even_Ks`)
- vLLM `vllm/lora/ops/triton_ops/kernel_utils.py` (`mm_k`, `EVEN_K`)
- lightllm `grouped_matmul_kernel` (`NEED_K_MASK`)
"""

from __future__ import annotations

import ast
import re

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.flow import _is_vector_expr, bounds_mask, flow_of, has_call
from skel.skeletons.conditions import custom

_FLAG = re.compile(r"(?:EVEN|Even|even)(?:_\w+|[A-Z]\w*)?|NEED_\w*MASK\w*|\w*DIVISIBLE\w*|\w*divisible\w*")


def _even_flags(k):
    flags: dict[str, int] = {}
    for p in k.params:
        if p.constexpr and _FLAG.fullmatch(p.name):
            flags[p.name] = k.line_start
    for d in k.decorators:
        if d.name == "triton.heuristics":
            for item in d.list_items:
                name = item.strip("'\" ")
                if _FLAG.fullmatch(name):
                    flags[name] = d.line
    hits = []
    for name, line in flags.items():
        branched = any(name in i.get("names", ()) for i in k.ifs) or re.search(
            rf"\bif\s+(?:not\s+)?\(?\s*{re.escape(name)}\b", k.source)
        if branched:
            hits.append(line)
    return hits


def _no_specialize(k) -> set[str]:
    jit = k.decorator("triton.jit")
    text = (jit.kwargs.get("do_not_specialize", "") if jit else "")
    return set(re.findall(r"['\"](\w+)['\"]", text))


def _limits(fl, mask):
    """The scalar sides of the mask's comparisons (`K - k0` in `offs < K - k0`)."""
    _, exprs = fl.closure(mask)
    out = []
    for e in exprs:
        for n in ast.walk(e):
            if isinstance(n, ast.Compare) and len(n.ops) == 1:
                for side in (n.left, n.comparators[0]):
                    if not _is_vector_expr(fl, side):
                        out.append(side)
    return out


def _static_limit(fl, k, mask) -> bool:
    """Every bound is known per launch: not read from memory (varlen `eos - bos`) and
    not a `do_not_specialize` length, so the host can compute a divisibility flag."""
    skip = _no_specialize(k)
    for side in _limits(fl, mask):
        names, exprs = fl.closure(side)
        if has_call(exprs, "tl.load") or names & skip:
            return False
    return True


def _masked_dot_tiles_in_k_loop(k):
    fl = flow_of(k)
    lines = []
    for dot in fl.named("tl.dot"):
        if not dot.loops or dot.loops[-1].kind not in ("range", "tl.range"):
            continue
        loop = dot.loops[-1]
        operands = set()
        for op in dot.node.args[:2]:
            operands |= fl.closure(op, within=loop)[0]
        for c in fl.loads():
            mask = c.arg(1, "mask")
            if mask is None or not loop.holds(c.line) or not (set(c.targets) & operands):
                continue
            # names the mask reads, following only definitions made inside the loop
            names, _ = fl.closure(mask, within=loop)
            redefined = {n for n in names if any(loop.holds(d.line) for d in fl.defs.get(n, ()))}
            if names & (loop.targets | redefined) and bounds_mask(fl, mask) and _static_limit(fl, k, mask):
                lines.append(c.line)
    return sorted(set(lines))


EVEN_FLAG_BRANCH = custom(
    "even-flag-branch", "a constexpr/heuristics flag `EVEN_*` / `NEED_*_MASK` tested by an `if`", _even_flags)
K_LOOP_MASKED_DOT_TILES = custom(
    "k-loop-masked-dot-tiles",
    "masked tile loads feeding a `tl.dot` in a `range` loop, the bounds mask moving with the loop index"
    " against a per-launch limit",
    _masked_dot_tiles_in_k_loop)

SKELETON = Skeleton(
    id="even-k-mask-elimination",
    title="EVEN_K: drop loop masks when the extent divides the block",
    summary="Constexpr EVEN_K (K % BLOCK_K == 0) flag selecting unmasked tile loads in the K loop.",
    category=Category.MEMORY,
    doc=__doc__,
    present=EVEN_FLAG_BRANCH,
    preconditions=[K_LOOP_MASKED_DOT_TILES],
    env=Env(),
    helps=("memory", "latency"),
    before='''
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :],
                    mask=(k0 + rk)[None, :] < K, other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * stride_bk + rn[None, :],
                    mask=(k0 + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
''',
    after='''
@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BK"] == 0})
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, EVEN_K: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a_ptrs = a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :]
        b_ptrs = b_ptr + (k0 + rk)[:, None] * stride_bk + rn[None, :]
        if EVEN_K:  # K % BK == 0: every K tile is full
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            a = tl.load(a_ptrs, mask=(k0 + rk)[None, :] < K, other=0.0)
            b = tl.load(b_ptrs, mask=(k0 + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
''',
)
