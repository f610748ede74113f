"""Programmatic Dependent Launch: overlap a small kernel's prologue with its predecessor's tail.

## What it does
Launches the kernel with `launch_pdl=True` and, inside it, calls
`tl.extra.cuda.gdc_wait()` before the first load of data the previous kernel in the
stream produced, and `tl.extra.cuda.gdc_launch_dependents()` as soon as the kernel no
longer needs to delay its successor (typically right after its own `gdc_wait()` or
early in the body). With PDL the driver may start this kernel while the previous one is
still finishing: index math, program-id decoding and loads of weights that nothing
upstream writes run before `gdc_wait()` returns.

## Why it is faster
Decode steps chain many tiny kernels (norm, rope, cache write, small GEMV-like ops),
each very short. Between two dependent launches the GPU normally drains
the first grid completely and only then ramps up the next: launch latency and the
prologue are paid serially per kernel. PDL overlaps them, which matters exactly when a
kernel's own runtime is comparable to that gap. Large kernels see no benefit.

## Applies when
- the kernel is a small, latency-bound launched kernel: a 1-D or 2-D grid (a row, or
  batch × head: `tl.program_id(0)` / `tl.program_id(1)` only), no loop over a runtime
  length, no `tl.dot`;
- it is not a backward/gradient kernel, and its file defines no autograd Function (no
  `ctx.save_for_backward`): PDL pays off in inference decode chains, not in training ops
  launched over every token of a step (row norms, activations, losses);
- target: NVIDIA sm_90+ (Hopper, Blackwell) with a Triton that has the GDC intrinsics
  and `launch_pdl` (Triton 3.3 or newer — approximate; check `triton.language.extra.cuda`).

## Does not apply when
- the grid has a third axis (tiles of a long sequence on top of batch and head), a loop
  over a runtime length or a `tl.dot`: the kernel is big enough to hide the launch gap;
- the kernel is large or long-running: the overlapped gap is negligible;
- the kernel is a serving engine's per-step bookkeeping (a module under `sample/`,
  `spec_decode/`, `speculative/`, `worker/`, `constrained/`, or a `metadata*.py` /
  `allocator.py`): it runs once per step between host work, not in a chain of per-layer
  kernels, so PDL hides one launch gap per step;
- the kernel belongs to a diffusion model's pipeline (a `diffusion/`, `multimodal_gen/`,
  `dits/` or `vaes/` folder): a denoising step is a few launches over thousands of image or
  video tokens each, where a launch gap is noise;
- any read of a predecessor's output happens before `gdc_wait()` — that is a race; put
  `gdc_wait()` before the first such load (the intrinsics are safe no-ops without PDL);
- the backend is ROCm, the GPU is pre-Hopper, or the kernel runs under an API that
  ignores the launch attribute; neighbouring kernels must also be PDL-launched for the
  chain to overlap.

## References
- Triton tutorial `11-programmatic-dependent-launch.py` (`add_kernel`, `USE_GDC`, `launch_pdl`)
- sglang `kernels/ops/attention/decode_attention.py` (stage-1 `gdc_launch_dependents`)
- sglang `kernels/ops/kvcache/mla_buffer.py` (`set_mla_kv_buffer_kernel`)
- vLLM `lora/ops/triton_ops/fused_moe_lora_op.py` (`_fused_moe_lora_kernel`)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, custom, launched_with, soft
from skel.skeletons.patterns import calls_where, file_calls, implies, kernel_named, launches, loops_where
from skel.skeletons.predicates.names import IDENT
from skel.skeletons.predicates.programs import KERNEL_ENTRY, program_axes
from skel.skeletons.predicates.workload import DIFFUSION_MODULE, STEP_MODULE

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts, Launch, Loop

_GDC = ("gdc_wait", "gdc_launch_dependents")
_BACKWARD = re.compile(r"(?i).*(bwd|backward|grad).*")


def _small_grid(k: KernelFacts) -> list[int] | None:
    """At most two grid axes. A decode kernel indexes (row) or (batch, head): 1-D and 2-D
    grids are both small, latency-bound launches. A third axis usually tiles a long
    sequence/feature dimension on top of batch and head — a bigger kernel where the
    overlapped launch gap is negligible."""
    axes = program_axes(k)
    return [c.line for c in k.calls_named("tl.program_id")] if axes and axes <= {0, 1} else None


def _runtime_trip_count(lp: Loop, k: KernelFacts) -> bool:
    """The loop's trip count is not a compile-time constant (or it is a `while` loop)."""
    if lp.kind == "tl.static_range":
        return False
    constexprs = {p.name for p in k.params if p.constexpr}
    return lp.kind == "while" or bool(set(IDENT.findall(" ".join(lp.args))) - constexprs - {"tl", "cdiv", "min", "max"})


_PDL_WORD = re.compile(r"(?i)pdl")


