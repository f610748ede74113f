"""Programmatic Dependent Launch in CUDA C++: overlap a small kernel's launch and prologue with its predecessor's tail.

## What it does
The host launches the kernel with `cudaLaunchKernelEx` and the PDL launch attribute:

    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr; cfg.numAttrs = 1;
    cudaLaunchKernelEx(&cfg, kernel, args...);

and inside the kernel, work that does not depend on the previous kernel (index math, loads of
weights, shared-memory setup) runs first, then

    cudaGridDependencySynchronize();          // PTX: griddepcontrol.wait
    ... read the previous kernel's output ...
    cudaTriggerProgrammaticLaunchCompletion(); // PTX: griddepcontrol.launch_dependents

The wait blocks until the predecessor grid has completed and its memory is visible; the
trigger lets the *next* PDL-launched kernel start its own prologue early.

## Why it is faster
A decode step chains dozens of tiny kernels (norms, rope, residual adds, quantisation,
small GEMVs), each a few microseconds long. Without PDL the GPU drains one grid completely,
then launches and ramps up the next: the launch latency and the prologue are paid serially
for every kernel. With PDL the dependent grid is scheduled while the primary finishes, so
those gaps overlap — worth a few percent to ~10% of a decode step made of short kernels,
and nothing for kernels that run long enough to hide the gap.

## Applies when
- the kernel is a small, latency-bound `__global__` kernel: a 1-D or 2-D grid (`blockIdx.x`,
  `blockIdx.y`, no `blockIdx.z`), no per-thread loop over a runtime length (loops strided
  by `blockDim.x` that cover a row cooperatively are fine), no GEMM tile (tensor-core MMAs or a
  shared-memory K loop);
- it is launched in this file (`kernel<<<grid, block, smem, stream>>>(...)` or
  `cudaLaunchKernelEx`), so the launch attribute can be added there;
- it is not a backward/gradient kernel (training steps are long; PDL pays in decode chains);
- target: NVIDIA sm_90+ (Hopper, Blackwell); the neighbouring kernels in the stream should be
  PDL-launched too (and call the trigger) for a chain to overlap.

## Does not apply when
- the kernel is long (a loop over the sequence or K per thread, a third grid axis, a GEMM
  tile): the overlapped gap is negligible;
- any read of the previous kernel's output happens before the wait: that is a race. Put
  `cudaGridDependencySynchronize()` before the first such read; without the attribute it
  returns at once, so it is safe to leave in;
- the previous kernel in the stream is a library call or a host operation that ignores PDL,
  or the launches go through an API that drops the attribute (older graph captures);
- pre-Hopper GPUs or ROCm.
When PDL is half done, the skeleton is suggested as a refinement: a launch sets the attribute
but the kernel never waits (it races its predecessor), or the kernel waits but no launch in
this file sets the attribute (the wait is a no-op and nothing overlaps).

## References
- sglang wheel `sglang/kernels/jit/csrc/moe/moe_finalize_fuse_shared.cu` (`cudaGridDependencySynchronize`, `cudaTriggerProgrammaticLaunchCompletion`, `cudaLaunchAttributeProgrammaticStreamSerialization`)
- sglang wheel `sglang/kernels/jit/include/sgl_kernel/utils.cuh` (`PDLWaitPrimary`/`PDLTriggerSecondary`: `griddepcontrol.wait`/`.launch_dependents`; `LaunchKernel::enable_pdl`)
- sglang wheel `sglang/kernels/jit/csrc/deepseek_v4/block_amax.cuh` (`amax8_varlen_kernel`: wait before reading the previous kernels' outputs)
- DeepGEMM `deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d1d.cuh` (`cudaGridDependencySynchronize()` after the prologue) and `csrc/jit/handle.hpp` (launch attributes)
- CUDA C++ Programming Guide, "Programmatic Dependent Launch and Synchronization" (https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/programmatic-dependent-launch.html)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import IDENT, custom, soft
from skel.skeletons.patterns import absent, any_of, calls_where, implies, kernel_named, launches, loops_where
from skel.skeletons.predicates.cuda_tiles import gemm_like_lines, is_kernel

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts, Launch, Loop

#: In-kernel PDL calls: the CUDA runtime device API, the PTX instructions, CUTLASS's and
#: hand-written wrappers (sglang `PDLWaitPrimary<kUsePDL>()`, `pdl_wait()`).
_WAIT_NAME = re.compile(r"(?i)cudaGridDependencySynchronize|\w*pdl_?wait\w*|\w*wait_?primary\w*|"
                        r"wait_on_dependent_grids|griddepcontrol_?wait|gdc_wait")
_TRIGGER_NAME = re.compile(r"(?i)cudaTriggerProgrammaticLaunchCompletion|\w*pdl_?(trigger|launch)\w*|"
                           r"\w*trigger_?secondary\w*|launch_dependent_grids|griddepcontrol_?launch_dependents|"
                           r"gdc_launch_dependents")
#: The host side: the launch attribute (or its field) in the launching function.
_PDL_ATTR = re.compile(r"cudaLaunchAttributeProgrammatic(StreamSerialization|Event)|"
                       r"CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION|programmaticStreamSerializationAllowed")
_ATTR_ID = re.compile(r"cudaLaunchAttribute[A-Z]\w+|CU_LAUNCH_ATTRIBUTE_\w+")
_BACKWARD = re.compile(r"(?i).*(bwd|backward|grad).*")
#: Names that are compile-time in C++ convention: kBlock, BLOCK_SIZE, WARP_SIZE (one capital
#: letter is not: M, N, K are a GEMM's runtime sizes).
_CONST_NAME = re.compile(r"k[A-Z]\w*|[A-Z][A-Z0-9_]+")
_BUILTIN = {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "x", "y", "z", "sizeof", "int",
            "unsigned", "uint32_t", "int64_t", "size_t", "auto", "const", "min", "max", "std"}


def _last(name: str) -> str:
    return re.split(r"::|\.", name)[-1]


def _is_wait(c: Call, k: KernelFacts) -> bool:
    """`cudaGridDependencySynchronize`, `griddepcontrol.wait` or a wrapper of it."""
    return c.name == "ptx:griddepcontrol.wait" or bool(_WAIT_NAME.fullmatch(_last(c.name)))


def _is_trigger(c: Call, k: KernelFacts) -> bool:
    """`cudaTriggerProgrammaticLaunchCompletion`, `griddepcontrol.launch_dependents` or a wrapper."""
    return c.name == "ptx:griddepcontrol.launch_dependents" or bool(_TRIGGER_NAME.fullmatch(_last(c.name)))


def _pdl_launch(ln: Launch) -> bool:
    return any(_PDL_ATTR.fullmatch(n) or _PDL_ATTR.fullmatch(_last(n)) for n in (*ln.host_names, *ln.host_calls))


def _maybe_pdl_launch(ln: Launch) -> bool:
    """The PDL attribute is set, or may be: a `cudaLaunchKernelEx` whose attribute array the
    launching function takes from its caller (`cfg.attrs = attrs;`, no attribute id named in
    it), as sglang's `dispatchFinalize` does. A `<<<...>>>` launch never carries it."""
    if _pdl_launch(ln):
        return True
    names = set(ln.host_names)
    return ln.kwargs.get("via", "").startswith(("cudaLaunchKernelEx", "cuLaunchKernelEx")) and \
        bool(names & {"attrs", "numAttrs"}) and not any(_ATTR_ID.fullmatch(n) for n in names)


