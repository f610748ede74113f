"""Quantise new K/V rows inside the KV-cache write kernel: scale computed in registers, 8-bit stored to the slot.

## What it does
A serving engine with an 8-bit KV cache (int8 or fp8, one scale per token and head) writes
each step's new key/value rows into their cache slots. The unfused form quantises on the
host first — `k_q, k_s = quant_int8(k)` (a kernel of its own that writes the 8-bit rows
and their scales to temporaries) — and then launches the scatter kernel that copies the
temporaries into the slots `slot_mapping[t]` / `block_offsets[b]` point at; or it scatters
bf16 rows into a staging cache and quantises that after the launch. The fused form does
both in the write kernel, per token and head, on values already in registers:

    slot = tl.load(slot_mapping + t)
    k = tl.load(k_ptr + t * stride_t + offs_hd).to(tl.float32)        # [H, D]
    scale = tl.maximum(tl.max(tl.abs(k), 1), 1e-8) / FP8_MAX           # one per head
    tl.store(k_cache + slot * stride_s + offs_hd, (k / scale[:, None]).to(k_cache.dtype.element_ty))
    tl.store(k_scale_cache + slot * H + offs_h, scale)

(asymmetric int8/int4 takes `tl.min`/`tl.max` for a scale and a zero point and packs two
int4 values a byte, as lmdeploy's `_fill_kv_cache_quant_kernel` does).

## Why it is faster
The cache write is pure data movement. Per element, the host-quantised form reads bf16
(2 bytes) and writes an 8-bit temporary (1), then the scatter reads it back (1) and writes
the slot (1): 5 bytes and two launches where the fused kernel moves 3 bytes in one. A
staging cache quantised afterwards is worse (a bf16 write and read in between). At
prefill (thousands of tokens × heads × 128) the bytes decide; at decode (a few hundred
tokens, well under a megabyte) the write is launch-bound and the saved launch is the gain.
The reduction is over one head's 64–256 values, a register reduction inside one program.

## Applies when
- the kernel scatters rows into a KV cache: a `tl.store` into a pointer named like a cache
  (`k_cache`, `KCaches`, `kv_buffer`) at an address computed from an index loaded from a
  slot or block table (`slot_mapping`, `block_offsets`, `out_cache_loc`, `block_table`);
- the function that launches it, in the same file, quantises around the launch: a call
  named `*quant*` (not `dequant`), or the launch of a kernel so named, before it (the rows
  arrive already 8-bit) or after it (the cache is quantised in a second pass);
- the kernel computes no scale from the values it stores (no `tl.max(tl.abs(x))`, no
  min/max pair).

## Does not apply when
- the cache stays bf16/fp16 and nothing quantises it: an 8-bit cache is a change of the
  model's numerics and memory plan, not a rewrite of this kernel;
- a static, calibrated scale (`tl.load(k_scale)` from a bare pointer, vLLM's `k_scale` /
  `v_scale`) divides the rows as they are written: quantisation is already fused and
  there is no scale to compute;
- the kernel already reduces the rows it stores into a scale (fused already);
- the launch is one branch of a choice by quantisation mode (`if quant_policy == 0:` the
  bf16 write, `else:` a quantising write kernel): the quantiser is the alternative, not a
  second pass (lmdeploy's `fill_kv_cache`);
- the kernel reads the 8-bit cache (attention dequantising K/V tiles): nothing is written;
- a per-token quantiser with no cache scatter (its scales loaded from a separate absmax
  pass): that is `fp8-group-quant`.
Keep the scale's eps (an all-zero head gives scale 0 and NaNs), and store the scales at
the same slot index as the rows so the attention kernel finds them with one table lookup.

## References
Promoted from the candidate clusters "message: quantization" (`skel skeletons candidates`:
5 repositories, 7 commits) and "+ pragma unroll" (3 repositories); the KV-cache instances:
- lmdeploy `src/turbomind/kernels/attention/attention_universal.h` (`attention_kernel`: the TurboMind attention
  kernel quantises the new K/V of the step to 8/4 bits with per-head scales as it writes them into the block
  cache) — at `e5aaca541f`, 2024-04-11, "Online 8/4-bit KV-cache quantization (#1377)"
- aiter `csrc/kernels/cache_kernels.cu` (`reshape_and_cache_with_per_token_quant_kernel`: reshape-and-cache computes
  each token-head's absmax in the kernel and writes int8/fp8 rows with their per-token scale to the slot) — at
  `d2df884548`, 2025-01-06, "add int8/fp8 kvcache (#40)"
- flashinfer `include/flashinfer/attention/hopper/quantization/prefill_sm90.cuh` (`FP8PrefillWithKVCacheKernel`:
  the consumer side, FA3 prefill reading an fp8 KV cache with per-head scales) — at `116d97d7fc`, 2025-04-29,
  "feat: add functional per-head FP8 quantization for FA3 (#1033)"
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import args_of, call_name, calls_in, flow_of
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.dots import no_dot
from skel.skeletons.predicates.host import calls_after_launch, calls_before_launch, launch_lines, own_launches
from skel.skeletons.predicates.pointers import pointer_bases

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

#: a KV cache or pool the write kernel scatters into
_CACHE = re.compile(r"(?i)cache|kv_?buf\w*|k_?buf\w*|v_?buf\w*|key_buffer|value_buffer|kv_pool|kv_data")
#: a table of cache locations: slot mapping, block/page table, the engine's `out_cache_loc`
_SLOT_TABLE = re.compile(r"(?i)slot|(?<![a-z])locs?(?![a-z])|block_?(table|offset|id|idx|ind)|page_?(table|id|idx|ind)|"
                         r"req_to_token|kv_ind|dest_?(idx|index|loc)")
#: a host quantiser (not a dequantiser): `quant_int8`, `per_token_quant_fp8`, `ops.scaled_fp8_quant`
_HOST_QUANT = re.compile(r"(?i)(?<!de)(?<!de_)quant\w*$")
#: a quantising jit kernel's name (`_per_token_quant_fp8_kernel`, `quant_kernel`), not a dequantiser's
_QUANT_KERNEL = re.compile(r"(?i)^\w*(?<!de)(?<!de_)quant\w*_kernel$")
#: a test of the quantisation mode in a launch's guards (`quant_policy == 0`, `kv_cache_dtype == "fp8"`)
_QUANT_MODE = re.compile(r"(?i)quant|fp8|int8|int4|kv_?\w*dtype|cache_?dtype")
#: reductions that make a scale (absmax, or the min/max pair of an asymmetric scale)
_REDUCE = ("tl.max", "tl.min", "tl.maximum", "tl.minimum")


def _cache_scatter_stores(k: KernelFacts) -> list[int]:
    """Lines of `tl.store`s into a cache pointer whose address reads an index loaded from a
    slot or block table (`slot = tl.load(slot_mapping + t)`, then `k_cache + slot * stride`)."""
    fl = flow_of(k)
    if not fl.ok:
        return []
    lines = []
    for c in fl.named("tl.store"):
        addr = c.arg(0, "pointer")
        if addr is None or not any(_CACHE.search(b) for b in pointer_bases(fl.text(addr), k, c.line)):
            continue
        for e in fl.closure(addr)[1]:
            if any(call_name(x) == "tl.load" and args_of(x) and _SLOT_TABLE.search(fl.text(args_of(x)[0]))
                   for x in calls_in(e)):
                lines.append(c.line)
                break
    return lines


def _quant_launch_beside(k: KernelFacts) -> bool:
    """The launching function also launches a quantising kernel (`_per_token_quant_kernel[grid](...)`)
    beside this one: a launch is not among a function's recorded calls, but the kernel's name
    is among the names it reads."""
    return any(n != k.name and _QUANT_KERNEL.match(n) for ln in own_launches(k) for n in ln.host_names)


def _chosen_by_quant_mode(k: KernelFacts) -> bool:
    """A launch of the kernel sits under a test of the quantisation mode (`if quant_policy ==
    0:`, `if kv_cache_dtype == "auto":`): the quantiser named in the same function is the
    other branch's kernel, an alternative to this one, not a pass beside it."""
    return any(_QUANT_MODE.search(g) for ln in own_launches(k) for g in ln.guards)


