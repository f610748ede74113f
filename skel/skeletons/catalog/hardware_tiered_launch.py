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
- the kernel is not autotuned, and a launch in the same file passes a literal
  `num_warps=`/`num_stages=` or a literal tile size (`BLOCK_SIZE=1024`, `BK=64`);
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
- the tile size is fixed by the algorithm (chunk size shared with other kernels, a block
  that must cover the whole row);
- the table is not maintained: stale thresholds silently pessimise new GPUs. Prefer
  thresholds on measured resources (SMEM bytes) over architecture names.
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

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import LAUNCH_CONFIG_DICT, custom
from skel.skeletons.predicates.autotune import AUTOTUNED
from skel.skeletons.predicates.names import TILE_NAME

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


def _meta_kwargs(launch) -> dict[str, str]:
    return {kw: v for kw, v in launch.kwargs.items() if kw in LAUNCH_META or TILE_NAME.fullmatch(kw)}


def _tiered_launches(k):
    lines = []
    for ln in k.launches:
        meta = _meta_kwargs(ln)
        if any(HW_QUERY.search(v) for v in meta.values()):
            lines.append(ln.line)  # num_warps=32 if not is_hip() else 16
            continue
        computed = [v for v in meta.values() if not _LITERAL.fullmatch(v.strip())]
        if not computed:
            continue
        # the launching function queried the hardware (directly or through a helper name)
        if any(HW_QUERY.search(x) for x in (*ln.host_calls, *ln.host_names)):
            lines.append(ln.line)
    return lines or None


def _literal_launches(k):
    return [ln.line for ln in k.launches
            if any(_LITERAL.fullmatch(v.strip()) for v in _meta_kwargs(ln).values())] or None


TIERED_LAUNCH = custom("hardware-tiered-launch",
                       "a launch whose num_warps/num_stages/tile arguments come from a hardware query",
                       _tiered_launches)
LITERAL_META_LAUNCH = custom("literal-launch-meta",
                             "a launch with a literal `num_warps`/`num_stages` or tile size", _literal_launches)

SKELETON = Skeleton(
    id="hardware-tiered-launch",
    title="Per-architecture launch configuration",
    summary="Choose BLOCK/num_warps/num_stages from device capability or SMEM in the launcher, not one literal config.",
    category=Category.HOST,
    doc=__doc__,
    ruled_out_by=(r"\bhardware[\s_-]*tier\w*", r"\btiered launch\w*", r"\bper[\s-]arch(itecture)? (launch|config)\w*"),
    present=TIERED_LAUNCH,
    preconditions=[~AUTOTUNED, LITERAL_META_LAUNCH, ~LAUNCH_CONFIG_DICT],
    env=Env(),
    helps=("occupancy", "memory", "compute"),
)
