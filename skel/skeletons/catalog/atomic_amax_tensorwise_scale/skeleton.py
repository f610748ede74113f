"""Dynamic per-tensor quantisation: merge block absmaxes with tl.atomic_max, not a one-program serial loop.

## What it does
A dynamic per-tensor (tensorwise) FP8/INT8 quantiser needs the absmax of the whole tensor
before it can scale any element. The slow form runs three kernels: every program stores
its block's absmax into a partials buffer, then a *single program* walks that buffer with
a scalar loop to find the global absmax and the scale, then a third kernel quantises:

    global_amax = 0.0
    for i in range(num_blocks):                      # one program, one element at a time
        global_amax = tl.maximum(global_amax, tl.load(block_amaxes_ptr + i))
    tl.store(scale_ptr, global_amax / FP8_MAX)

The rewrite merges the block absmaxes where they are computed: each program of the absmax
kernel ends with `tl.atomic_max(amax_ptr, tl.max(tl.abs(x)))` into one zero-initialised
fp32, and the quantising kernel derives the scale from it as it loads it. The partials
buffer, the single-program kernel and its launch go.

## Why it is faster
The single-program loop is latency-bound: one thread's iterations each wait for their
load (an L2 round trip, a few hundred cycles), so a tensor split into 16,384 blocks queues
16,384 dependent loads — milliseconds at a few hundred nanoseconds each — in one warp of one
SM while the rest of the GPU idles: more than the memory-bound quantisation pass itself (a
128 MiB tensor reads in ~50 µs on an H100). The atomic form costs one relaxed atomic per block, spread over the absmax
kernel's run (the blocks finish at different times, so they barely contend), and one
launch fewer. A vectorised single-program reduction (`tl.max` over `[BLOCK]` loads of
the partials) also fixes the latency, but keeps the buffer and the launch.

## Applies when
- a kernel reduces per-block partials with a scalar loop: `for i in range(n)` over a
  runtime count, loading one element a step (`tl.load(partials_ptr + i)`, no
  `tl.arange`) into a running `tl.maximum`;
- it runs as one program: it reads no `tl.program_id`, or every launch's grid is `(1,)`;
- its result makes a quantisation scale (`fp8_max`, `finfo`, 448., 127. in the kernel);
- pays when the partials are many (≥ 64 blocks: tens of microseconds of dependent loads); with
  fewer the gain is about one launch, and with the count unknown it is conditional
  (`--shape num_blocks=N`).

## Does not apply when
- the absmax is already merged with `tl.atomic_max` (fused already);
- the single-program reduction already loads the partials as vectors (`tl.load(p + start +
  tl.arange(0, BLOCK))` and `tl.max`): latency is not the problem;
- many programs each loop over their own row (a per-token scale): that is a row kernel,
  whose loop should load vectors instead; the tensor-wide merge is not there;
- a scalar loop over a small, fixed count (`tl.static_range(4)`), or one that is not a
  quantiser's (a cumulative sum of MoE expert counts): no scale to compute;
- the result must be bit-for-bit deterministic across runs and the reduction is a sum:
  float atomic adds reorder; a max is order-independent, which is why it is safe here.

## References
Promoted from the candidate clusters "message: fp8" (`skel skeletons candidates`: 3
repositories, 3 commits) and "message: quantization" (5 repositories, 7 commits); where
history shows the two forms:
- aiter `aiter/ops/triton/quant.py` (`_dynamic_per_tensor_fp8_quant_kernel`: each row program ends with
  `tl.atomic_max(x_max_ptr, m)`, its row's absmax; later `tl.atomic_max(scale_out_ptr, m / FP8_MAX,
  sem="relaxed")`) — at `126d2e08d9`, 2025-02-27, "Add Triton Quantization Kernels (#152)"
- aiter `csrc/kernels/quant_kernels.cu` (`data_to_scale_kernel`: the CUDA/HIP dynamic per-tensor quantiser merges
  each row's scale with `atomicMaxFloat`) — at `5b3b447db9`, 2025-06-03, "Quant kernel refine (#503)"
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import call_name, calls_in, flow_of, has_call, names_in
from skel.skeletons.base import PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import constant, custom, uses_name
from skel.skeletons.patterns import calls_where
from skel.skeletons.predicates.addresses import is_vector_expr
from skel.skeletons.predicates.host import own_launches

if TYPE_CHECKING:
    from skel.kernels.flow import CallInfo, Flow, LoopInfo
    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload  # the floor re-exports the type (catalog modules import no kernels.workload)

#: this many partials make the serial loop cost tens of microseconds of dependent loads
MANY_PARTIALS = 64
#: loops that run at run time (a `tl.static_range` is unrolled over a fixed count)
_RUNTIME_LOOPS = ("range", "tl.range")
#: a running maximum
_MAXIMA = ("tl.maximum", "maximum", "max", "tl.max")
#: a one-program grid as written at the launch: `(1,)`, `[1, 1, 1]`, `1, 1, 1`
_ONE_PROGRAM = re.compile(r"^[(\[]?\s*1\s*(,\s*1\s*)*,?\s*[)\]]?$")
#: names of the partial count or the tensor size the payoff reads
_COUNT_NAMES = ("num_blocks", "n_blocks", "num_partials", "n_partials")


def _single_program(k: KernelFacts) -> bool:
    """The kernel runs as one program: it never reads `tl.program_id`, or every launch of it
    in its file has a one-program grid."""
    if not k.calls_named("tl.program_id"):
        return True
    launches = own_launches(k)
    return bool(launches) and all(_ONE_PROGRAM.match(ln.grid.strip()) for ln in launches)


def _serial_max_loops(k: KernelFacts) -> list[int]:
    """Lines of a runtime loop that loads one element a step at an address indexed by the
    loop variable and folds it into a running maximum defined before the loop."""
    if not _single_program(k):
        return []
    fl = flow_of(k)
    if not fl.ok:
        return []
    lines: list[int] = []
    for lp in fl.loops:
        if lp.kind not in _RUNTIME_LOOPS or not lp.targets or lp.bounds is None:
            continue
        bound_names = fl.closure(lp.bounds)[0] | names_in(lp.bounds)
        if not any((p := k.param(n)) is not None and not p.constexpr for n in bound_names):
            continue  # a count fixed at compile time: a short unrolled loop
        loads = [c for c in fl.loads() if lp.holds(c.line)]
        for c in loads:
            addr = c.arg(0, "pointer")
            if addr is None or is_vector_expr(fl, addr):
                continue
            if not (fl.closure(addr, within=lp)[0] | names_in(addr)) & lp.targets:
                continue
            if _folded_into_max(fl, c, lp):
                lines += [lp.line, c.line]
    return sorted(set(lines))


def _folded_into_max(fl: Flow, load: CallInfo, lp: LoopInfo) -> bool:
    """The loaded value (or the load itself) feeds `m = tl.maximum(m, ...)` inside the loop,
    `m` defined before the loop as well (a loop-carried running maximum)."""
    for name, defs in fl.defs.items():
        inside = [d for d in defs if lp.holds(d.line)]
        before = [d for d in defs if d.line < lp.line]
        if not inside or not before:
            continue
        for d in inside:
            calls = [call_name(x) for x in calls_in(d.value)]
            if not any(n in _MAXIMA for n in calls) or name not in names_in(d.value):
                continue
            reads = names_in(d.value) | fl.closure(d.value, within=lp)[0]
            if set(load.targets) & reads or any(x is load.node for x in calls_in(d.value)):
                return True
    return False


def _atomic_of_absmax(k: KernelFacts) -> list[int]:
    """A `tl.atomic_max` whose value is a block's absmax (`tl.max(tl.abs(x))`, or a name
    holding one)."""
    fl = flow_of(k)
    if not fl.ok:
        return []
    lines = []
    for c in fl.named("tl.atomic_max"):
        val = c.arg(1, "val")
        if val is None:
            continue
        exprs = fl.closure(val)[1]
        if has_call(exprs, "tl.abs") and has_call(exprs, "tl.max"):
            lines.append(c.line)
    return lines


QUANT_SCALE = uses_name(
    r"(?i)\w*(fp8|int8|quant|q)_?\w*(max|min)\w*|\w*FP8_MAX\w*|Q_?MAX|qmax|\w*finfo\w*",
    name="quant-scale-bounds", describe="quantiser bounds (`fp8_dtype_max`, `FP8_MAX`, `finfo`)") | constant(
    r"^-?(448|127|57344|240)(\.0*)?$", name="quant-scale-bounds", describe="quantiser bounds (448., 127.)")
SERIAL_MAX_LOOP = custom(
    "one-program-serial-max-loop",
    "one program folding per-block partials into a running maximum with a scalar loop "
    "(`for i in range(n): m = tl.maximum(m, tl.load(p + i))`)",
    _serial_max_loops)
ATOMIC_AMAX = calls_where("tl.atomic_max", name="atomic-max", describe="a `tl.atomic_max`") & custom(
    "atomic-absmax", "a block's absmax merged with `tl.atomic_max(amax_ptr, tl.max(tl.abs(x)))`", _atomic_of_absmax)


def _partials(k: KernelFacts, wl: Workload) -> tuple[int | None, str]:
    """The partial count: given by a count name or the loop bound's parameter, else the
    tensor's elements over the block (`num_elements` and `BLOCK_SIZE` both given)."""
    names = (*_COUNT_NAMES, *(p.name for p in k.params if not p.constexpr))
    for n in names:
        if n in _COUNT_NAMES or re.fullmatch(r"(?i)n_?\w*blocks?|num_\w*", n):
            v = wl.size(n)
            if v is not None:
                return v, n
    elements, block = wl.size("num_elements") or wl.size("elements"), wl.size("BLOCK_SIZE")
    if elements is not None and block:
        return -(-elements // block), f"num_elements / BLOCK_SIZE ({elements:,} / {block:,})"
    return None, ""


def many_partials(k: KernelFacts, wl: Workload) -> Payoff:
    """The serial loop's length: ≥ 64 partials pays (tens of microseconds of dependent
    loads in one thread); fewer, the gain is about one launch."""
    n, name = _partials(k, wl)
    if n is None:
        return Payoff(UNKNOWN, f"pays when the tensor has many blocks (≥ {MANY_PARTIALS} partials for the serial loop)",
                      "--shape num_blocks=N (or num_elements=N and BLOCK_SIZE=B)")
    if n >= MANY_PARTIALS:
        return Payoff(PAYS, f"{name} = {n:,} partials: the one-program loop waits on {n:,} dependent loads; "
                      "atomics merge them as the blocks finish, and a launch goes")
    return Payoff(UNKNOWN, f"{name} = {n:,} partials: the serial loop is short; the gain is about one launch "
                  "(a few µs): measure it with `skel verify`")


SKELETON = Skeleton(
    id="atomic-amax-tensorwise-scale",
    title="Tensorwise quantisation scale: tl.atomic_max of block absmaxes instead of a one-program serial loop",
    summary="Merge block absmaxes with tl.atomic_max for a per-tensor scale; drop the one-program scalar loop.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    ruled_out_by=(r"\batomic[\s_-]?max\b", r"\batomics?\b"),
    present=ATOMIC_AMAX,
    preconditions=[SERIAL_MAX_LOOP, QUANT_SCALE],
    subject=SERIAL_MAX_LOOP,
    env=Env(),
    payoff=many_partials,
    helps=("latency",),
)
