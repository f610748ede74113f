"""Rotary embedding with cos/sin of position x inv_freq computed in registers, not gathered from a cache.

## What it does
A RoPE kernel that gathers, for each token, its row of a precomputed cos/sin table
(`cos_sin_cache[pos]`, or `cos[pos]` and `sin[pos]`, `max_pos x rotary_dim` values built at
model load) and rotates the token's heads with it, computes the row instead: it loads the
`[rotary_dim / 2]` inverse frequencies once a program (or derives them from the base) and
takes `cos`/`sin` of the angle in fp32:

    pos = tl.load(pos_ptr + t, mask=t < T, other=0)
    ang = pos.to(tl.float32)[:, None] * tl.load(inv_freq_ptr + d)[None, :]
    c, s = tl.cos(ang), tl.sin(ang)
    ... x1 * c - x2 * s, x2 * c + x1 * s for every head of the token

## Why it is faster
RoPE is memory-bound: a token reads and writes `H x D` elements of `x` (its heads) and
reads `rotary_dim` cache values (a cos half and a sin half). With `rotary_dim = D` the cache
is `s_cache / (2 H s_x)` of the token's `x` bytes: 1/80 for a fused Q/K rope of 40 heads with
a cache in the model dtype (nothing to win), but as many bytes as `x` for one head with an
fp32 cache (MLA's shared 64-dim `k_pe`), and 1/8 for a K-only rope at 4 KV heads. The cache
row is also a gather behind the position load (pos, then the row), a second dependent
memory latency a decode-sized launch waits for. The angle costs one multiply and the
`cos`/`sin` a few dozen fp32 instructions per pair, once per token for all its heads,
hidden under the memory traffic (FlashInfer's RoPE kernels compute them so, and when it
split a token's heads over blocks for parallelism at small batches, each block recomputed
them rather than sharing a loaded row). It does not pay with many heads per token (the
cache is a few percent of the bytes), nor where the table is not a function of position and frequency alone (learned
tables, per-request rope scaling switching tables, M-RoPE's three position streams without
their section logic in the kernel). The angle must be the same fp32 product the table was
built from (`pos x inv_freq`), with the accurate `tl.cos`/`tl.sin`, not a fast
approximation whose error grows with the angle (positions run to 10^5 radians).

## Applies when
- a kernel loads the two halves of a rotary table, through a `cos`- and a `sin`-named
  pointer (or one `cos_sin_cache`), and stores values made from both and from another
  loaded tensor (`x1 * cos - x2 * sin`), computing no `tl.cos`/`tl.sin` itself;
- pays when the token has few heads: the cache, in the model dtype, is at least 1/8 of the
  token's `x` bytes (`1 / (2 H)`: `H ≤ 4` heads); it does not pay at 1/64 or less (`H ≥ 32`);
  between, and with the heads unknown, it is conditional (`--shape heads=H`, the heads
  rotated per token, Q and K together, however the programs split them: a table row read
  again by each program of a token comes from L2, its HBM bytes are once a token).

## Does not apply when
- the kernel computes `tl.cos`/`tl.sin` already (from positions, or from angles it loads);
- the cos/sin values are not a rotary table: a cosine similarity (`cos_sim`), a
  table-building kernel that stores cos/sin rather than rotating with them, a kernel that
  only copies cache rows out;
- many heads per token (a fused Q/K rope of an 8B model, 40 heads): the cache row is 1/80
  of the bytes and one gather per token.

## References
Promoted from the candidate clusters "- call __sincosf" and "fewer pragma unroll"
(`skel skeletons candidates`). The history went toward computing in the kernel; the cache
form came later for flexibility, with fp32 required for accuracy:
- flashinfer `include/flashinfer/decode.cuh` (`BatchDecodeWithPagedKVCacheKernel`: per-element `__sincosf(pos * freq)`
  replaced by an angle-addition recurrence on `sin_vec`/`cos_vec` with a `sin_delta`/`cos_delta` step) — at
  `b98563cbba`, 2023-10-15, "iterative-sincos"
- flashinfer `include/flashinfer/rope.cuh` (`BatchQKVApplyRotaryInPlaceKernel`: rope in its own kernel, `freq` from
  `rope_theta` per lane and `__sincosf(float(offset) * freq[i])` in registers; the recurrence in `decode.cuh` dropped)
  — at `5bcba4928c`, 2023-12-19, "batch qkv apply rotary in place"
- flashinfer `include/flashinfer/pos_enc.cuh` (`BatchQKApplyRotaryPosIdsKernel`: each (position, head) pair its own
  thread row, `cos`/`sin` recomputed per head from `pos_ids[pos_idx]` rather than shared across a head loop) — at
  `ff05155581`, 2024-11-14, "perf: improve parallelism in RoPE with pos_ids (#609)"
- flashinfer `include/flashinfer/pos_enc.cuh` (`BatchQKApplyRotaryPosIdsCosSinCacheKernel`: the cached form added "for
  flexibility", the message noting f16 caches gave "a large discrepancy" and requiring fp32 `cos_cache`/`sin_cache`)
  — at `83e541d8fa`, 2024-11-05, "feat: support cached cos/sin in rope APIs (#585)"
- lmdeploy `lmdeploy/pytorch/kernels/fused_rotary_emb.py` (`_fused_rotary_emb_kernel`, Triton: `position_ids *
  inv_freq` then `tl.cos`/`tl.sin` once a token block, shared by the `BLOCK_HQ` and `BLOCK_HK` head loops) — introduced
  by `456055f59a`, 2024-02-29, "Support gemma model in pytorch engine (#1184)"
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import CallInfo, Flow, flow_of, has_call
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.dots import no_dot

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload  # the floor re-exports the type (catalog modules import no kernels.workload)

#: the cache's share of a token's x bytes, 1 / (2 H) in the model dtype, at which computing pays (H = 4)
PAYS_AT = 1 / 8
#: at or under this share the cache is noise (H = 32 heads a token)
NOISE_AT = 1 / 64
#: a cos or a sin table pointer (`cos`, `Cos`, `cos_ptr`, `sin_cache`, `cos_sin_cache`), not `cos_sim`
_COS = re.compile(r"(?i)^(cos|cos_ptr|cos_cache|cos_cached|cos_table|cos_sin|cos_sin_cache|cos_sin_cache_ptr|cos_sin_ptr"
                  r"|\w+_cos(_ptr)?)$")
_SIN = re.compile(r"(?i)^(sin|sin_ptr|sin_cache|sin_cached|sin_table|\w+_sin(_ptr)?)$")
_BOTH = re.compile(r"(?i)^\w*cos_?sin\w*$")
#: the heads rotated per token (Q and K counted apart, summed)
_HEADS = re.compile(r"(?i)^(n_?q?_?heads?|n_?kv?_?heads?|num_(q_|kv_|k_|qo_)?heads|n_qh|n_kh|nheads|h|hq|hk|heads|"
                    r"num_heads_(q|k|kv)|BLOCK_H[QK]?)$")
#: trig calls that compute the table in the kernel
_TRIG = ("tl.cos", "tl.sin", "tl.math.cos", "tl.math.sin")


def _bases(fl: Flow, c: CallInfo) -> set[str]:
    addr = c.arg(0, "pointer")
    return set() if addr is None else fl.closure(addr)[0]


def _table_loads(k: KernelFacts, fl: Flow) -> tuple[list[CallInfo], list[CallInfo]]:
    """Loads from a cos-named and a sin-named table pointer (a combined `cos_sin_cache` is both)."""
    params = {p.name for p in k.params if not p.constexpr}
    cos = {p for p in params if _COS.match(p) or _BOTH.match(p)}
    sin = {p for p in params if _SIN.match(p) or _BOTH.match(p)}
    loads = fl.loads()
    return ([c for c in loads if _bases(fl, c) & cos], [c for c in loads if _bases(fl, c) & sin])


def gathered_rope_tables(k: KernelFacts) -> list[int] | None:
    """Lines of a RoPE that reads its cos/sin from a table: loads of a cos and a sin table
    whose values, with another loaded tensor, make a stored value, and no `tl.cos`/`tl.sin`."""
    fl = flow_of(k)
    if not fl.ok or any(c.name in _TRIG for c in fl.calls):
        return None
    cos, sin = _table_loads(k, fl)
    if not cos or not sin:
        return None
    table = {id(c.node) for c in cos + sin}
    cos_names = {t for c in cos for t in c.targets}
    sin_names = {t for c in sin for t in c.targets}
    data = {t for c in fl.loads() if id(c.node) not in table for t in c.targets}
    for s in fl.named("tl.store"):
        value = s.arg(1, "value")
        if value is None:
            continue
        names = fl.closure(value)[0]
        if names & cos_names and names & sin_names and names & data:
            return sorted({c.line for c in cos + sin} | {s.line})
    return None


def computed_rope(k: KernelFacts) -> list[int] | None:
    """Lines of `tl.cos`/`tl.sin` whose values rotate a loaded tensor that is stored: the
    store reads a trig result and a load that does not feed the angle (the data, not the
    frequencies or positions). A table builder stores cos/sin of loaded frequencies, and
    rotates nothing."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    trig = [c for c in fl.calls if c.name in _TRIG]
    if not trig:
        return None
    angle = set().union(*(fl.closure(c.node)[0] for c in trig))
    data = {t for c in fl.loads() for t in c.targets if t not in angle}
    for s in fl.named("tl.store"):
        value = s.arg(1, "value")
        if value is not None:
            names, exprs = fl.closure(value)
            if has_call(exprs, *_TRIG) and names & data:
                return sorted({c.line for c in trig} | {s.line})
    return None


