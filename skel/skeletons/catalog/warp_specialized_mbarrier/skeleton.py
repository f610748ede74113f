"""Split a pipelined GEMM mainloop into a producer warpgroup and consumer warpgroups synchronised by mbarriers.

## What it does
Turns a mainloop in which every warp both issues the loads of stage `s + S - 1` and
computes on stage `s` into two roles. One warpgroup (128 threads, one elected thread in
practice) is the *producer*: it waits until a stage is free (`empty` mbarrier), issues the
TMA copies for it and arms the stage's `full` mbarrier with the expected byte count
(`mbarrier.arrive.expect_tx`). One or two *consumer* warpgroups wait on `full[s]`
(`mbarrier.try_wait.parity`), run the MMAs and arrive on `empty[s]`. Each role then
resizes its register file with `setmaxnreg`: the producer gives registers back
(`setmaxnreg.dec.sync.aligned.u32 40`, CUTLASS `warpgroup_reg_dealloc<40>`), the consumers
take them (`setmaxnreg.inc... 232/240`, `warpgroup_reg_alloc<232>`):

    if (warpgroup_idx == kNumConsumers) {              // producer
        warpgroup_reg_dealloc<40>();
        for (k...) { empty[s].wait(phase ^ 1); tma_load(..., &full[s]); full[s].arrive_and_expect_tx(bytes); }
    } else {                                            // consumers
        warpgroup_reg_alloc<232>();
        for (k...) { full[s].wait(phase); wgmma(...); empty[s].arrive(); }
    }

## Why it is faster
In a uniform pipeline the same instruction stream issues loads, waits for data and
issues MMAs, so every `cp.async.wait_group`/barrier stalls all warps together and the
schedule is fixed when the kernel is compiled. With roles, the producer runs ahead as
far as the stage ring allows and the consumers issue MMAs back to back, each side
blocking only on its own mbarrier: TMA latency hides behind tensor-core work
dynamically. The register reallocation is what makes it fit: the producer needs ~40
registers per thread, so the consumers can hold 64×256 FP32 accumulator tiles (plus FP8
promotion accumulators) without spilling. DeepGEMM, FlashAttention-3 and CUTLASS's
`KernelTmaWarpSpecialized*` mainloops are built this way.

## Applies when
- a GEMM-like mainloop stages operand tiles through shared memory with asynchronous
  copies (`cp.async` multi-stage rings or TMA) inside a K loop, and tensor-core MMAs
  (`mma.sync`, WGMMA) consume them;
- all warps of the block both load and compute: no producer/consumer role split on a
  warp or warpgroup index with mbarriers, no `setmaxnreg`;
- the target is Hopper (sm_90a) or newer: `setmaxnreg` and transaction-count mbarriers
  (`expect_tx`, completed by TMA) need sm_90.

Refinement: a kernel that already splits roles over mbarriers and issues tensor-core MMAs
but never calls `setmaxnreg` leaves registers idle in the producer and caps the
consumers' accumulator tiles: add `warpgroup_reg_dealloc`/`warpgroup_reg_alloc`.

## Does not apply when
- the loop does no tensor-core work (reductions, elementwise, copies): there is no MMA
  stream to keep fed;
- tiles are loaded with ordinary loads and stores (no `cp.async`/TMA): move to an
  asynchronous multi-stage pipeline first — a producer cannot run ahead with synchronous
  loads;
- the block has fewer than two warpgroups' worth of threads to spare, or the K loop is a
  few steps long (one or two K blocks): the extra warpgroup and the barrier ring cost
  more than they hide;
- pre-Hopper GPUs (no `setmaxnreg`, no TMA transaction barriers) and AMD GPUs.

## References
- DeepGEMM (commit 54e2261) `deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh` (`sm90_fp8_gemm_1d2d_impl`: `warpgroup_reg_dealloc<kNumTMARegisters>` for the TMA warpgroup, `warpgroup_reg_alloc<kNumMathRegisters>` for the math warpgroups, `full_barriers`/`empty_barriers` of `ClusterTransactionBarrier`)
- DeepGEMM (commit 54e2261) `deep_gemm/include/deep_gemm/ptx/tma.cuh` (`mbarrier_arrive_and_set_tx`, `mbarrier_wait_and_flip_phase`: the raw `mbarrier.*` PTX)
- CUTLASS `include/cutlass/arch/reg_reconfig.h` (`warpgroup_reg_alloc`/`warpgroup_reg_dealloc` = `setmaxnreg.inc/dec.sync.aligned.u32`) and `include/cutlass/arch/barrier.h` (`ClusterTransactionBarrier`)
- CUTLASS `include/cutlass/gemm/collective/sm90_mma_tma_gmma_ss_warpspecialized.hpp` (the producer/consumer mainloop)
- PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier" and "Miscellaneous Instructions: setmaxnreg"
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import calls_where, ifs, implies
from skel.skeletons.predicates.cuda_gemm import (cp_async_loads, enclosing_loops, is_ptx, mma_calls, mma_in_k_loop,
                                                 tma_loads)

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

_REALLOC = re.compile(r"^warpgroup_reg_(alloc|dealloc)$|^setmaxnreg\w*$")
_MBAR_METHODS = (".wait", ".arrive", ".arrive_and_expect_tx", ".arrive_and_wait", ".try_wait", ".expect_transaction",
                 ".complete_transaction")
_BARRIER_RECEIVER = re.compile(r"(?i)bar")
_MBAR_HELPER = re.compile(r"(?i)^(mbarrier|mbar)_\w+$")
_MBAR_TYPES = re.compile(r"(?:^|::)(ClusterTransactionBarrier|ClusterBarrier|barrier|pipeline)$")
#: a role by name (`warp_role == WarpRole::kProducer`, `is_consumer`): a role split whatever
#: it is compared with
_ROLE_WORD = re.compile(r"(?i)\b\w*(producer|consumer|_role|role_)\w*\b")
#: the index a role split tests: a warp or warpgroup index, or the thread index (against a
#: thread count, or divided into warps / warpgroups)
_WARP_INDEX = re.compile(r"(?i)\b(warp_?group_?(idx|id|index)\w*|wg_?(idx|id)|warp_?(idx|id|index))\b|threadIdx\.x")
_CLAUSE = re.compile(r"\s*(?:&&|\|\||\band\b|\bor\b)\s*")
_COMPARISON = re.compile(r"^(.*?)(==|!=|>=|<=|<|>)(.*)$")
_IDENT = re.compile(r"[A-Za-z_]\w*(?:::\w+)*")
_CONST_NAME = re.compile(r"^(k[A-Z]\w*|[A-Z][A-Z0-9_]*)$")


def _parts(name: str) -> list[str]:
    return [p for p in name.lstrip(".").split("::") if p]


def _is_reg_realloc(c: Call, k: KernelFacts) -> bool:
    """`setmaxnreg` PTX, or a `warpgroup_reg_alloc/dealloc` / `setmaxnreg*` helper."""
    return c.name.startswith("ptx:setmaxnreg") or bool(not is_ptx(c.name) and _parts(c.name)
                                                        and _REALLOC.match(_parts(c.name)[-1]))


def _mbarrier_ops(k: KernelFacts) -> list[int] | None:
    """mbarrier calls (PTX, methods on a barrier, `mbarrier_*` helpers), else the barrier
    objects the kernel names: calls, then names."""
    lines = []
    for c in k.calls:
        if c.name.startswith("ptx:mbarrier."):
            lines.append(c.line)
        elif c.name in _MBAR_METHODS and _BARRIER_RECEIVER.search(c.receiver or ""):
            lines.append(c.line)
        elif not is_ptx(c.name) and not c.name.startswith(".") and _parts(c.name) and _MBAR_HELPER.match(_parts(c.name)[-1]):
            lines.append(c.line)
    if lines:
        return lines
    # barrier objects declared but driven through methods on aliases we cannot see
    return [line for n, line in k.names.items() if _MBAR_TYPES.search(n) and "::" in n] or None


def _constant_side(k, text: str) -> bool:
    """Literals, template parameters, `kNumMathThreads` / `NUM_WARPS`-style constants, enum
    values (`Role::kTMA`), `constexpr` locals: a fixed role boundary. A runtime value
    (`warp_id < num_channels`) makes the test a bound on data-parallel warps instead."""
    constexprs = {p.name for p in k.params if p.constexpr}
    runtime = {p.name for p in k.params if not p.constexpr}
    types = getattr(k, "var_types", None) or {}
    for ident in _IDENT.findall(text):
        if ident in runtime:
            return False
        if ("::" in ident or ident in constexprs or _CONST_NAME.match(ident)
                or "constexpr" in types.get(ident, "")):
            continue
        return False
    return True


def _role_test(k, test: str) -> bool:
    for clause in _CLAUSE.split(test.strip("() ")):
        if _ROLE_WORD.search(clause):
            return True
        m = _COMPARISON.match(clause.strip("() "))
        if not m:
            continue
        left, op, right = m.group(1), m.group(2), m.group(3)
        if op == "==" and "threadIdx" in left + right:
            continue  # one elected thread (`threadIdx.x == 0`) issues and then computes like the rest
        for index_side, other in ((left, right), (right, left)):
            if _WARP_INDEX.search(index_side) and not _WARP_INDEX.search(other) and _constant_side(k, other):
                return True
    return False


def _splits_roles(i: dict[str, Any], k: KernelFacts) -> bool:
    """An `if` test that chooses a role: a warp / warpgroup / thread index compared with a
    fixed boundary (`warp_idx >= kNumMathThreads / 32`, `warpgroup_idx == 1`), or a role by
    name. `threadIdx.x == 0` (one thread issues, then computes like the others) is not one."""
    return _role_test(k, i.get("test", ""))


def _async_tile_loads_in_loop(k: KernelFacts) -> list[int]:
    """TMA and `cp.async` copies (the predicates' call names) inside a loop of the kernel."""
    return [ln for ln in tma_loads(k) + cp_async_loads(k) if enclosing_loops(k, ln)]


def _mma_in_k_loop(k: KernelFacts) -> list[int]:
    """``mma_in_k_loop`` over every register and tensor-memory MMA family."""
    return mma_in_k_loop(k, ("wgmma", "mma.sync", "umma", "cute"))


def _register_mma(c: Call, k: KernelFacts) -> bool:
    """One of the kernel's register-accumulator MMA calls (``mma_calls`` of the WGMMA,
    `mma.sync` and CuTe families; not Blackwell UMMA, which accumulates in tensor memory)."""
    return any(m is c for m in mma_calls(k, ("wgmma", "mma.sync", "cute")))


REG_REALLOC = calls_where(where=_is_reg_realloc, name="setmaxnreg",
                          describe="register reallocation between roles (`setmaxnreg`, `warpgroup_reg_alloc/dealloc`)")
MBARRIERS = custom("mbarrier-sync", "mbarrier waits/arrivals (`mbarrier.*`, `full[s].wait(phase)`, `arrive_and_expect_tx`)",
                   _mbarrier_ops)
ROLE_SPLIT = ifs(where=_splits_roles, name="role-split",
                 describe="a branch choosing producer or consumer by warp / warpgroup index")
ASYNC_TILE_LOADS = custom("async-smem-tile-loads-in-loop",
                          "asynchronous tile copies into shared memory inside a loop (`cp.async` or TMA)",
                          _async_tile_loads_in_loop)
MMA_IN_K_LOOP = custom("tensor-core-mma-in-k-loop", "tensor-core MMAs (`mma.sync`, WMMA, WGMMA) inside the K loop",
                       _mma_in_k_loop)
#: Complete: registers are reallocated between the roles, or there is no register
#: accumulator whose size the reallocation would serve: a copy or communication kernel, or
#: Blackwell UMMA, which accumulates in tensor memory.
REALLOC_WHEN_MMA = implies(
    calls_where(where=_register_mma, name="register-mma", describe="a register-accumulator tensor-core MMA"),
    REG_REALLOC, name="setmaxnreg-when-mma",
    describe="register reallocation (`setmaxnreg`) for the MMA warpgroups' accumulators")

SKELETON = Skeleton(
    id="warp-specialized-mbarrier",
    title="Warp-specialized producer/consumer mainloop with mbarriers and setmaxnreg",
    summary="Producer warpgroup issues TMA, consumer warpgroups run MMAs; full/empty mbarriers, setmaxnreg (sm_90+).",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    ruled_out_by=(r"warp[\s_-]*speciali[sz]\w*", r"\bproducer\b.*\bconsumer\b", r"setmaxnreg",
                  r"reg(ister)?[\s_-]*(re)?alloc\w*"),
    present=REG_REALLOC | (MBARRIERS & ROLE_SPLIT),
    preconditions=[ASYNC_TILE_LOADS, MMA_IN_K_LOOP],
    subject=ASYNC_TILE_LOADS,
    env=Env(backends=("cuda",), min_cc=90),
    helps=("compute", "latency", "occupancy"),
    refine=[REALLOC_WHEN_MMA],
    languages=("cuda",),
)
