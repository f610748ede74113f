"""Pick block sizes, num_warps and num_stages per GPU architecture in the launcher.

## What it does
The launcher asks what it runs on — `torch.cuda.get_device_capability()`, the shared
memory per block (`check_shared_mem('hopper')`,
`triton.runtime.driver.active.utils.get_device_properties(dev)['max_shared_mem']`),
`is_hip()` / `torch.version.hip` — and chooses the launch meta-parameters from a small
table: e.g. `BK = 128 if check_shared_mem('hopper') else 64`,
`num_warps = 8 if major >= 9 else 4`, `num_stages = 3 if major >= 8 else 1`. The kernel
itself is unchanged; only the literal `num_warps=4, BLOCK=64` at the launch is replaced
by the chosen values.

## Why it is faster
One literal config is tuned for one GPU. SMEM per SM, register file, warp size (64 on
AMD), tensor-core shapes and async-copy support differ between Ampere, Hopper,
Blackwell and MI300: a tile that fits and pipelines well on H100 runs out of shared
memory on a consumer card, and `num_warps` that suits NVIDIA's 32-wide warps
over-subscribes AMD's 64-wide wavefronts. A table gives each architecture a sensible
config with no autotuning warm-up and deterministic, reproducible choices. FLA
(`check_shared_mem`) and Liger (`is_hip()`, `infer_device()`) both do this.

## Applies when
- the kernel is not autotuned, and a launch in the same file passes a literal meta-parameter
  (written at the launch, or through a local only ever assigned that integer:
  `num_warps = 4`) whose best value moves with the GPU:
  - a literal `num_stages` for a loop that streams tiles (a `range`/`tl.range` loop whose
    tile loads move with the loop index: what Triton pipelines through shared memory), or
    on such a `tl.range(..., num_stages=3)` in the kernel itself, or
  - a literal tile size (`BK=64`, `BLOCK_K=32`) that such a loop steps by or loads, or that
    shapes a `tl.dot` operand (shared memory and tensor-core tiles), or
  - a literal `num_warps` for that tile work, or for a row of floating-point data the
    kernel reduces (a norm, a softmax) whose block the launch sizes per call
    (`BLOCK_SIZE=triton.next_power_of_2(N)`): elements, and so registers, per thread grow
    with the row;
- the code must run well on more than one architecture or vendor.

## Does not apply when
- the launch config comes from a tuned table: `kernel[grid](..., **config)` with the dict
  from a lookup (`get_config(M, E)`, `try_get_optimal_moe_config(...)`), a JSON file the
  module loads, or a table-format literal (`BLOCK_SIZE_*` keys, or both `num_warps` and
  `num_stages`); or JSON tables in a `configs/` folder beside the file. The table is
  already per-shape, per-GPU measurement (a plain `**kwargs` of a hand-set value or two
  does not count);
- the kernel is autotuned (use `autotune-configs` with pruning instead);
- it only ever runs on one known GPU (the literal is already the tuned value);
- the literal sizes nothing architecture-dependent: `num_stages` of a kernel with no
  pipelined loop (loop-free, or only unrolled `tl.static_range` loops, a binary search or a
  scan re-reading one vector); `num_warps` of a loop-free elementwise or copy kernel, or of
  a block fixed by the algorithm (a head of literal width, a named constant such as
  `BLOCK_T=_BLOCK_T`, a chunk size shared with other kernels, a literal block that must
  cover the whole row);
- the kernel is integer bookkeeping (sequence offsets, chunk indices, token ids: no
  floating-point data) or only moves data (a copy, gather or scatter with no float math):
  it is launch- or memory-bound, and no per-architecture config changes its time;
- the kernel is a serving engine's per-step bookkeeping (a module under `sample/`,
  `spec_decode/`, `speculative/`, `worker/`, or a `metadata*.py` / `allocator.py`);
- the table is not maintained: stale thresholds silently pessimise new GPUs. Prefer
  thresholds on measured resources (SMEM bytes) over architecture names.
With tiers already there, the skeleton is suggested as a refinement when a tiered launch
still passes a fixed `num_warps` or `num_stages` for its tile work (`num_warps = 4` beside a
`BLOCK_M` chosen from the compute capability).

Detection: a launch whose keyword values mention an architecture query, or a host
function that queries the hardware and passes non-literal `num_warps`/`num_stages`/tile
arguments (read from the source file when it is available and matches the kernel;
otherwise from the file's host calls).
- a tier chosen from shared-memory size alone is not a tuned config: on an H200 the sm_90 tier of the
  example (BK=64, 8 warps, 4 stages) ran at 0.48× of the portable one on a 4096³ GEMM and 1.29× on
  8192 × 14336 × 4096 (`benchmarks/results/gpu-2026-12-01-catalog/verify_catalog_2026-12-01.md`); tune the tiers, or autotune.

## References
- flash-linear-attention `fla/ops/attn/parallel.py` (`parallel_attn_fwd`: `check_shared_mem`) — at `49b00f0a94`, before 2025-07-01
- Liger-Kernel `src/liger_kernel/ops/cross_entropy.py` (`num_warps=32 if not is_hip() else 16`) — at `5e3bf99abb`, before 2025-07-01
- Triton tutorial `02-fused-softmax.py` (`num_stages` chosen from `max_shared_mem`)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skel.kernels.flow import args_of, flow_of, is_call, names_in, walk
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import LAUNCH_CONFIG_DICT, custom
from skel.skeletons.patterns import any_of, launches, loops_where
from skel.skeletons.predicates.addresses import is_block_ptr_address, is_vector_expr
from skel.skeletons.predicates.autotune import AUTOTUNED
from skel.skeletons.predicates.host import literal_argument
from skel.skeletons.predicates.loops import depends_on_loop, stepped_in_loop
from skel.skeletons.predicates.names import IDENT, TILE_NAME
from skel.skeletons.predicates.workload import MOVES_DATA_ONLY, STEP_MODULE

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.model import KernelFacts, Launch, Loop

#: hardware / architecture queries (SM counts are left out: they size persistent grids,
#: a different technique; TF32/gather support flags choose features, not launch configs)
HW_QUERY = re.compile(
    r"\b(check_shared_mem|get_device_capability"
    r"|get_device_properties(?!\([^)]*\)\.(multi_processor_count|gpu_eu_count))"
    r"|max_shared_mem|is_hip|is_amd|IS_AMD|is_nvidia\w*|IS_NVIDIA\w*|is_hopper\w*|is_blackwell\w*"
    r"|is_ampere\w*|IS_INTEL|is_intel\w*|IS_NPU|is_npu\w*|is_xpu\w*|infer_device|get_current_target|get_arch"
    r"|torch\.version\.hip)\b")
LAUNCH_META = ("num_warps", "num_stages")
_LITERAL = re.compile(r"\d+")
#: loops Triton software-pipelines (`scf.for`): `tl.static_range` is unrolled and a
#: `while` loop is not pipelined, so `num_stages` means nothing to them
_PIPELINED = ("range", "tl.range")
#: reductions over a block: what a row kernel (a norm, a softmax) does with the row it holds
_REDUCTIONS = ("tl.sum", "tl.max", "tl.min", "tl.reduce", "tl.argmax", "tl.argmin", "tl.xor_sum")
_FLOAT_TYPE = re.compile(r"tl\.(b?float\w*|float8\w*)")
_FLOAT_MATH = ("tl.exp", "tl.exp2", "tl.log", "tl.log2", "tl.sqrt", "tl.rsqrt", "tl.sigmoid", "tl.math.rsqrt",
               "tl.math.exp", "tl.math.exp2", "tl.math.log", "tl.fdiv", "tl.dot")


def _meta_kwargs(launch: Launch) -> dict[str, str]:
    return {kw: v for kw, v in launch.kwargs.items() if kw in LAUNCH_META or TILE_NAME.fullmatch(kw)}


def _tiered(ln: Launch, k: KernelFacts) -> bool:
    """A launch whose meta-parameters come from a hardware query."""
    meta = _meta_kwargs(ln)
    if any(HW_QUERY.search(v) for v in meta.values()):
        return True  # num_warps=32 if not is_hip() else 16
    computed = [v for v in meta.values() if not _LITERAL.fullmatch(v.strip())]
    if not computed:
        return False
    # the launching function queried the hardware (directly or through a helper name),
    # or a function of the file it calls did (`_get_block_sizes(...)` reading the
    # capability; its bare `get_device_properties` may only be the SM count)
    return any(HW_QUERY.search(x) for x in (*ln.host_calls, *ln.host_names)) or any(
        HW_QUERY.search(x) for x in ln.helper_names if x != "get_device_properties")


# --- which literal launch meta-parameters depend on the architecture ---------------------
#
# A literal `num_warps`/`num_stages`/tile size is worth tiering when the best value moves
# with the GPU: the shared memory a pipelined tile loop or a `tl.dot` tile takes (SMEM per
# SM, async copies, tensor-core shapes), or the registers a per-call-sized row block needs
# per thread (register file, 32- vs 64-wide warps). A loop-free kernel over a small tile
# the algorithm fixes (a head, a few tokens), or integer bookkeeping (sequence offsets,
# token ids), runs the same on every GPU whatever the literal says.


def _streaming_loops(k: KernelFacts) -> dict[int, set[str]]:
    """Pipelinable loops that stream tiles -> the names their bounds and streamed addresses
    read: a `range`/`tl.range` loop with a tile load (an address built from a `tl.arange`
    vector, a block pointer, a descriptor `.load`) whose address moves with the loop (reads
    its index, or is stepped in it: `p += BK`, `tl.advance`). A binary search or a scan
    re-reading one vector, and unrolled `tl.static_range` loops, do not count."""
    fl = flow_of(k)
    cached = fl.memo.get("hardware-tiered-launch:streaming")
    if isinstance(cached, dict):
        return cached
    out: dict[int, set[str]] = {}
    for c in fl.named("tl.load", ".load"):
        addr = c.arg(0, "pointer") if c.name == "tl.load" else c.arg(0, "offsets")
        if addr is None:
            continue
        if c.name == "tl.load" and not (is_vector_expr(fl, addr) or is_block_ptr_address(fl, addr)):
            continue
        for lp in c.loops:
            if lp.kind not in _PIPELINED:
                continue
            if depends_on_loop(fl, addr, lp) or stepped_in_loop(fl, addr, lp):
                names = out.setdefault(lp.line, set())
                names |= fl.closure(addr)[0]
                if lp.bounds is not None:
                    names |= fl.closure(lp.bounds)[0]
    fl.memo["hardware-tiered-launch:streaming"] = out
    return out


def _dot_names(k: KernelFacts) -> set[str]:
    """Names a `tl.dot`'s operands read (the tile sizes that shape its tensor-core tiles)."""
    fl = flow_of(k)
    out: set[str] = set()
    for c in fl.named("tl.dot"):
        for a in args_of(c.node)[:2]:
            out |= fl.closure(a)[0]
    return out


