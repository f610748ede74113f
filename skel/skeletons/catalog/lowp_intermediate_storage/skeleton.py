"""Store intermediates and outputs in bf16/fp16; keep fp32 only in registers.

## What it does
A kernel that computes in fp32 (a `tl.dot` accumulator, upcast inputs) and writes a large
tile to a buffer the host allocated as fp32 (`torch.empty(..., dtype=torch.float32)`,
`q.new_empty(..., dtype=torch.float)`) — an intra-chunk attention matrix, a hidden state
read by the next kernel, an output — writes it in the inputs' 16-bit dtype instead: the
host allocates the buffer with the input dtype and the store casts
(`tl.store(p, b_A.to(q.dtype.element_ty))`). The consumer loads 16-bit data and upcasts
in registers where it needs fp32.

## Why it is faster
Such kernels are usually memory-bound, and the fp32 tile costs twice the bytes of a
16-bit one on the store and again on every load by the next kernel; the activation kept
for backward also halves. For a `[B, T, H, BT]` chunk matrix next to `[B, T, H, D]`
16-bit inputs, that tile is a third or more of the traffic. Values are rounded once to a
16-bit format whose 8-bit (bf16) or 10-bit (fp16) mantissa is what the consumer's
`tl.dot` would round them to anyway when it feeds them to 16-bit tensor cores.

## Applies when
- a `tl.store` writes a 2-D fp32 tile (an accumulator or fp32 arithmetic) uncast or
  explicitly `.to(tl.float32)` (a store cast to `p.dtype.element_ty` leaves the choice to
  the host and is not counted);
- the launching host function in the same file allocates an fp32 buffer
  (`dtype=torch.float32` / `torch.float`; static facts do not tie it to the argument, so
  check that the buffer stored is the fp32 one);
- the kernel does not accumulate into that buffer (no load of it before the store, no
  atomics).

## Does not apply when
- the stored values are statistics or carried state whose error compounds: log-sum-exp,
  `rstd`/mean, running maxima, a recurrent state `h` carried across chunks, cumulative
  gate sums (`g_cumsum` differences of large, nearly equal numbers lose all precision);
- the buffer is accumulated into (`tl.atomic_add`, load-add-store split-K partials,
  gradient partials summed later): fp32 accumulation is the point;
- the inputs are fp32 (an fp32 model, or a numerically fragile op such as a triangular
  solve whose inverse feeds many products): keep fp32 end to end;
- the consumer needs more than 16-bit precision from the value (it is subtracted from a
  similar value, exponentiated with a large scale).

## References
- flash-linear-attention `fla/ops/gla/chunk.py` (`chunk_gla_fwd_intra_gk`: the intra-chunk `A` allocated with — at `49b00f0a94`, before 2025-07-01
  `dtype=torch.float`, v0.2.2)
- flash-linear-attention `fla/ops/common/chunk_scaled_dot_kkt.py` (`chunk_scaled_dot_kkt_fwd`: `output_dtype` — at `49b00f0a94`, before 2025-07-01
  parameter choosing the storage dtype of `A`, v0.2.2)
- Triton tutorial `03-matrix-multiplication.py` (`matmul_kernel`: fp32 accumulator, fp16 `c` stored)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.patterns import calls_where, launches
from skel.skeletons.predicates.pointers import atomic_lines, pointer_arg, pointer_bases
from skel.skeletons.predicates.tiles import BROADCAST_2D

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts, Launch

#: Per-row statistics and carried state: fp32 on purpose.
_STAT_NAME = re.compile(
    r"(?i)(\w*_)?(lse|logsumexp|rstd|rsigma|mean|mu|var|m|l|m_i|l_i|max|sum|stats?|norm|scale|scales|amax|"
    r"cumsum|gc|g_cumsum|g|gk|gv|ht|h0|state|final_state|loss|count|counts|cnt|lock|locks)(_ptrs?|_p)?")
_LOWP = re.compile(r"\.to\(\s*tl\.(bfloat16|float16|float8\w*)|tl\.(bfloat16|float16)\b")


def _fp32_names(k: KernelFacts) -> set[str]:
    """Names holding fp32 tiles: `tl.dot` results, `tl.zeros(..., dtype=tl.float32)`
    accumulators, `.to(tl.float32)` values, and arithmetic on them."""
    names: set[str] = set()
    for _ in range(3):
        for a in k.assigns:
            if len(a.targets) != 1:
                continue
            v = a.value
            if _LOWP.search(v) or re.search(r"\.to\(\s*\w+\.dtype", v):
                continue
            if "tl.dot" in a.calls or "tl.float32" in v or (set(a.names) & names and ".to(" not in v):
                names.add(a.targets[0])
    return names


def _stored_tile(c: Call, k: KernelFacts) -> set[str] | None:
    """The pointer bases of a 2-D tile store whose pointer is not a statistic (None for any
    other store)."""
    ptr_defs = {a.targets[0]: a.value for a in k.assigns if len(a.targets) == 1}
    ptr = pointer_arg(c)
    text = ptr + " " + ptr_defs.get(ptr.strip(), "")
    two_d = bool(BROADCAST_2D.search(text)) or ("tl.make_block_ptr" in text and re.search(
        r"make_block_ptr\([^,]+,\s*\([^()]*,[^()]*\)", text) is not None)
    bases = pointer_bases(ptr, k, c.line)
    if not two_d or not bases or any(_STAT_NAME.fullmatch(b) for b in bases):
        return None
    return bases


def _value_arg(c: Call) -> str:
    return c.args[1] if len(c.args) > 1 else c.kwargs.get("value", "")


def _fp32_tile_store(c: Call, k: KernelFacts) -> bool:
    """A 2-D fp32 tile stored as is, into a buffer it does not accumulate into, in a kernel
    with no atomics."""
    bases = _stored_tile(c, k)
    if bases is None or atomic_lines(k):
        return False
    loaded = {b for x in k.calls_named("tl.load") for b in pointer_bases(pointer_arg(x), k, x.line)}
    if bases & loaded:
        return False  # load-add-store: an accumulator buffer
    v = _value_arg(c).strip()
    head = re.match(r"\(?\s*(\w+)", v)
    if _LOWP.search(v) or (".to(" in v and not re.search(r"\.to\(\s*tl\.float32\s*\)\s*$", v)):
        return False  # cast on the way out: the buffer's (or another input's) dtype decides
    return bool(head and (head.group(1) in _fp32_names(k) or "tl.float32" in v or "tl.dot" in v))


def _host_fp32_buffer(ln: Launch, k: KernelFacts) -> bool:
    return bool({"float32", "float"} & set(ln.host_names)) or any(x.endswith(".float") for x in ln.calls_before)


def _lowp_store(c: Call, k: KernelFacts) -> bool:
    """A tile stored cast to a 16-bit type, or to another input's element type."""
    bases = _stored_tile(c, k)
    if bases is None:
        return False
    v = _value_arg(c)
    own_cast = re.search(r"\.to\(\s*(\w+)\.dtype\.element_ty\s*\)\s*$", v.strip())
    return bool(_LOWP.search(v) or (own_cast and own_cast.group(1) not in bases
                                    and not own_cast.group(1).startswith("p_") and k.param(own_cast.group(1))))


FP32_TILE_STORE = calls_where(
    "tl.store", where=_fp32_tile_store, name="fp32-tile-store",
    describe="a 2-D fp32 tile (accumulator or fp32 arithmetic) stored without a 16-bit cast, not accumulated into")
HOST_FP32_BUFFER = launches(
    own=True, where=_host_fp32_buffer, name="host-fp32-buffer",
    describe="the launching function allocates an fp32 buffer (`dtype=torch.float32`)")
LOWP_STORE = calls_where(
    "tl.store", where=_lowp_store, name="lowp-store",
    describe="a tile stored cast to bf16/fp16 or to an input's element type (`.to(q.dtype.element_ty)`)")

SKELETON = Skeleton(
    id="lowp-intermediate-storage",
    title="16-bit storage for intermediates and outputs",
    summary="Store intermediates/outputs in bf16/fp16 (fp32 only in registers) to halve their HBM traffic.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=LOWP_STORE & ~FP32_TILE_STORE,
    preconditions=[FP32_TILE_STORE, HOST_FP32_BUFFER],
    subject=FP32_TILE_STORE,
    env=Env(),
    helps=("memory",),
)
