"""Software-pipeline tile loads across loop iterations with `num_stages`.

## What it does
Sets the pipeline depth of the kernel's main loop explicitly: `num_stages=` in the
autotune `triton.Config(...)`s (tuned together with the tiles), at the launch
(`kernel[grid](..., num_stages=3)`), or per loop with `tl.range(lo, hi, step,
num_stages=k)`. Triton's software pipeliner then keeps `k - 1` iterations of loads in
flight (cp.async on Ampere, TMA/async copies on Hopper) into multi-buffered shared
memory while the current iteration computes.

## Why it is faster
A loop that loads a tile and then uses it waits for global-memory latency on every
iteration unless the loads are issued ahead. Multi-buffering overlaps the next tiles'
loads with this tile's math (`tl.dot`, reductions), which is what lets a K-loop or a
recurrent scan approach bandwidth or tensor-core peak. The right depth depends on
tile size and SMEM: too shallow leaves latency exposed, too deep runs out of shared
memory or lowers occupancy — hence tuning it rather than relying on the backend default
(`num_stages=3` in the NVIDIA backend options of Triton 3.7).

## Applies when
- the kernel has a `range`/`tl.range` loop whose body loads tiles with `tl.load` and
  feeds them to `tl.dot` (the case the pipeliner handles best), or streams 2-D tiles
  (broadcast offsets or block pointers) over a runtime-length dimension;
- no `num_stages` is set anywhere (configs, launch, or loop).

## Does not apply when
- the launch config comes from a tuned table: `kernel[grid](..., **config)` with the dict
  from a lookup (`get_config(M, E)`, `try_get_optimal_moe_config(...)`), a JSON file the
  module loads, or a table-format literal (`BLOCK_SIZE_*` keys, or both `num_warps` and
  `num_stages`); or JSON tables in a `configs/` folder beside the file. The table is
  already per-shape, per-GPU measurement (a plain `**kwargs` of a hand-set value or two
  does not count);
- the loop is a `tl.static_range` (unrolled, nothing to pipeline) or a `while` loop;
- each iteration's load address depends on the previous iteration's result (pointer
  chasing, data-dependent indices): nothing can be issued ahead;
- SMEM is already the limit (large tiles with many stages fail with "out of resources";
  prune those configs);
- on backends without async copies (pre-Ampere NVIDIA) the extra stages buy little;
  on AMD the meaning of `num_stages` differs (stream-pipeliner depth) — tune it there
  separately.
- on an H200 with Triton 3.6, raising a fp16 GEMM from the default 3 stages to 4 measured no effect
  (1.01×, `benchmarks/results/gpu-2026-12-01-catalog/verify_catalog_2026-12-01.md`): the default already pipelines a plain K loop.

## References
- flash-linear-attention `fla/ops/common/chunk_h.py` (`chunk_fwd_kernel_h`: `num_stages in [2, 3, 4]` autotuned with `BK`/`BV` over the `for i_t in range(NT)` loop of `tl.dot`s) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/generalized_delta_rule/dplr/chunk_h_fwd.py` (`chunk_dplr_fwd_kernel_h`) — at `49b00f0a94`, before 2025-07-01
- Triton tutorial `02-fused-softmax.py` (`softmax_kernel`, `tl.range(..., num_stages=num_stages)`)
"""

from __future__ import annotations

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import LAUNCH_CONFIG_DICT, custom, launched_with, loop, soft
from skel.skeletons.predicates.autotune import autotune_config_keys
from skel.skeletons.predicates.names import IDENT


def _config_num_stages(k):
    if "num_stages" in autotune_config_keys(k):
        return [k.decorator("triton.autotune").line]
    return None


def _jit_num_stages(k):
    return [d.line for d in k.decorators if "num_stages" in d.kwargs] or None


def _is_tile_load(call, k) -> bool:
    """A 2-D tile load: broadcast offsets (``[:, None]``) or a block pointer, directly or via
    the local variable holding the pointer."""
    ptr = call.args[0] if call.args else ""
    texts = [ptr]
    head = IDENT.match(ptr.strip())
    if head:
        texts += [a.value for a in k.assigns if head.group(0) in a.targets]
    return any("None]" in t or "make_block_ptr" in t or "make_tensor_descriptor" in t for t in texts)


def pipelinable_loops(k) -> list[int]:
    """`range`/`tl.range` loops whose loads feed a `tl.dot`, or that stream 2-D tiles over a
    runtime-length dimension (a bound that is not a compile-time constant)."""
    constexprs = {p.name for p in k.params if p.constexpr}
    out = []
    for lp in k.loops:
        if lp.kind not in ("range", "tl.range"):
            continue
        inside = [c for c in k.calls if lp.line <= c.line <= lp.end_line]
        loads = [c for c in inside if c.name == "tl.load"]
        if not loads:
            continue
        if any(c.name == "tl.dot" for c in inside):
            out.append(lp.line)
            continue
        bound = set(IDENT.findall(" ".join(lp.args))) - {"tl", "cdiv", "min", "max"}
        if bound - constexprs and any(_is_tile_load(c, k) for c in loads):
            out.append(lp.line)
    return out


STAGES_SET = (
    custom("autotune-num-stages", "autotune configs setting `num_stages`", _config_num_stages, signature=True)
    | launched_with("num_stages", name="launch-num-stages")
    | loop(kind="tl.range", kw="num_stages", name="tl-range-num-stages",
           describe="`tl.range(..., num_stages=)`")
    | custom("jit-num-stages", "`num_stages` on the jit decorator", _jit_num_stages)
)
PIPELINABLE_LOOP = custom("pipelinable-load-loop",
                          "a loop loading tiles that feed `tl.dot` or stream 2-D tiles over a runtime length",
                          pipelinable_loops)

LOADING_LOOP = loop(kind=("range", "tl.range"), containing="tl.load", name="loading-loop",
                    describe="a `range` loop calling `tl.load`")

SKELETON = Skeleton(
    id="num-stages-pipelining",
    title="Software pipelining with num_stages",
    summary="Set/tune num_stages (configs, launch or tl.range) so tile loads of later iterations overlap compute.",
    category=Category.TUNING,
    doc=__doc__,
    ruled_out_by=(r"\bnum_?stages\b", r"\bpipelin\w*", r"\bsoftware[\s-]pipelin\w*"),
    present=STAGES_SET,
    # any loop that loads can be pipelined; 2-D tiles, a `tl.dot` or a runtime bound are
    # where it pays most, so a plain loading loop is a near miss
    preconditions=[soft(PIPELINABLE_LOOP, relaxed=LOADING_LOOP), ~LAUNCH_CONFIG_DICT],
    env=Env(),
    helps=("memory", "latency"),
)
