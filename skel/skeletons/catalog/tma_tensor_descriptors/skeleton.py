"""Feed `tl.dot` loops through TMA tensor descriptors on Hopper and newer GPUs.

## What it does
Replaces the tile loads of a loop that feeds `tl.dot` (manual offset grids or block
pointers) with a tensor descriptor: `desc = tl.make_tensor_descriptor(base, shape=[M, K],
strides=[stride_m, 1], block_shape=[BM, BK])` in the kernel (or a host
`triton.tools.tensor_descriptor.TensorDescriptor.from_tensor(...)` passed as an
argument), then `desc.load([m0, k0])` / `desc.store([m0, n0], tile)` with element
offsets. Out-of-bounds rows and columns are zero-filled by the hardware, so the masks go.

## Why it is faster
On sm_90+ a descriptor load is one TMA bulk copy issued by a single thread: the
address generation, bounds checks and the global→shared transfer run in the copy
engine instead of in every thread's registers, and the copy is asynchronous, which lets
the software pipeline (`num_stages`) and warp specialization overlap loads with MMAs.
It pays off for large, regular tiles in compute-heavy loops (GEMM-like K loops,
attention), as in Triton's persistent matmul tutorial and `triton_kernels` (see
References).

## Applies when
- a loop loads 2-D tiles (manual offsets or block pointers) that feed a `tl.dot` in the
  same loop, and the tiles are plain strided windows of the tensor (no index gather);
- the loop runs over a runtime length (K, T, a sequence), so the descriptor setup is
  amortized — a loop over `range(tl.cdiv(K, BK))` with constexpr K runs a few steps only;
- the target is NVIDIA sm_90+ with Triton >= 3.4 (`tl.make_tensor_descriptor`; 3.3
  only had `tl._experimental_make_tensor_descriptor`);
- the base pointer is 16-byte aligned, the last dimension is contiguous and the other
  strides are multiples of 16 bytes (the descriptor's own requirements).

## Does not apply when
- the only dot loops run over a LoRA rank (8-64: one to four 16-wide K tiles), sglang's
  LoRA expand kernels: as short as the 0.57x case above;
- tiles are tiny (16x16 blocks, short loops): the descriptor setup costs more than it
  saves (this skeleton's example with K = 128, two K blocks, ran at 0.57x on an H200;
  at K = 8192 it gained 5%);
- the GPU is pre-Hopper, or AMD other than gfx1250 (gfx942/gfx950 do not lower
  descriptors to hardware copies); there the descriptor falls back to
  ordinary loads;
- rows are gathered through an index tensor (use `desc.gather` on Blackwell, or keep
  pointer loads);
- the inner stride is not 1 or strides are not 16-byte multiples (odd head dims, packed
  layouts);
- device-side descriptors need a global scratch allocation: the host must call
  `triton.set_allocator(...)` before launch, or pass host `TensorDescriptor`s instead.

## References
- Triton tutorials `python/tutorials/09-persistent-matmul.py` (`matmul_kernel_tma_persistent`)
- generative-recommenders `generative_recommenders/ops/triton/triton_hstu_attention.py` (`triton_hstu_attention_fwd`: host `TensorDescriptor`s whose block shapes `_host_descriptor_pre_hook` sets per autotune config)
- triton_kernels `matmul_ogs_details/_p_matmul_ogs.py` (`_p_matmul_ogs`)
- Triton API: `triton.language.make_tensor_descriptor`
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.kernels.flow import args_of, contains_call
from skel.skeletons.predicates.addresses import gathered_address, tile_load_2d
from skel.skeletons.predicates.loops import RANK_LOOPS, runtime_trip_count
from skel.skeletons.conditions import calls, soft
from skel.skeletons.patterns import addresses, calls_where

if TYPE_CHECKING:
    from skel.kernels.flow import CallInfo, Flow, Node
    from skel.kernels.model import Call, KernelFacts

_DESC_RECEIVER = re.compile(r"(?:^|_)desc(?:riptor)?(?:_|$|\d)", re.IGNORECASE)


def _on_descriptor(c: Call, k: KernelFacts) -> bool:
    """A method called on a name that says descriptor (`a_desc`, `desc_k`)."""
    return bool(_DESC_RECEIVER.search(c.receiver.split(".")[-1] if c.receiver else ""))


def _feeds_dot(fl: Flow, ld: CallInfo, addr: Node, k: KernelFacts, runtime_only: bool) -> bool:
    """A regular 2-D tile load (no gathered rows) in a loop whose values feed a `tl.dot` of
    that loop (``runtime_only``: a loop whose trip count is a runtime length; a short
    constexpr loop, K / BK steps, does not amortize descriptor setup)."""
    if not ld.in_loop:
        return False
    for dot in fl.named("tl.dot"):
        if not dot.in_loop:
            continue
        loop = dot.loops[-1]
        if runtime_only and not runtime_trip_count(fl, k, loop):
            continue
        if not loop.holds(ld.line):
            continue
        operands = [a for a in args_of(dot.node)[:2]]
        names: set[str] = set()
        for op in operands:
            names |= fl.closure(op, within=loop)[0]
        if set(ld.targets) & names or any(contains_call(op, ld.node) for op in operands):
            return tile_load_2d(fl, ld) and not gathered_address(fl, addr)
    return False


def _feeds_dot_in_runtime_loop(fl: Flow, ld: CallInfo, addr: Node, k: KernelFacts) -> bool:
    return _feeds_dot(fl, ld, addr, k, runtime_only=True)


def _feeds_dot_in_any_loop(fl: Flow, ld: CallInfo, addr: Node, k: KernelFacts) -> bool:
    return _feeds_dot(fl, ld, addr, k, runtime_only=False)


DESCRIPTOR_USED = calls(
    "tl.make_tensor_descriptor", "tl._experimental_make_tensor_descriptor", "make_tensor_descriptor",
    "tl._experimental_descriptor_load", "tl._experimental_descriptor_store",
    "tl.load_tensor_descriptor", "tl.store_tensor_descriptor",
    name="make-tensor-descriptor", describe="`tl.make_tensor_descriptor` / descriptor load or store",
) | calls_where(".load", ".store", ".gather", ".scatter", ".atomic_add", where=_on_descriptor,
              name="descriptor-method", describe="`.load`/`.store` on a tensor descriptor (`*_desc` / `desc_*`)")
TILE_LOAD_FEEDS_DOT_IN_LOOP = addresses(
    of=("tl.load",), kernel_where=_feeds_dot_in_runtime_loop, name="tile-load-feeds-dot-in-loop",
    describe="a regular 2-D tile load feeding a `tl.dot` inside a loop whose trip count is a runtime length")
TILE_LOAD_FEEDS_DOT_ANY_LOOP = addresses(
    of=("tl.load",), kernel_where=_feeds_dot_in_any_loop, name="tile-load-feeds-dot-in-any-loop",
    describe="a regular 2-D tile load feeding a `tl.dot` inside a loop")

#: the subject: the tile loads a tensor descriptor would replace
TILE_LOADS_FEED_DOT = soft(TILE_LOAD_FEEDS_DOT_IN_LOOP, relaxed=TILE_LOAD_FEEDS_DOT_ANY_LOOP)

SKELETON = Skeleton(
    id="tma-tensor-descriptors",
    title="TMA tensor descriptors for tl.dot tile loads",
    summary="Load the tiles of a tl.dot loop with tl.make_tensor_descriptor / desc.load (TMA) on sm_90+.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bTMA\b", r"\btensor[\s_-]?descriptors?\b", r"make_tensor_descriptor"),
    present=DESCRIPTOR_USED,
    # a runtime trip count is where descriptor setup amortizes best, not what makes TMA
    # possible: the same strided tile loads in a constexpr-length loop are a near miss
    preconditions=[TILE_LOADS_FEED_DOT, ~RANK_LOOPS],
    subject=TILE_LOADS_FEED_DOT,
    env=Env(backends=("cuda",), min_cc=90, triton=">=3.4"),
    helps=("memory", "latency"),
)
