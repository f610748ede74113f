"""Stage tiles global → shared with `cp.async` into a ring of stages, so the next tiles load while this one is used.

## What it does
A loop that, every iteration, loads a tile from global memory into `__shared__` arrays
through registers (`sA[ty][tx] = A[...]`), waits at `__syncthreads()`, computes from the
tile and synchronises again, is rewritten around asynchronous copies: the shared arrays
get a leading stage dimension (`sA[STAGES][..][..]`); a prologue issues the copies of the
first `STAGES - 1` tiles with `cp.async` (inline PTX `cp.async.cg.shared.global`, or
`__pipeline_memcpy_async`, or `cuda::memcpy_async`), committing one group per tile
(`cp.async.commit_group` / `__pipeline_commit()`); each iteration waits until only
`STAGES - 2` groups are still in flight (`cp.async.wait_group` / `__pipeline_wait_prior`),
synchronises once, issues the copies of tile `t + STAGES - 1` into the stage tile `t - 1`
used, and computes from stage `t % STAGES`. Out-of-range parts of a tile are zero-filled
by the copy itself (source size 0), so the edges need no separate path.

## Why it is faster
With plain loads each iteration exposes a full DRAM round trip: the load must reach
registers before the shared store, and the compute cannot start until every thread's store
is done. Only other resident blocks hide that latency, and a block with a big shared tile or
many registers has few neighbours. `cp.async` (sm_80+) moves data global → shared without
passing through registers and without blocking the thread, so `STAGES - 1` tiles are in
flight while the current one is computed on: the bytes in flight per SM grow by that factor
and the loop runs at the rate of bandwidth or of math, whichever binds, instead of latency.
It also frees the registers the staging loads held, and one barrier per iteration remains
instead of two.

## Applies when
- a loop stores values loaded from global memory into a `__shared__` array, then calls
  `__syncthreads()`, then reads the shared array again in the same iteration (a k-loop of
  a tiled GEMM/GEMV, a streaming stencil or convolution over chunks);
- the target is sm_80 or newer (Ampere, Ada, Hopper; on Hopper TMA is the further step).

## Does not apply when
- the tile is loaded once (no loop): there is nothing to overlap with;
- shared memory is already the occupancy limit: `STAGES` copies of the tile must fit, and
  fewer resident blocks can cost more than the pipelining wins;
- the staged data is computed, not loaded (a scan or sort in shared memory), or is loaded
  with a transformation that must happen in registers first (dequantisation before the
  store: then stage the raw bytes and transform after the wait);
- accesses are not 4/8/16-byte aligned and sized: `cp.async` copies only those sizes.

## References
- CUDA C++ Programming Guide, "Asynchronous Data Copies" (`cuda::memcpy_async`, pipelines,
  `__pipeline_memcpy_async`/`__pipeline_commit`/`__pipeline_wait_prior`) and PTX ISA,
  "cp.async", "cp.async.commit_group", "cp.async.wait_group":
  https://docs.nvidia.com/cuda/cuda-c-programming-guide/ , https://docs.nvidia.com/cuda/parallel-thread-execution/
- sglang 0.5.23 (wheel) `sglang/kernels/jit/csrc/gemm/marlin/marlin.cuh` (`pipe_stages = 4`;
  `cp_async4_pred`: `cp.async.cg.shared.global` with a predicate; `cp_async_fence`:
  `cp.async.commit_group`; `cp_async_wait<n>`: `cp.async.wait_group %0`)
- `/usr/local/cuda/include/cuda_pipeline_primitives.h` (CUDA 13.0: `__pipeline_memcpy_async`
  accepts 4, 8 or 16 bytes and a zero-fill count)
- the runnable pair: `skel/skeletons/catalog/cp_async_multistage/example.py` (decode-time Linear,
  plain staging → 4-stage `cp.async` ring)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import any_of, calls_where, names_where
from skel.skeletons.predicates.cuda import code, line_of, pointer_names, shared_arrays, sync_lines

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

#: asynchronous global -> shared copies: Ampere's cp.async (PTX, the pipeline primitives,
#: libcu++ and cooperative groups, CuTe's copy atoms, helper wrappers named after it) and
#: Hopper's bulk copies (TMA), which stage asynchronously too
ASYNC_CALLS = re.compile(r"^(?:ptx:cp\.async\S*|__pipeline_memcpy_async|(?:\w+::)*memcpy_async|"
                         r"(?:\w+::)*cp_async\w*|(?:\w+::)*\w*_cp_async\w*|(?:\w+::)*cp\.async\w*|"
                         r"(?:\w+::)*tma_(?:copy|load)\w*|(?:\w+::)*tma::(?:copy|load)\w*)$")
ASYNC_NAMES = re.compile(r"^(?:\w+::)*(?:SM80_CP_ASYNC\w*|SM90_TMA_LOAD\w*|pipeline_shared_state)$")
_STAGE_NAME = re.compile(r"(?i)^(?:k_?)?(?:num_?|n_?)?(?:pipe_?)?stages?$|^\w*_stages$|^kNumStages$")
_STAGE_RING = re.compile(r"%\s*\(?\s*\w*(?i:stage)")


def _multi_stage(k: KernelFacts) -> list[int]:
    """Evidence of more than one stage: a wait that leaves groups in flight, a stage ring."""
    lines = []
    for c in k.calls:
        waited = (c.kwargs.get("template") or (c.args[0] if c.args else "")).strip()
        if (c.name == "__pipeline_wait_prior" or re.search(r"cp_async_wait|wait_group", c.name)) and \
                not c.name.startswith("ptx:") and waited and waited != "0":
            lines.append(c.line)
        if c.name == "asm" and c.args and re.search(r"cp\.async\.wait_group\s+[1-9]", c.args[0]):
            lines.append(c.line)
    text = code(k)
    lines += [line_of(k, text, m.start()) for m in _STAGE_RING.finditer(text)]
    lines += [ln for name, ln in k.names.items() if _STAGE_NAME.match(name)]
    lines += [k.line_start for p in k.params if _STAGE_NAME.match(p.name)]
    return lines


def _statements(text: str) -> list[tuple[int, str]]:
    """(offset, statement) for every `;`-terminated statement of blanked source."""
    out, start = [], 0
    for m in re.finditer(r"[;{}]", text):
        out.append((start, text[start:m.start()]))
        start = m.end()
    return out


_ASSIGN = re.compile(r"(?<![=!<>+\-*/%&|^])=(?!=)")


def _staging_loops(k: KernelFacts) -> list[int]:
    """A loop that stores global loads into a `__shared__` array, then `__syncthreads()`, then
    reads the array again before the iteration ends."""
    shared = shared_arrays(k)
    pointers = pointer_names(k)
    if not shared or not pointers:
        return []
    sh = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(shared))) + r")\b")
    gl = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(pointers))) + r")\b\s*[\[+)]|__ldg\s*\(")
    text = code(k)
    stores: list[int] = []
    uses: list[int] = []
    for off, stmt in _statements(text):
        ln = line_of(k, text, off + len(stmt) - len(stmt.lstrip()))
        m = _ASSIGN.search(stmt)
        if m and sh.search(stmt[:m.start()]) and gl.search(stmt[m.end():]):
            stores.append(ln)
        elif sh.search(stmt):
            uses.append(ln)
    # a device helper called with a shared array and a global pointer stages the tile for it
    folded = getattr(k, "folded", None) or {}
    for c in k.calls:
        if c.name in folded and any(sh.search(a) for a in c.args) and any(gl.search(a + ")") for a in c.args):
            stores.append(c.line)
    syncs = sync_lines(k)
    lines: list[int] = []
    for lp in k.loops:
        inside = [s for s in stores if lp.line < s <= lp.end_line]
        if not inside:
            continue
        after = [s for s in syncs if min(inside) < s <= lp.end_line]
        if after and any(min(after) < u <= lp.end_line for u in uses):
            lines += [lp.line, min(inside), min(after)]
    return lines


#: async copy calls, and the CuTe atoms / pipeline states named for them (two kinds)
ASYNC_COPY = any_of(
    calls_where(like=ASYNC_CALLS, search=True, name="async-copy-call",
                describe="an async global→shared copy call (`cp.async`, `memcpy_async`, a TMA load)"),
    names_where(ASYNC_NAMES, name="async-copy-atom",
                describe="a CuTe copy atom or pipeline state for async copies (`SM80_CP_ASYNC*`, `SM90_TMA_LOAD*`)"),
    name="async-copy", describe="asynchronous global→shared copies (`cp.async`, `__pipeline_memcpy_async`, "
    "`cuda::memcpy_async`, TMA)")
MULTI_STAGE = custom("multi-stage", "more than one stage in flight (`cp.async.wait_group N` with N > 0, "
                     "`__pipeline_wait_prior(STAGES - 2)`, a `% STAGES` ring)", _multi_stage)
STAGING_LOOP = custom(
    "shared-staging-loop",
    "a loop storing global loads into `__shared__` arrays, then `__syncthreads()`, then computing from them",
    _staging_loops)

SKELETON = Skeleton(
    id="cp-async-multistage",
    title="cp.async multi-stage global→shared pipeline",
    summary="Copy the next tiles global→shared with cp.async into a ring of stages while computing on the current one.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bcp\.?async\b", r"\bmemcpy_async\b", r"\bmulti-?stage\w*", r"\bpipelin\w*"),
    present=ASYNC_COPY,
    preconditions=[STAGING_LOOP],
    subject=STAGING_LOOP,
    refine=[MULTI_STAGE],
    env=Env(backends=("cuda",), min_cc=80),
    helps=("memory", "latency"),
    languages=("cuda",),
)