def _small_grid(k: KernelFacts) -> list[int] | bool | None:
    """A 1-D or 2-D grid: `blockIdx.z` never read (a kernel reading no `blockIdx` at all runs
    one CTA, or the same work in every CTA: the smallest grid there is)."""
    if "blockIdx.z" in k.attributes:
        return None
    return [k.attributes[a] for a in ("blockIdx.x", "blockIdx.y") if a in k.attributes] or True


def _runtime_loop(lp: Loop, k: KernelFacts) -> bool:
    """A loop a thread runs over a runtime length: `while`/`do`, or a `for` whose condition
    reads a runtime value and whose step is not a block/grid stride (a loop strided by
    `blockDim.x` covers a row cooperatively: each thread runs it a few times)."""
    if lp.kind in ("while", "do"):
        return True
    if lp.kind != "for" or len(lp.args) < 3:
        return False
    init, cond, update = lp.args[:3]
    if re.search(r"\b(blockDim|gridDim)\b", update):
        return False
    consts = {p.name for p in k.params if p.constexpr}
    loop_vars = set(IDENT.findall(init.split("=")[0])) | set(IDENT.findall(update.split("=")[0]))
    names = set(IDENT.findall(re.sub(r"\b\d\w*", "", cond))) - loop_vars - consts - _BUILTIN
    return any(not _CONST_NAME.fullmatch(n) for n in names)


def _sets_pdl(ln: Launch, k: KernelFacts) -> bool:
    """A launch that sets the PDL attribute."""
    return _pdl_launch(ln)


def _may_set_pdl(ln: Launch, k: KernelFacts) -> bool:
    """A launch that sets the PDL attribute, or may (``_maybe_pdl_launch``)."""
    return _maybe_pdl_launch(ln)