#: the subject: a RoPE reading its cos/sin rows from a table
GATHERED_ROPE_TABLE = custom(
    "gathered-rope-table",
    "a rotary embedding that loads cos and sin rows from a table (`cos_sin_cache[pos]`) to rotate a loaded tensor",
    gathered_rope_tables)
#: the technique: cos/sin computed in the kernel
COMPUTED_ROPE = custom(
    "computed-rope-sincos",
    "a rotary embedding that computes `tl.cos`/`tl.sin` in the kernel to rotate a loaded tensor",
    computed_rope)


def _heads(k: KernelFacts, wl: Workload) -> tuple[int | None, str]:
    h = wl.size("heads")
    if h is not None:
        return h, f"heads={h}"
    found = [(p.name, wl.size(p.name)) for p in k.params if _HEADS.match(p.name)]
    known = [(n, v) for n, v in found if v is not None]
    if not known or len(known) < len(found):
        return None, ""
    return sum(v for _, v in known), " + ".join(f"{n}={v}" for n, v in known)


def cache_share_of_token(k: KernelFacts, wl: Workload) -> Payoff:
    """The table row's share of a token's `x` bytes, ``1 / (2 H)`` with the table in the model
    dtype (an fp32 table doubles it): ≥ 1/8 (H ≤ 4) pays, ≤ 1/64 (H ≥ 32) does not."""
    h, what = _heads(k, wl)
    if h is None or h <= 0:
        return Payoff(UNKNOWN, "pays if few heads are rotated per token (≤ 4, Q and K together): the cos/sin row "
                      "is then a large share of the token's bytes", "--shape heads=H")
    share = 1 / (2 * h)
    said = (f"{what} head(s) a token: its cos/sin row is {share:.3g} of the token's x bytes (1 / (2 H) in the model "
            "dtype, twice that for an fp32 table)")
    if share >= PAYS_AT:
        return Payoff(PAYS, f"{said}: computing it in registers removes that traffic and a dependent gather")
    if share <= NOISE_AT:
        return Payoff(DOES_NOT_PAY, f"{said}: noise beside the heads' traffic")
    return Payoff(UNKNOWN, f"{said}: between 1/64 and 1/8, pays with an fp32 table or a decode-sized launch; measure "
                  "it with `skel verify`")


SKELETON = Skeleton(
    id="rope-sincos-in-kernel",
    title="RoPE cos/sin computed in the kernel instead of gathered from a cache",
    summary="Compute cos/sin of position x inv_freq in fp32 registers instead of loading a cos/sin cache row per token.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bon[\s-]the[\s-]fly\b", r"\bcomput\w*\s+(the\s+)?(cos|sin)\b", r"\bsincos\b"),
    present=COMPUTED_ROPE,
    preconditions=[GATHERED_ROPE_TABLE, no_dot("an elementwise rotation, not a matmul")],
    subject=GATHERED_ROPE_TABLE,
    env=Env(),
    payoff=cache_share_of_token,
    helps=("memory", "latency"),
)