def _pdl_spread(ln: Launch) -> bool:
    """A `**` argument built for PDL: its name or where its dict comes from says so
    (sglang's `enable_pdl, pdl_kwargs = get_pdl_launch_metadata()`, then `**pdl_kwargs`)."""
    return any(_PDL_WORD.search(x) for x in (*ln.star_kwargs, *ln.star_sources))


def _spreads_pdl(ln: Launch, k: KernelFacts) -> bool:
    return _pdl_spread(ln)


#: `gdc_wait` / `gdc_launch_dependents`, however imported (`tl.extra.cuda.gdc_wait`, `gdc_wait`)
PDL_USED = calls_where(like=r"(?:.*\.)?(?:gdc_wait|gdc_launch_dependents)", name="gdc-intrinsics",
                       describe="`tl.extra.cuda.gdc_wait` / `gdc_launch_dependents` calls") | \
    launched_with("launch_pdl", name="launch-pdl") | launches(
    where=_spreads_pdl, name="pdl-kwargs", describe="a launch spreading PDL launch arguments (`**pdl_kwargs`)")
SMALL_GRID = custom("small-grid", "a 1-D or 2-D grid (`tl.program_id(0)` / `(1)` only)", _small_grid)
RUNTIME_LOOP = loops_where(where=_runtime_trip_count, name="runtime-loop", describe="loop over a runtime length")
DOT = calls("tl.dot", name="dot", describe="`tl.dot` call")
BACKWARD_KERNEL = kernel_named(_BACKWARD, name="backward-kernel",
                               describe="backward/gradient kernel (name has bwd/backward/grad)")

# A file that defines autograd Functions (`ctx.save_for_backward`) holds training ops:
# launched once per layer per step over all tokens, not chained small decode kernels.
TRAINING_OP_FILE = file_calls(r"save_for_backward$", lines=False, name="training-op-file",
                              describe="a file of training ops (it calls `ctx.save_for_backward`)")


def _pdl_launch(ln: Launch, k: KernelFacts) -> bool:
    """A launch passing `launch_pdl=` something other than False/0, or spreading PDL arguments."""
    return ln.kwargs.get("launch_pdl", "False").strip() not in ("False", "0") or _pdl_spread(ln)


def _is_gdc_wait(c: Call, k: KernelFacts) -> bool:
    return c.name.split(".")[-1] == "gdc_wait"


def _is_gdc(c: Call, k: KernelFacts) -> bool:
    return c.name.split(".")[-1] in _GDC


#: a launch in this file with `launch_pdl=True` (or `**pdl_kwargs`)
PDL_LAUNCH = launches(where=_pdl_launch, name="pdl-launch",
                      describe="a launch with `launch_pdl=True` (or spreading `**pdl_kwargs`)")
GDC_WAIT = calls_where(where=_is_gdc_wait, name="gdc-wait", describe="a `gdc_wait()` call")
GDC_CALLS = calls_where(where=_is_gdc, name="gdc-calls", describe="`gdc_wait` / `gdc_launch_dependents` calls")
FILE_LAUNCHES = launches(name="file-launches", describe="a launch in the kernel's file")

#: Launched with `launch_pdl=True` here, the kernel waits (`gdc_wait`) before it reads a
#: predecessor's output; without the wait those reads race the previous kernel.
WAITS = implies(PDL_LAUNCH, GDC_WAIT, name="gdc-wait-when-pdl",
                describe="a `gdc_wait()` before the first read of a predecessor's output "
                "(the kernel is launched with `launch_pdl=True`)")
#: The kernel calls the GDC intrinsics and a launch in this file passes `launch_pdl=True`
#: (without it they are no-ops). A kernel launched from elsewhere counts as launched right.
LAUNCHED_PDL = implies(GDC_CALLS & FILE_LAUNCHES, PDL_LAUNCH, name="launch-pdl-when-gdc",
                       describe="a launch with `launch_pdl=True` (the kernel's `gdc_*` calls are no-ops without it)")


SKELETON = Skeleton(
    id="launch-pdl",
    title="Programmatic Dependent Launch (launch_pdl + gdc_wait)",
    summary="Launch small decode kernels with launch_pdl=True and gdc_wait/gdc_launch_dependents to overlap launches.",
    category=Category.HOST,
    doc=__doc__,
    ruled_out_by=(r"\bPDL\b", r"programmatic dependent launch", r"launch_pdl", r"gdc_(wait|launch)"),
    present=PDL_USED,
    # a runtime-length loop makes the kernel longer, not unfit: a near miss
    preconditions=[KERNEL_ENTRY, SMALL_GRID, soft(~RUNTIME_LOOP), ~DOT, ~BACKWARD_KERNEL, ~TRAINING_OP_FILE,
                   ~STEP_MODULE, ~DIFFUSION_MODULE],
    subject=SMALL_GRID,
    env=Env(backends=("cuda",), min_cc=90, triton=">=3.3"),
    helps=("latency",),
    refine=[WAITS, LAUNCHED_PDL],
)
