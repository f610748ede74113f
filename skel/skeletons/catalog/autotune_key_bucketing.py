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

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.autotune import autotune_key_names
from skel.skeletons.predicates.names import VARYING_LENGTH

BUCKET_NAME = re.compile(r"(?i)\w*bucket\w*|\w*_(p2|pow2|np2|log2)")


def _key_line(k) -> int:
    d = k.decorator("triton.autotune")
    return d.line if d else k.line_start


def _bucket_keys(k):
    found = [n for n in autotune_key_names(k) if BUCKET_NAME.fullmatch(n)]
    return [_key_line(k)] if found else None


def _raw_length_keys(k):
    found = []
    for n in autotune_key_names(k):
        p = k.param(n)
        if VARYING_LENGTH.fullmatch(n) or (n == "M" and p is not None and not p.constexpr):
            found.append(n)
    return [_key_line(k)] if found else None


BUCKETED_KEY = custom("autotune-key-bucket", "an autotune `key` entry that is a shape bucket (`*_BUCKET`)",
                      _bucket_keys, signature=True)
RAW_LENGTH_KEY = custom("autotune-key-raw-length",
                        "an autotune `key` listing a raw per-call length (T, seq_len, M, num_tokens, B ...)",
                        _raw_length_keys, signature=True)

SKELETON = Skeleton(
    id="autotune-key-bucketing",
    title="Bucketed autotune keys for variable lengths",
    summary="Key autotune on next_power_of_2/bucketed lengths, not raw T/M, so new lengths do not re-tune.",
    category=Category.TUNING,
    doc=__doc__,
    present=BUCKETED_KEY,
    preconditions=[RAW_LENGTH_KEY],
    env=Env(),
    helps=("latency",),
)