def _float_work(k: KernelFacts) -> bool:
    """The kernel computes on floating-point data (not only integer offsets and ids)."""
    return (any(v in ("fp32", "lowp", "fp8") for v in k.var_dtypes.values())
            or any(_FLOAT_TYPE.fullmatch(a) for a in k.attributes)
            or any(not _LITERAL.fullmatch(c) for c in k.constants)
            or any(c.name in _FLOAT_MATH for c in k.calls))


def _row_blocks(k: KernelFacts) -> set[str]:
    """Tile parameters that size a row the kernel reduces: `tl.arange(0, BLOCK)` read by a
    load's address, in a kernel that sums or maxes over a block (a norm, a softmax). A
    kernel that only copies or scales elements has no row-wide working set."""
    if not k.calls_named(*_REDUCTIONS):
        return set()
    fl = flow_of(k)
    out: set[str] = set()
    for c in fl.loads():
        addr = c.arg(0, "pointer")
        if addr is None:
            continue
        for e in fl.closure(addr)[1]:
            for n in walk(e):
                if is_call(n, "tl.arange"):
                    args = args_of(cast("cst.Call", n))  # is_call: a call node
                    if args:
                        out |= {x for x in names_in(args[-1]) if TILE_NAME.fullmatch(x)}
    return out


