"""Fused MoE: sort the routed tokens by expert into BLOCK_M blocks so each program runs one expert's dense tile.

## What it does
A mixture-of-experts layer multiplies every (token, top-k slot) by the weights of the expert
it was routed to. Written per token, a program loads `e = topk_ids[t]` and runs a
vector-matrix product against `W[e]`; written per expert, a program scans all tokens and
masks the ones routed to it. The fused-MoE form adds a small alignment pass first:

    sorted_token_ids  # token-slot ids grouped by expert, each expert padded to a BLOCK_M multiple
    expert_ids        # one expert per BLOCK_M block
    num_tokens_post_padded

and one GEMM launch over `(num_blocks, cdiv(N, BLOCK_N))`: program `pid_m` loads
`e = tl.load(expert_ids + pid_m)`, gathers its BLOCK_M token rows through
`offs_token = tl.load(sorted_token_ids + pid_m * BLOCK_M + tl.arange(0, BLOCK_M))`
(`a + offs_token[:, None] // top_k * stride_am`) and runs `acc = tl.dot(a, w_e, acc)`.
Padding slots carry an id past the end and are masked.

## Why it is faster
Every program does a dense [BLOCK_M, BLOCK_N] tensor-core tile of one expert, and an
expert's weight tile is read once per BLOCK_M routed tokens instead of once per token:
per-token GEMV re-reads `W[e]` for each of the tokens routed to `e` (at 512 tokens and
top-2 over 8 experts, ~128 reads of every expert). One launch covers all experts, with no
host loop and no sync, and the grid is exactly the number of non-empty blocks — an
expert-major grid that scans every token (or sizes every expert for the worst case)
launches E times too many programs.

## Applies when
- the kernel multiplies tokens by expert weights selected by an expert index (`W + e *
  stride_we`, the index loaded from the routing `topk_ids` or taken from a grid axis over
  experts), with `tl.dot` or a `tl.sum(x * w)` vector-matrix product;
- the token rows are not already grouped: no sorted/permuted token index, no
  block-to-expert map.

## Does not apply when
- the kernel already reads sorted token blocks (`sorted_token_ids`, `expert_ids`,
  `num_tokens_post_padded`, lightllm's `mblocks_to_expert_id`, lmdeploy's
  `SortedIdx`/`ExpStart`, grouped GEMMs over `m_sizes`/`expert_offsets`/`seg_indptr`);
- elementwise per-expert work (SiLU-and-mul, quantisation of an expert's rows): there is
  no matmul to batch;
- single-token decode with top-k of a few experts: each expert gets one row, a BLOCK_M
  tile is mostly padding (a GEMV kernel or swap-AB is the better fit);
- dense (non-MoE) GEMMs.
The alignment pass (`moe_align_block_size`) costs a launch; for large token counts do it
on the GPU with counting and a prefix sum, never with a host sync. Expert weight offsets
`e * stride_we` pass 2**31 for big experts: compute them in int64.

## References
- vLLM `vllm/model_executor/layers/fused_moe/fused_moe.py` (`fused_moe_kernel`, `moe_align_block_size`)
- SGLang `kernels/ops/moe/fused_moe_triton_kernels.py` (`fused_moe_kernel`) and `kernels/ops/moe/moe_align.py`
- aiter `aiter/ops/triton/moe_op.py` (`_fused_moe_kernel`) and `aiter/ops/triton/moe_align_block_size.py` (commit 3703a6e300fce12ea1a683641ee50a31cb666a55, 2025-06-26)
- lightllm `lightllm/common/fused_moe/grouped_fused_moe.py` (`grouped_matmul_kernel`, `moe_align1_kernel`)
- lmdeploy `lmdeploy/pytorch/kernels/cuda/fused_moe.py` (`fused_moe_kernel`: expert grid over sorted tokens; v0.9.0)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import flow_of
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_targets, calls, custom, uses_name
from skel.skeletons.predicates.addresses import gathered_address, tile_load_2d

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

_EXPERT_NAME = re.compile(r"(?i)\w*experts?(_?(id|idx|index))?\w*|exp_?id\w*|e_?id\w*|e_?idx|i_e|eid")
_ROUTING_PTR = re.compile(r"(?i)\w*(topk|expert|router|routing)\w*")
_STRIDE = r"\w*stride\w*|\w*_per_expert\w*"


def _expert_indices(k: KernelFacts) -> set[str]:
    """Names holding an expert index: named as one, or a scalar loaded from routing data."""
    names = {n for n in k.names if _EXPERT_NAME.fullmatch(n)}
    for a in k.assigns:
        if "tl.load" in a.calls and "tl.arange" not in a.calls and _ROUTING_PTR.search(a.value):
            names.update(assign_targets(a))
    return names


def _expert_weight_offsets(k: KernelFacts) -> list[int]:
    """`W + e * stride_we` (or `stride * e`, `e.to(tl.int64) * stride`): weights chosen by expert."""
    experts = _expert_indices(k)
    if not experts:
        return []
    alt = "|".join(re.escape(e) for e in sorted(experts))
    rx = re.compile(rf"\b({alt})\b(\.to\([^)]*\))?\s*\*\s*({_STRIDE})\b|\b({_STRIDE})\s*\*\s*\(?\b({alt})\b")
    texts = [(a.line, a.value) for a in k.assigns] + [(c.line, x) for c in k.calls_named("tl.load")
                                                      for x in c.args[:1]]
    return [line for line, text in texts if rx.search(text)]


def _gathered_token_rows(k: KernelFacts) -> list[int]:
    """2-D tiles whose row offsets come from a loaded index vector, in a `tl.dot` kernel:
    `offs_token = tl.load(sorted_token_ids + ... + tl.arange(0, BLOCK_M))`, then
    `a + offs_token[:, None] // top_k * stride_am` (the rows are already grouped)."""
    if not k.calls_named("tl.dot"):
        return []
    fl = flow_of(k)
    if not fl.ok:
        return []
    lines = []
    for c in fl.loads():
        addr = c.arg(0, "pointer")
        if addr is not None and tile_load_2d(fl, c) and gathered_address(fl, addr):
            lines.append(c.line)
    return lines


def _sum_of_products(c: Call, k: KernelFacts) -> bool:
    """`tl.sum(x[:, None] * w)`: a matmul written as a broadcast product and a sum."""
    return bool(c.args) and "*" in c.args[0] and "None" in c.args[0]


SORTED_BLOCK_NAMES = uses_name(
    r"(?i)sorted_?(token_?)?(ids?|idx|indices)\w*|expert_ids\w*|num_tokens_post_pad\w*|mblocks_to_expert\w*"
    r"|block_expert\w*|expert_?offsets?|m_sizes|m_indices|exp_?start\w*|expert_start\w*"
    r"|seg_indptr|m_num_tiles\w*|\w*_to_expert(_ids?)?",
    name="sorted-token-blocks", describe="tokens grouped by expert (`sorted_token_ids`, `expert_ids`, `m_sizes`)")
EXPERT_WEIGHTS = custom("expert-weight-offset", "weights selected by an expert index (`W + e * stride_we`)",
                        _expert_weight_offsets)
GATHERED_EXPERT_TILE = custom("gathered-token-rows", "token rows gathered through a loaded index vector into a"
                              " `tl.dot` tile", _gathered_token_rows) & EXPERT_WEIGHTS
MATMUL_WORK = calls("tl.dot", name="matmul-work", describe="matmul work (`tl.dot` or `tl.sum(x * w)`)") | calls(
    "tl.sum", where=_sum_of_products,
    name="matmul-work", describe="matmul work (`tl.dot` or `tl.sum(x * w)`)")

SKELETON = Skeleton(
    id="moe-sorted-token-blocks",
    title="Fused MoE over expert-sorted token blocks",
    summary="Fused MoE: align tokens by expert into BLOCK_M blocks (sorted_token_ids, expert_ids): one dense tile each.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=SORTED_BLOCK_NAMES | GATHERED_EXPERT_TILE,
    preconditions=[EXPERT_WEIGHTS, MATMUL_WORK],
    subject=EXPERT_WEIGHTS,
    env=Env(),
    helps=("memory", "compute"),
)
