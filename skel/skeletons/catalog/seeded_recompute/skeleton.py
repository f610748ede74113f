"""Recompute large intermediates in backward (P from the lse, the dropout mask from a seed) instead of storing them.

## What it does
Some forward intermediates are large but cheap to rebuild from small saved values:

- attention probabilities `P = softmax(q k^T * scale)`: [T, T] per head. Forward saves only
  the per-row log-sum-exp `lse = m + log(l)` ([T] per head); backward recomputes each tile
  as `p = tl.exp(tl.dot(q, tl.trans(k)) * scale - lse[:, None])`;
- a dropout keep-mask: forward draws it with `tl.rand(seed, offsets)` and never stores it;
  backward calls `tl.rand(seed, offsets)` with the same seed and offsets and gets the same
  bits (Philox is counter-based), so `keep = r > p` is rebuilt in registers;
- chunk intermediates such as WY representations (`recompute_w_u` in FLA's delta rule).

The forward stops writing the tensor, the backward stops reading it and recomputes it from
what it already loads.

## Why it is faster
The stored tensor is written once and read once: for attention that is 2 x T^2 x heads x
bytes (at T = 8192 and 32 heads in bf16, 8.6 GB per layer — it usually does not fit at
all); for dropout a full-size mask. Recomputing costs one extra `tl.dot` per tile (or a
Philox call per element), which the tensor cores or ALUs absorb while the kernel waits on
memory; the memory saved also enables larger batches and longer sequences.

## Applies when
- a backward kernel loads a stored probability or dropout-mask tensor (`p_ptr`, `probs`,
  `attn_weights`, `dropout_mask`, `keep_mask`) that its forward wrote; or
- a forward kernel draws random numbers (`tl.rand`) and stores the resulting mask for the
  backward.

## Does not apply when
- the kernel already recomputes: a backward that loads an `lse` and applies
  `exp(qk - lse)`, or calls `tl.rand(seed, offsets)` itself;
- the intermediate is small (per-row statistics — saving them is the opposite technique,
  `save-row-statistics`) or expensive to rebuild relative to the memory it saves;
- the forward's randomness cannot be replayed (a generator state consumed elsewhere, or
  offsets that depend on a launch config the backward does not share).
Replay needs bit-identical inputs: the same seed, the same per-element offsets (index
them by global element, not by program, so a different block size in backward still
matches) and the same scale and lse definitions (natural log vs log2).

## References
- Triton tutorial `python/tutorials/04-low-memory-dropout.py` (`_seeded_dropout`)
- Triton tutorial `python/tutorials/06-fused-attention.py` (`_attn_bwd_dkdv`, `_attn_bwd_dq`: P from `M` = lse)
- flash-linear-attention `fla/ops/attn/parallel.py` (`parallel_attn_bwd_kernel_dkv`: `b_p = exp(b_s - b_lse)`; v0.2.2)
- flash-linear-attention `fla/ops/gated_delta_rule/wy_fast.py` (`recompute_w_u_fwd_kernel`; v0.2.2)
- Dao et al., "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness" (2022), section 3.1
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, custom
from skel.skeletons.patterns import calls_where
from skel.skeletons.predicates.pointers import pointer_arg, pointer_bases

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

_BACKWARD = re.compile(r"(?i)bwd|backward|grad")
_PROBS = re.compile(r"(?i)(\w*_)?(p|probs?|attn_?(probs|weights|scores)?|softmax_?(out|probs)?)(_ptr)?")
_MASK = re.compile(r"(?i)(\w*_)?(dropout_?mask|keep_?mask|drop_?mask|dmask|rand_?mask)(_ptr)?")
_LSE = re.compile(r"(?i)\w*(lse|logsumexp)\w*|L|M|LSE")
_RANDOM = ("tl.rand", "tl.randn", "tl.randint", "tl.randint4x", "tl.philox")


def _bases(k: KernelFacts, name: str) -> list[tuple[int, set[str]]]:
    return [(c.line, pointer_bases(pointer_arg(c), k, c.line)) for c in k.calls_named(name)]


def _loads_stored_intermediate(c: Call, k: KernelFacts) -> bool:
    """In a backward kernel, a load of a stored dropout mask, or of stored attention
    probabilities feeding a `tl.dot` (a plain softmax backward reading its own output is not
    one: that output is the op's result, not an intermediate)."""
    if not _BACKWARD.search(k.name):
        return False
    has_dot = bool(k.calls_named("tl.dot"))
    return any(_MASK.fullmatch(b) or (has_dot and _PROBS.fullmatch(b))
               for b in pointer_bases(pointer_arg(c), k, c.line))


def _random_mask_stores(k: KernelFacts) -> list[int]:
    """A kernel drawing random numbers and storing a mask built from them."""
    if not k.calls_named(*_RANDOM):
        return []
    return [line for line, bases in _bases(k, "tl.store") if any(_MASK.fullmatch(b) for b in bases)]


def _stores_random_mask(c: Call, k: KernelFacts) -> bool:
    """A store through a dropout-mask argument in a kernel that draws random numbers."""
    return bool(k.calls_named(*_RANDOM)) and any(_MASK.fullmatch(b) for b in pointer_bases(pointer_arg(c), k, c.line))


def _p_from_lse(k: KernelFacts) -> list[int]:
    """A backward that loads an lse and exponentiates scores against it: P recomputed (the
    lse loads and the exps, both or neither)."""
    if not _BACKWARD.search(k.name) or not k.calls_named("tl.dot"):
        return []
    lse_loads = [(line, bases) for line, bases in _bases(k, "tl.load") if any(_LSE.fullmatch(b) for b in bases)]
    exps = [c.line for c in k.calls if c.name in ("tl.exp", "tl.exp2", "exp", "exp2", "tl.math.exp2", "safe_exp")]
    return [line for line, _ in lse_loads] + exps if lse_loads and exps else []


def _no_mask_stored(c: Call, k: KernelFacts) -> bool:
    """`tl.rand(seed, offsets)` whose result is not stored as a mask: regenerated where needed."""
    return not _random_mask_stores(k)


STORED_INTERMEDIATE = calls_where(
    "tl.load", where=_loads_stored_intermediate, name="loads-stored-intermediate",
    describe="a backward loading a stored probability / dropout-mask tensor (`p_ptr`, `dropout_mask`)")
STORES_RANDOM_MASK = calls_where("tl.store", where=_stores_random_mask, name="stores-random-mask",
                                 describe="a random (`tl.rand`) dropout mask stored for the backward")
RECOMPUTES = custom(
    "p-from-lse", "P recomputed in backward from a loaded lse (`exp(qk - lse)`)", _p_from_lse) | calls_where(
    *_RANDOM, where=_no_mask_stored, name="seeded-random",
    describe="random bits regenerated from a seed (`tl.rand(seed, offsets)`), never stored") | calls(
    "tl.dot", where=lambda c, k: k.name.startswith("recompute"), name="recompute-kernel",
    describe="a `recompute_*` kernel")

#: the subject: what is stored only to be reloaded, and could be recomputed
RECOMPUTABLE = STORED_INTERMEDIATE | STORES_RANDOM_MASK

SKELETON = Skeleton(
    id="seeded-recompute",
    title="Recompute P / dropout masks in backward instead of storing them",
    summary="Recompute large intermediates in backward (P from lse, dropout mask from a seed) instead of storing them.",
    category=Category.FUSION,
    doc=__doc__,
    present=RECOMPUTES,
    preconditions=[RECOMPUTABLE],
    subject=RECOMPUTABLE,
    env=Env(),
    helps=("memory",),
)
