"""Readers of CUDA C++ kernel facts about output tiles, tensor-core MMAs and tile loops.

Shared by the CUDA skeletons that rework how a tiled GEMM-like kernel is scheduled or how
its epilogue writes: one CTA per output tile (`blockIdx.x`/`blockIdx.y`, or `blockIdx.x`
split with `/` and `%`), a tensor-core MMA (wmma, `mma.sync`, wgmma, tcgen05, CUTLASS/CuTe
wrappers), shared-memory tiles, and the persistent tile loops that replace one CTA per tile.
Every reader takes a ``KernelFacts`` of language "cuda" and returns the lines that show the
fact (empty when absent), so conditions can cite them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.conditions import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop

#: A tensor-core MMA, by callee: `wmma::mma_sync`, `WGMMA::wgmma`, `cute::gemm`,
#: `SM90_64x128x32_F32BF16BF16_SS::fma` (CuTe MMA atoms), `mma_bf16_16816` helpers ...
_MMA_CALL = re.compile(r"(?i)(^|[:.])(w?mma\w*|wgmma\w*|\w*_mma|umma\w*|hmma\w*|gemm)$"
                       r"|(^|::)SM\d+_\d+x\d+x\d+\w*::fma$")
#: ... and by the PTX instruction an `asm` block issues.
_MMA_PTX = re.compile(r"ptx:(mma\.|wgmma\.mma_async|tcgen05\.mma)")


def is_kernel(k: KernelFacts) -> bool:
    """A `__global__` function (the extractor's kind "kernel"), not a host binding."""
    kind = getattr(k, "kind", "")
    return kind == "kernel" or (not kind and any(d.name == "__global__" for d in k.decorators))


def mma_lines(k: KernelFacts) -> list[int]:
    """Lines of tensor-core MMA calls or MMA PTX instructions (helpers folded in count)."""
    return sorted({c.line for c in k.calls if _MMA_PTX.match(c.name) or _MMA_CALL.search(c.name)})


def shared_lines(k: KernelFacts) -> list[int]:
    """Lines declaring shared memory (`__shared__` arrays or `extern __shared__` buffers)."""
    return sorted({line for n, line in k.names.items() if n in ("__shared__", "extern __shared__")})


def _loop_of(k: KernelFacts, line: int) -> Loop | None:
    """The innermost loop holding ``line``, or None."""
    best = None
    for lp in k.loops:
        if lp.line <= line <= lp.end_line and (best is None or lp.line >= best.line):
            best = lp
    return best


#: `__shared__ float As[32][32];`, `extern __shared__ __align__(16) uint8_t smem[];`: the name
#: declared on a line that holds `__shared__`
_SHARED_DECL = re.compile(r"__shared__[^;=\[]*?\b([A-Za-z_]\w*)\s*(?:\[|;|=)")
#: a subscripted read: `As[ty][kk]`, `b_frag[j]`
_SUBSCRIPT = re.compile(r"\b([A-Za-z_]\w*)\s*\[")


def shared_arrays(k: KernelFacts) -> set[str]:
    """Names of the shared-memory arrays the kernel declares (its folded helpers' included)."""
    return {m.group(1) for line in k.source.splitlines() if "__shared__" in line
            for m in _SHARED_DECL.finditer(line)}


def syncthreads_k_loops(k: KernelFacts) -> list[int]:
    """Loops that stage operand tiles through shared memory, as a CUDA-core SGEMM does:
    a `__syncthreads()` in the body, a store into a shared array (the staging), and a
    multiply-accumulate of two different arrays (`acc += As[ty][kk] * Bs[kk][tx]`, or
    `acc[i][j] += a[i] * b[j]` on register copies). A tree reduction (`s[i] += s[i + stride]`)
    or a sum of squares has barriers but no product of two arrays."""
    shared = shared_arrays(k)
    if not shared:
        return []
    out = set()
    for lp in k.loops:
        inside = [a for a in k.assigns if lp.line <= a.line <= lp.end_line]
        barrier = any(c.name == "__syncthreads" and lp.line <= c.line <= lp.end_line for c in k.calls)
        staged = any(m.group(1) in shared for a in inside for t in a.targets for m in [_SUBSCRIPT.match(t)] if m)
        product = any(a.op == "+=" and "*" in a.value and len(set(_SUBSCRIPT.findall(a.value))) >= 2
                      for a in inside)
        if barrier and staged and product:
            out.add(lp.line)
    return sorted(out)


def gemm_like_lines(k: KernelFacts) -> list[int]:
    """A tiled GEMM-like body: tensor-core MMAs, or shared tiles feeding a multiply-
    accumulate K loop with barriers (a CUDA-core SGEMM)."""
    mma = mma_lines(k)
    if mma:
        return mma
    loops = syncthreads_k_loops(k)
    return loops if loops and shared_lines(k) else []


def one_cta_per_tile_lines(k: KernelFacts) -> list[int]:
    """The output tile comes from the block index: both `blockIdx.x` and `blockIdx.y` are
    read, or `blockIdx.x` is split into a row and a column of tiles with `/` and `%`."""
    attrs = k.attributes
    if "blockIdx.x" in attrs and "blockIdx.y" in attrs:
        return [attrs["blockIdx.x"], attrs["blockIdx.y"]]
    divided = [a.line for a in k.assigns if "blockIdx.x" in a.value and re.search(r"blockIdx\.x\s*/", a.value)]
    modded = [a.line for a in k.assigns if "blockIdx.x" in a.value and re.search(r"blockIdx\.x\s*%", a.value)]
    return sorted(set(divided[:1] + modded[:1])) if divided and modded else []


#: How many CTAs a persistent kernel runs: the grid size or the SM count.
_CTA_COUNT = re.compile(r"\bgridDim\.x\b|(?i:\bk?_?num_?sms?\b|\bsm_?count\b|\bnum_?ctas\b|\bkNumSMs\b)")
#: Scheduler calls that hand a CTA its next tile (DeepGEMM `get_next_block`, CUTLASS
#: `get_current_work`/`advance_to_next_work`, hand-written `next_tile` helpers).
_NEXT_TILE = re.compile(r"(?i)(get_)?next_(block|tile|work)\w*|advance_to_next_work|get_current_work|fetch_next_\w+")


def tile_loops(k: KernelFacts) -> list[Loop]:
    """Persistent tile loops: a loop over tiles whose step is the grid size or the SM count
    (`tile += gridDim.x`, in the loop header or its body) — a step without `blockDim`, which
    would make it an element-wise grid-stride loop — or a loop driven by a tile scheduler's
    `get_next_block`-style call."""
    found: dict[int, Loop] = {}
    for lp in k.loops:
        update = lp.args[2] if len(lp.args) >= 3 else " ".join(lp.args)
        if _CTA_COUNT.search(update) and "blockDim" not in update:
            found[lp.line] = lp
    for a in k.assigns:  # `tile += gridDim.x;` in the body of a `while (tile < num_tiles)`
        if not (a.loop_depth and a.op == "+=" and _CTA_COUNT.search(a.value) and "blockDim" not in a.value):
            continue
        held = _loop_of(k, a.line)
        if held is not None and set(a.targets) & set(IDENT.findall(" ".join(held.args))):
            found[held.line] = held
    for c in k.calls:
        if _NEXT_TILE.fullmatch(re.split(r"::|\.", c.name)[-1]):
            held = _loop_of(k, c.line)
            if held is not None:
                found[held.line] = held
    return [found[line] for line in sorted(found)]


def gemm_tile_loop_lines(k: KernelFacts) -> list[int]:
    """Tile loops (``tile_loops``) whose body does the GEMM work (its MMAs or its K loop):
    a grid-stride loop over rows of a norm, or a helper's loop over MoE blocks, is not a
    persistent GEMM."""
    work = gemm_like_lines(k)
    return [lp.line for lp in tile_loops(k) if any(lp.line <= w <= lp.end_line for w in work)]


def scheduler_call_lines(k: KernelFacts) -> list[int]:
    """Tile-scheduler calls (`scheduler.get_next_block(m, n)`): the order is the scheduler's."""
    return sorted({c.line for c in k.calls if _NEXT_TILE.fullmatch(re.split(r"::|\.", c.name)[-1])})