def _literal(v: str) -> bool:
    return bool(_LITERAL.fullmatch(v.strip()))


def _sized_per_call(k: KernelFacts, v: str) -> bool:
    """A launch argument computed from the call's shapes (`triton.next_power_of_2(N)`,
    `block`), not a literal or a constant by name (`BLOCK_T`, a module constant)."""
    v = v.strip()
    if _literal(v):
        return False
    return not (IDENT.fullmatch(v) and (v.isupper() or v.lstrip("_").isupper() or v in k.module_constants))


def _literal_stages(k: KernelFacts) -> list[int] | None:
    """A literal `num_stages` for a kernel with a loop that streams tiles: at a launch, or on
    the streaming `tl.range(..., num_stages=3)` itself (the same fixed depth, written in the
    kernel; lmdeploy's AWQ GEMM later made it a constexpr the launcher picks per GPU)."""
    in_kernel = [lp.line for lp in k.loops if _literal_stages_loop(lp, k)]
    return in_kernel + [ln.line for ln in k.launches if _literal_stages_launch(ln, k)] or None


def _literal_stages_loop(lp: Loop, k: KernelFacts) -> bool:
    """A loop that streams tiles, its `tl.range(..., num_stages=3)` a literal."""
    return lp.line in _streaming_loops(k) and _literal(lp.kwargs.get("num_stages", ""))


