"""Swap A and B for small M: compute C^T = B^T A^T so the large N fills the MMA's M slot.

## What it does
A GEMM `C[M, N] = A[M, K] @ B[K, N]` at decode time has a tiny M (1–32 tokens, or the few
tokens routed to one MoE expert) and a large N (the hidden or intermediate size). The
kernel still tiles M with `BLOCK_M = 16` — the smallest MMA tile — so most rows of every
MMA are padding. Swap-AB computes the transposed tile instead:

    b_t = tl.load(b_ptr + rn[:, None] * stride_bn + rk[None, :] * stride_bk)  # [BLOCK_N, BLOCK_K]
    a_t = tl.load(a_ptr + rk[:, None] * stride_ak + rm[None, :] * stride_am)  # [BLOCK_K, BLOCK_M]
    acc = tl.dot(b_t, a_t, acc)                                              # [BLOCK_N, BLOCK_M]
    tl.store(c_ptr + rm[None, :] * stride_cm + rn[:, None] * stride_cn, acc)   # C^T tile, stored back as C

Now the 64–128 rows of the MMA are output features and the tokens sit in the MMA's N
dimension, which may be as small as 8 or 16.

## Why it is faster
Hopper's wgmma instruction needs M = 64 per warp group; with BLOCK_M = 16 Triton falls back
to the older mma.sync path (or pads), so a decode GEMM runs at a fraction of tensor-core
rate and issues 4x the instructions per useful output. With the swap, the tile is
[128 features x 16 tokens]: full wgmma rows, and each program still reads each B tile once.
SGLang enables it for fused-MoE decode (`should_enable_swap_ab`), DeepGEMM has swap-AB
epilogues for the same reason.

## Applies when
- a GEMM kernel (`tl.dot` over a K loop) whose M tile is set small for small batches
  (`BLOCK_SIZE_M: 16` in its configs or launch, `BLOCK_M = max(16, next_power_of_2(M))`),
  or a fused-MoE kernel over expert token blocks, where decode leaves few tokens per expert;
- N is large (hundreds or more) so a 64–128 tile fills it;
- sm_90+ (wgmma's M = 64 minimum); on sm_80 mma.sync's M = 16 makes the gain small.

## Does not apply when
- the K loop runs over a LoRA rank (sglang's LoRA expand/shrink kernels: `K = min(K, rank)`):
  one to four tiny dots next to the weight loads and the output's read-modify-write, so
  filling the MMA's M slot changes nothing measurable;
- M is large (prefill, big batches): the normal orientation already fills the MMA, and the
  transposed store is uncoalesced;
- the kernel already swaps (`SWAP_AB`, `should_enable_swap_ab`), or is a GEMV without
  `tl.dot` (no MMA to fill);
- both M and N are small: nothing fills the MMA either way.
Keep both paths and choose on the host (`M <= 64 and N >= 1024`, per arch); the store of
the C^T tile writes C with stride-N gaps: fine for small M, costly for large.

## References
- SGLang `kernels/ops/moe/fused_moe_triton_kernels.py` (`should_enable_swap_ab`, `invoke_fused_moe_kernel`, `SWAP_AB`)
- lightllm `lightllm/common/fused_moe/grouped_fused_moe.py` (`grouped_matmul_kernel`: the fp8 path's `tl.zeros((BLOCK_SIZE_N, BLOCK_SIZE_M))` C^T tile)
- DeepGEMM `deep_gemm/include/deep_gemm/epilogue/sm100_store_cd_swap_ab.cuh` (the CUDA analogue)
- NVIDIA PTX ISA, `wgmma.mma_async` shapes (M = 64 per warp group)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom, uses_name
from skel.skeletons.patterns import assigns, decorators, launches
from skel.skeletons.predicates.autotune import autotune_text
from skel.skeletons.predicates.dots import GEMM_LOOP
from skel.skeletons.predicates.loops import RANK_LOOPS

if TYPE_CHECKING:
    from skel.kernels.model import Decorator, KernelFacts, Launch

_M_TILE = r"BLOCK(_SIZE)?_M"
_SMALL_M_CONFIG = re.compile(r"""['"]""" + _M_TILE + r"""['"]\s*:\s*(1|2|4|8|16)\b""")
_SMALL_M_LAUNCH = re.compile(r"^\s*(1|2|4|8|16)\s*$|next_power_of_2\(\s*\w*[Mm]\w*\s*\)|\bmin\(|\bmax\(\s*16")
_MOE_BLOCKS = re.compile(r"(?i)sorted_?(token_?)?(ids?|idx|indices)\w*|expert_ids\w*|num_tokens_post_pad\w*")


def _small_m_configs(d: Decorator, k: KernelFacts) -> bool:
    """Autotune configs with `BLOCK_SIZE_M: 16` (read in the decorator's text)."""
    return bool(_SMALL_M_CONFIG.search(autotune_text(k)))


def _small_m_tile(ln: Launch, k: KernelFacts) -> bool:
    """A launch passing `BLOCK_M=16` / `BLOCK_M=max(16, next_power_of_2(M))`."""
    return any(re.fullmatch(_M_TILE, kw) and _SMALL_M_LAUNCH.search(value) for kw, value in ln.kwargs.items())


def _moe_token_blocks(k: KernelFacts) -> list[int]:
    """A fused-MoE kernel over expert token blocks: at decode each block holds a few tokens
    (names, about the signature: ``names_where`` points at the body)."""
    return [line for name, line in k.names.items() if _MOE_BLOCKS.fullmatch(name)]


#: `acc = tl.zeros((BLOCK_N, BLOCK_M))`: the tile is C^T, features first
_CT_ACC = re.compile(r"tl\.zeros\(\s*[(\[]\s*BLOCK(_SIZE)?_N\w*\s*,\s*BLOCK(_SIZE)?_M\w*\s*[)\]]")

SWAPPED = uses_name(r"(?i)swap_?ab\w*|should_enable_swap_ab|\w*_swap_ab\w*", name="swap-ab",
                    describe="a swap-AB path (`SWAP_AB`, `should_enable_swap_ab`)") | assigns(
    value=_CT_ACC, name="transposed-accumulator", describe="a C^T accumulator `tl.zeros((BLOCK_N, BLOCK_M))`")
SMALL_M = decorators("triton.autotune", where=_small_m_configs, name="small-m-config",
                     describe="autotune configs with a small M tile (`BLOCK_SIZE_M: 16`)") | launches(
    where=_small_m_tile, name="small-m-tile",
    describe="an M tile set small for small batches at launch (`BLOCK_M=16`, `next_power_of_2(M)`)") | custom(
    "moe-token-blocks", "expert token blocks (few tokens per expert at decode)", _moe_token_blocks, signature=True)

SKELETON = Skeleton(
    id="swap-ab-small-m",
    title="Swap-AB for small M (decode GEMMs)",
    summary="For small M (decode), compute C^T = B^T A^T so the large N fills the MMA's M slot (wgmma needs M=64).",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=SWAPPED,
    preconditions=[GEMM_LOOP, SMALL_M, ~RANK_LOOPS],
    subject=GEMM_LOOP,
    env=Env(min_cc=90),
    helps=("compute", "latency"),
)