def _host_quant_around(k: KernelFacts) -> list[int]:
    """The launching function quantises before the launch (rows arrive 8-bit) or after it
    (the cache is quantised in a second pass): a host call or another kernel's launch."""
    if _chosen_by_quant_mode(k):
        return []
    if calls_before_launch(k, _HOST_QUANT) or calls_after_launch(k, _HOST_QUANT) or _quant_launch_beside(k):
        return launch_lines(k)
    return []


def _scale_from_values(k: KernelFacts) -> list[int]:
    """A scale reduced from loaded values: `tl.max(tl.abs(x))`, or `tl.max` and `tl.min` of
    the same values (an asymmetric scale and zero point), in the kernel or a jit helper it calls."""
    abs_names = {t for a in k.assigns if "tl.abs" in a.calls for t in a.targets}
    lines: list[int] = []
    maxes: list[Call] = []
    mins: list[Call] = []
    for c in k.calls:
        if c.name not in _REDUCE:
            continue
        if any("tl.abs(" in a or a.strip() in abs_names for a in c.args):
            lines.append(c.line)
        (maxes if c.name in ("tl.max", "tl.maximum") else mins).append(c)
    if not lines and any(c.name == "tl.max" for c in maxes) and any(c.name == "tl.min" for c in mins):
        lines = [c.line for c in maxes + mins if c.name in ("tl.max", "tl.min")]
    return lines


CACHE_SCATTER = custom(
    "kv-cache-scatter-store",
    "a store into a KV cache at a slot or block index loaded from a table (`k_cache + slot * stride`)",
    _cache_scatter_stores)
HOST_QUANT_AROUND = custom(
    "host-quant-around-cache-write",
    "the launcher quantises around the launch (`*_quant(k)` before it, or the cache after it)",
    _host_quant_around)
SCALE_IN_KERNEL = custom(
    "scale-from-stored-values",
    "a scale reduced in the kernel from the values it stores (`tl.max(tl.abs(k))`, or a `tl.min`/`tl.max` pair)",
    _scale_from_values)

SKELETON = Skeleton(
    id="fused-kv-cache-write-quant",
    title="Quantise K/V in the KV-cache write kernel (in-kernel per-head scales, 8-bit slots)",
    summary="Compute per-token/head scales and store int8/fp8 K/V in the cache-write kernel, not in a separate pass.",
    category=Category.FUSION,
    doc=__doc__,
    ruled_out_by=(r"\bkv[\s_-]?cache\b.*\bquant\w*", r"\bquant\w*.*\bkv[\s_-]?cache\b"),
    present=SCALE_IN_KERNEL & CACHE_SCATTER,
    preconditions=[CACHE_SCATTER, HOST_QUANT_AROUND, no_dot("a cache write, not attention")],
    subject=CACHE_SCATTER,
    env=Env(),
    helps=("memory", "latency"),
)