def _global_kernel(k: KernelFacts) -> bool | None:
    """A `__global__` kernel (a whole-unit fact: no lines of its own)."""
    return is_kernel(k) or None


KERNEL = custom("cuda-kernel", "a `__global__` kernel", _global_kernel, signature=True)
WAIT_CALLS = calls_where(where=_is_wait, name="pdl-wait-call",
                         describe="a `cudaGridDependencySynchronize`/`griddepcontrol.wait` call")
TRIGGER_CALLS = calls_where(where=_is_trigger, name="pdl-trigger-call",
                            describe="a `cudaTriggerProgrammaticLaunchCompletion`/`griddepcontrol.launch_dependents`"
                            " call")
PDL_LAUNCHES = launches(where=_sets_pdl, name="pdl-launch",
                        describe="a launch with `cudaLaunchAttributeProgrammaticStreamSerialization`")
PDL_USED = any_of(
    WAIT_CALLS, TRIGGER_CALLS, PDL_LAUNCHES,
    name="pdl",
    describe="PDL: `cudaGridDependencySynchronize`/`griddepcontrol.wait` in the kernel or a launch with "
    "`cudaLaunchAttributeProgrammaticStreamSerialization`")
SMALL_GRID = custom("small-grid", "a 1-D or 2-D grid (`blockIdx.x`/`blockIdx.y`, no `blockIdx.z`)", _small_grid)
RUNTIME_LOOP = loops_where(where=_runtime_loop, name="runtime-loop", describe="a per-thread loop over a runtime length")
def _gemm_like(k: KernelFacts) -> list[int]:
    """MMAs, or shared tiles feeding a multiply-accumulate K loop (``gemm_like_lines``)."""
    return gemm_like_lines(k)


GEMM_LIKE = custom("tiled-gemm-body", "a tiled GEMM-like body (tensor-core MMAs or a shared-memory K loop)",
                   _gemm_like)
BACKWARD_KERNEL = kernel_named(_BACKWARD, name="backward-kernel",
                               describe="backward/gradient kernel (name has bwd/backward/grad)")
LAUNCHED_HERE = launches(name="launched-here", describe="a launch in this file (`<<<...>>>` or `cudaLaunchKernelEx`)")
#: Launched here with the PDL attribute, the kernel waits (`cudaGridDependencySynchronize` /
#: `griddepcontrol.wait`) before it reads the previous kernel's output: without the wait
#: those reads race the predecessor.
WAITS = implies(PDL_LAUNCHES, WAIT_CALLS,
                name="pdl-wait-when-launched-pdl", describe="a `cudaGridDependencySynchronize()` before the first "
                "read of the previous kernel's output (the kernel is launched with the PDL attribute)")
#: The kernel calls the PDL device API and a launch in this file sets the attribute (without
#: it the calls are no-ops). A kernel launched from elsewhere, or through an attribute array
#: handed in by the caller, counts as launched right.
LAUNCHED_PDL = implies(
    any_of(WAIT_CALLS, TRIGGER_CALLS, name="pdl-device-calls",
           describe="PDL device calls (`cudaGridDependencySynchronize`, `cudaTriggerProgrammaticLaunchCompletion`)"),
    absent(LAUNCHED_HERE, name="launched-elsewhere", describe="no launch in this file")
    | launches(where=_may_set_pdl, name="maybe-pdl-launch",
               describe="a launch that sets the PDL attribute, or takes its attribute array from the caller"),
    name="pdl-launch-when-waiting", describe="a launch with `cudaLaunchAttributeProgrammaticStreamSerialization` "
    "(the kernel's PDL calls are no-ops without it)")

SKELETON = Skeleton(
    id="cuda-programmatic-dependent-launch",
    title="Programmatic Dependent Launch (cudaLaunchKernelEx + cudaGridDependencySynchronize)",
    summary="Launch small CUDA kernels with the PDL attribute and wait in-kernel, so launches overlap the previous tail.",
    category=Category.HOST,
    doc=__doc__,
    ruled_out_by=(r"\bPDL\b", r"programmatic dependent launch", r"griddepcontrol", r"GridDependencySynchronize"),
    present=PDL_USED,
    # a per-thread runtime loop makes the kernel longer, not unfit; a launch in another file
    # can take the attribute there: both near misses
    preconditions=[KERNEL, SMALL_GRID, soft(~RUNTIME_LOOP), ~GEMM_LIKE, ~BACKWARD_KERNEL, soft(LAUNCHED_HERE)],
    subject=KERNEL,
    languages=("cuda",),
    env=Env(backends=("cuda",), min_cc=90),
    helps=("latency",),
    refine=[WAITS, LAUNCHED_PDL],
)
