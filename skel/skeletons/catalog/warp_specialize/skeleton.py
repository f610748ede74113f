"""Warp-specialize a TMA-fed `tl.dot` loop: producer warps load, consumer warps multiply.

## What it does
Marks the main loop of a descriptor-fed matmul or attention kernel with
`tl.range(lo, hi, step, warp_specialize=True)` (in a persistent kernel, the outer tile
loop with `flatten=True, warp_specialize=True` as well). The compiler then splits the
loop body into partitions that run on different warps of the same program: a producer
partition issuing the TMA copies of later iterations into a ring of shared-memory
buffers, an MMA partition consuming them (and on Blackwell, an epilogue partition
draining the tensor-memory accumulator), synchronised by mbarriers.

    for k in tl.range(0, K, BK, warp_specialize=True):
        a = a_desc.load([off_m, k])
        b = b_desc.load([k, off_n])
        acc = tl.dot(a, b, acc)

## Why it is faster
With ordinary software pipelining (`num_stages`) one instruction stream issues the loads
of iteration `i + s`, waits for the data of iteration `i` and issues its MMAs: every wait
and every address computation sits between MMAs, and the schedule is fixed at compile
time. With specialized warps the producer runs ahead as far as the buffers allow and the
consumer issues MMAs back to back, each side waiting only on its own barrier, so TMA
latency, MMA issue and (on Blackwell) the epilogue overlap dynamically. It matters where
the kernel is close to tensor-core bound: large GEMM tiles, flash-attention forward on
sm_100, persistent matmuls where one tile's epilogue overlaps the next tile's loads.

## Applies when
- a loop with a runtime trip count (`K`, a key length) contains a `tl.dot` whose operand
  tiles are loaded through tensor descriptors (`desc.load`, `tl.make_tensor_descriptor`,
  host `TensorDescriptor`s, `tl._experimental_descriptor_load`) — the TMA-fed loops the
  warp-specialization passes are built for;
- the target is NVIDIA Blackwell (sm_100) with Triton 3.4 or newer, or Hopper (sm_90)
  with a Triton whose Hopper warp-specialization pass handles the loop (newer and less
  mature: compile it and compare against the plain pipelined loop);
- the loop is not already marked (`warp_specialize=` or `flatten=` on its `tl.range`).

## Does not apply when
- the operands come from pointer loads (`tl.load(ptr + offsets)`): Hopper's pass has
  crashed the compiler on a pointer-based `tl.dot` loop with `warp_specialize=True`
  (triton-lang/triton#9728, Triton 3.4); move the loads to descriptors first
  (`tma-tensor-descriptors`);
- the loop is short (a few K blocks, small head dims) or the kernel is memory-bound
  (GEMV, decode): there is no MMA stream to keep fed, and the extra partitions cost
  registers and shared memory;
- AMD GPUs and pre-Hopper NVIDIA GPUs: there is no TMA/mbarrier machinery to
  specialize around;
- the kernel is already near its register or shared-memory limit: each partition keeps
  its own registers and the buffer ring deepens with `num_stages`; check with the
  autotuner, which is how the Triton tutorials treat the flag (a tuned `WARP_SPECIALIZE`
  meta-parameter).

## References
- Triton tutorials `python/tutorials/09-persistent-matmul.py` (`matmul_kernel_descriptor_persistent`:
  `tl.range(..., flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE)`)
- tritonbench `tritonbench/kernels/proton_blackwell_ws_fused_attention.py` (`_attn_fwd_inner`: — at `462bde31dc`, before 2025-07-01
  `tl.range(lo, hi, BLOCK_N, warp_specialize=warp_specialize)` over `desc_k.load` / `desc_v.load`,
  commit 462bde31, June 2025)
- triton-lang/triton pull request #7136 (Hopper warp specialization: GEMM and attention) and issue #9728
- Triton API: `triton.language.range` (`warp_specialize`, `flatten`)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import flow_of
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, custom
from skel.skeletons.patterns import loops_where
from skel.skeletons.predicates.loops import runtime_trip_count

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop

#: A tensor descriptor by its usual names: `a_desc`, `desc_k`, `q_descriptor`.
_DESC_RECEIVER = re.compile(r"(?:^|_)desc(?:riptor)?(?:_|$|\d)", re.IGNORECASE)
_DESCRIPTOR_LOADS = ("tl._experimental_descriptor_load", "tl.load_tensor_descriptor")
_FLAGS = ("warp_specialize", "flatten")


def _marked(lp: Loop, k: KernelFacts) -> bool:
    """A loop whose `tl.range` sets `warp_specialize=` or `flatten=` (to anything but False)."""
    return any(f in lp.kwargs and lp.kwargs[f].strip() != "False" for f in _FLAGS)


def _descriptor_load(c) -> bool:
    if c.name in _DESCRIPTOR_LOADS:
        return True
    return c.name == ".load" and bool(_DESC_RECEIVER.search((c.receiver or "").split(".")[-1]))


def _tma_fed_dot_loops(k: KernelFacts) -> list[int] | None:
    """Lines of runtime-length loops holding a `tl.dot` and a tensor-descriptor load: the
    flow's loops (their trip counts), read against the kernel's calls."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    lines = []
    for lp in fl.loops:
        if lp.kind not in ("range", "tl.range") or not runtime_trip_count(fl, k, lp):
            continue
        inside = [c for c in k.calls if lp.line <= c.line <= lp.end]
        if any(c.name == "tl.dot" for c in inside) and any(_descriptor_load(c) for c in inside):
            lines.append(lp.line)
    return lines


WARP_SPECIALIZED = loops_where(
    where=_marked, name="warp-specialized-loop", describe="a `tl.range(..., warp_specialize=...)` / `flatten=` loop") | calls(
    "tl.async_task", name="async-task", describe="hand-written warp partitions (`with tl.async_task([...])`)")
TMA_FED_DOT_LOOP = custom(
    "tma-fed-dot-loop",
    "a loop over a runtime length whose `tl.dot` operands are tensor-descriptor loads (`desc.load`)",
    _tma_fed_dot_loops)

SKELETON = Skeleton(
    id="warp-specialize",
    title="Warp-specialized TMA/MMA loop (tl.range warp_specialize)",
    summary="tl.range(..., warp_specialize=True / flatten=True): producer/consumer warps in TMA-fed tl.dot loops.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=WARP_SPECIALIZED,
    preconditions=[TMA_FED_DOT_LOOP],
    subject=TMA_FED_DOT_LOOP,
    env=Env(backends=("cuda",), min_cc=90, triton=">=3.4"),
    helps=("compute", "latency"),
)
