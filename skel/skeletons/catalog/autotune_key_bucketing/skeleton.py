"""Key the autotuner on shape buckets, not on raw per-call lengths.

## What it does
Replaces a raw, per-call varying length in `@triton.autotune(key=[...])` — `T`,
`seq_len`, `M` (GEMM rows = tokens), `num_tokens`, `B` — by a coarse bucket the
launcher computes and passes as an extra argument: `T_BUCKET = triton.next_power_of_2(T)`,
`0 if T < 8192 else 1 if T < 32768 else 2`, or a `bucket_M`. The raw length stays a
plain runtime argument (ideally `do_not_specialize`, see that skeleton).

## Why it is faster
The autotuner re-runs its whole search — compile and benchmark every config — for each
new key tuple. With a raw sequence length in the key, every new prompt or packed-batch
length triggers a fresh search, so a variable-length workload spends its time tuning,
not computing. With a bucket the search runs once per bucket; neighbouring lengths
usually share a best config, and the bucket boundaries are where it may change.

## Applies when
- the kernel is autotuned and its `key` lists a length that changes from call to call:
  `T`, `NT`, `B`, `seq_len`/`seqlen`, `num_tokens`/`n_tokens`, `n_rows`, `batch_size`,
  `N_CTX`, or a runtime (non-constexpr) `M`;
- the workload really sees many distinct values (serving, varlen training, evaluation
  over documents of different lengths).

## Does not apply when
- the key already holds a bucket (`*_BUCKET`, `bucket_*`): the technique is in place;
- the best config changes sharply inside a bucket (very short vs long sequences): use
  finer buckets (power of two) rather than two or three ranges;
- the length is fixed in practice (fixed-shape training): the raw key costs one search;
- the length is constexpr *and* sizes a tile: removing it from the key does not stop the
  recompilation — fix that first (`do-not-specialize`).

## References
- flash-linear-attention `fla/modules/layernorm.py` (`layer_norm_fwd_kernel`: `key=['D', 'NB', ...]` with `NB = triton.cdiv(T, 2048)` passed by the launcher, the runtime `T` left out of the key) — at `49b00f0a94`, before 2025-07-01
- FBGEMM `fbgemm_gpu/experimental/gemm/triton_gemm/grouped_gemm.py` (`_fbgemm_grouped_gemm`: `key=["G", "M_BUCKET", "N", "K"]`, `M_BUCKET = min(triton.next_power_of_2(M), 16384)`)
- generative-recommenders `generative_recommenders/ops/triton/triton_hstu_attention.py` (`_hstu_attn_fwd`: keyed on `AUTOTUNE_Z = prev_power_of_2(Z)` and `AUTOTUNE_MAX_SEQ_LEN = autotune_max_seq_len(N)`)
- Triton tutorial `06-fused-attention.py` (`_attn_fwd`, key on `N_CTX`: the raw form)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.patterns import decorators
from skel.skeletons.predicates.names import VARYING_LENGTH

if TYPE_CHECKING:
    from skel.kernels.model import Decorator, KernelFacts

BUCKET_NAME = re.compile(r"(?i)\w*bucket\w*|\w*_(p2|pow2|np2|log2)")


def _key_names(d: Decorator) -> list[str]:
    """The argument names in the decorator's `key=[...]`."""
    return [x.strip("'\" ") for x in d.list_items]


#: a project's autotuner told to round its key values itself (GPTQModel's and AutoGPTQ's
#: `custom_autotune.autotune(..., nearest_power_of_two=True)`): bucketing, done in effect
ROUNDING_KWARG = re.compile(r"(?i)nearest_power_of_(two|2)|round_keys?|bucket\w*")


def _keys_bucket(d: Decorator, k: KernelFacts) -> bool:
    """The autotune `key` lists a shape bucket (`T_BUCKET`, `bucket_M`, `M_p2`), or the autotuner
    rounds the key itself (`nearest_power_of_two=True`)."""
    if any(ROUNDING_KWARG.fullmatch(n) and v.strip() not in ("False", "None", "0") for n, v in d.kwargs.items()):
        return True
    return any(BUCKET_NAME.fullmatch(n) for n in _key_names(d))


def _keys_raw_length(d: Decorator, k: KernelFacts) -> bool:
    """The autotune `key` lists a raw per-call length, or a runtime (non-constexpr) `M`."""
    for n in _key_names(d):
        p = k.param(n)
        if VARYING_LENGTH.fullmatch(n) or (n == "M" and p is not None and not p.constexpr):
            return True
    return False


BUCKETED_KEY = decorators("triton.autotune", where=_keys_bucket, name="autotune-key-bucket",
                          describe="an autotune `key` entry that is a shape bucket (`*_BUCKET`), or an autotuner that rounds its "
                          "keys itself (`nearest_power_of_two=True`)")
RAW_LENGTH_KEY = decorators("triton.autotune", where=_keys_raw_length, name="autotune-key-raw-length",
                            describe="an autotune `key` listing a raw per-call length (T, seq_len, M, num_tokens, B ...)")

SKELETON = Skeleton(
    id="autotune-key-bucketing",
    title="Bucketed autotune keys for variable lengths",
    summary="Key autotune on next_power_of_2/bucketed lengths, not raw T/M, so new lengths do not re-tune.",
    category=Category.TUNING,
    doc=__doc__,
    present=BUCKETED_KEY,
    preconditions=[RAW_LENGTH_KEY],
    subject=RAW_LENGTH_KEY,
    env=Env(),
    helps=("latency",),
)