def _literal_stages_launch(ln: Launch, k: KernelFacts) -> bool:
    """A launch with a literal `num_stages`, of a kernel with a loop that streams tiles."""
    return literal_argument(ln, "num_stages") and bool(_streaming_loops(k))


def _literal_tiles(ln: Launch, k: KernelFacts) -> bool:
    """A literal tile size that a streaming loop steps by / loads, or that shapes a `tl.dot`."""
    tiles = {p.name for p in k.params if p.constexpr and TILE_NAME.fullmatch(p.name)}
    literal = [kw for kw in ln.kwargs if kw in tiles and literal_argument(ln, kw)]
    if not literal:  # the rest reads the data-flow view: only for a launch where it can matter
        return False
    sized = set[str]().union(*_streaming_loops(k).values()) | _dot_names(k)
    return any(kw in sized for kw in literal)


def _literal_warps(ln: Launch, k: KernelFacts) -> bool:
    """A literal `num_warps` for tile work: a streaming loop, a `tl.dot`, or a row of
    floating-point data the kernel reduces, whose block the launch sizes per call
    (`BLOCK=next_power_of_2(N)`): elements per thread, and so registers, grow with the row."""
    if not literal_argument(ln, "num_warps"):
        return False
    if _streaming_loops(k) or k.calls_named("tl.dot"):
        return True
    rows = _row_blocks(k) if _float_work(k) else set()
    return any(kw in rows and _sized_per_call(k, v) for kw, v in ln.kwargs.items())


TIERED_LAUNCH = launches(where=_tiered, name="hardware-tiered-launch",
                         describe="a launch whose num_warps/num_stages/tile arguments come from a hardware query")
LITERAL_STAGES = any_of(
    loops_where(where=_literal_stages_loop, name="literal-num-stages-loop",
                describe="a loop that streams tiles with a literal `num_stages` on its `tl.range`"),
    launches(where=_literal_stages_launch, name="literal-num-stages-launch",
             describe="a launch with a literal `num_stages`, of a kernel with a loop that streams tiles"),
    name="literal-num-stages-streaming",
    describe="a literal `num_stages` (at a launch, or on the `tl.range`) for a loop that streams tiles")
LITERAL_TILES = launches(where=_literal_tiles, name="literal-tile-streaming",
                         describe="a launch with a literal tile size of a loop that streams tiles or of a `tl.dot`")
LITERAL_WARPS = launches(where=_literal_warps, name="literal-num-warps-tile-work",
                         describe="a launch with a literal `num_warps` for tile work (a loop streaming tiles, a "
                                  "`tl.dot`, or a floating-point row block sized per call and reduced)")
#: a literal launch meta-parameter whose best value depends on the architecture
LITERAL_META_LAUNCH = LITERAL_STAGES | LITERAL_TILES | LITERAL_WARPS


def _tiers_cover_launch(k: KernelFacts) -> bool:
    """No launch picks some meta-parameters per GPU and keeps others that depend on it just as
    much fixed: lmdeploy's prefill attention chose `BLOCK_M` from the compute capability but
    kept `BLOCK_N = 32` and `num_warps = 4` for every GPU, until a later commit tiered those
    too."""
    tiered = {ln.line for ln in k.launches if _tiered(ln, k)}
    if not tiered:
        return True
    # warps and stages only: a tile left fixed beside tiered ones is often the algorithm's own
    # (a chunk size the host shares with other kernels), not a per-GPU choice left undone
    fixed = set(_literal_stages(k) or []) | {ln.line for ln in k.launches if _literal_warps(ln, k)}
    return not (tiered & fixed)


TIERS_COVER_LAUNCH = custom(
    "tiers-cover-launch",
    "the tiers also choose the launch's `num_warps`/`num_stages` (a tiered launch still passes a "
    "fixed one for its tile work)", _tiers_cover_launch)

SKELETON = Skeleton(
    id="hardware-tiered-launch",
    title="Per-architecture launch configuration",
    summary="Choose BLOCK/num_warps/num_stages from device capability or SMEM in the launcher, not one literal config.",
    category=Category.HOST,
    doc=__doc__,
    ruled_out_by=(r"\bhardware[\s_-]*tier\w*", r"\btiered launch\w*", r"\bper[\s-]arch(itecture)? (launch|config)\w*"),
    present=TIERED_LAUNCH,
    preconditions=[~AUTOTUNED, LITERAL_META_LAUNCH, ~LAUNCH_CONFIG_DICT, ~MOVES_DATA_ONLY, ~STEP_MODULE],
    subject=LITERAL_META_LAUNCH,
    refine=[TIERS_COVER_LAUNCH],
    env=Env(),
    helps=("occupancy", "memory", "compute"),
)
