"""Read launch configs from offline-tuned, per-device / per-shape JSON tables instead of tuning at run time.

## What it does
A serving GEMM (a linear layer, a fused MoE) sees one weight shape per model and a token
count M that changes every step. An offline script benchmarks the configs for each
`(N, K)` on each GPU and writes a table such as
`E=64,N=1024,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json`:

    {"1": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "num_warps": 4, "num_stages": 4},
     "64": {...}, "4096": {...}}

At run time an `lru_cache`d loader builds the file name from the shape and
`torch.cuda.get_device_name()`, `json.load`s it once, picks the entry with the nearest M
(`min(configs, key=lambda m: abs(m - M))`) and launches `kernel[grid](..., **config)`,
falling back to a default config when no table exists for the device.

## Why it is faster
`@triton.autotune` benchmarks every config on the first call of each key: seconds of
stalls in a serving process each time a new batch size (or a new key) appears, repeated
in every process, and tuning inside CUDA-graph capture is not possible. A hand-written
config or a few `if M <= 32` branches is tuned for one GPU at best. The table gives
autotune-quality configs per device and per M bucket at the cost of a dict lookup, and
tuning runs once, offline (`benchmark_moe.py --tune`-style scripts).

## Applies when
- the kernel is a GEMM over a weight of fixed shape (parameters `N` and `K`, a `tl.dot` K
  loop) launched from this file, and
- its launch configs are tuned at run time (`@triton.autotune` with several configs), or
  hand-picked in the launcher as a config dict it spreads (`**config`, built by a
  `get_default_config(M)`), with no tuned table behind them.

## Does not apply when
- the file already reads tuned tables (`json.load` of a `get_config_file_name(...)` /
  device-named file): refine the table instead (more M buckets, a new device);
- training or research kernels whose shapes vary in every dimension (chunked recurrences,
  attention): a table keyed by (N, K, device) has no entry for them, runtime autotune with
  a bucketed key is simpler;
- the kernel is not launched from this file (library kernels): wire the table where the
  launcher lives.
Keep a default for devices without a table, key the file by everything that changes the
best config (dtype, block shape, Triton version), and cache the loaded table.

## References
- vLLM `vllm/model_executor/layers/fused_moe/fused_moe.py` (`get_config_file_name`, `get_moe_configs`, `try_get_optimal_moe_config`)
- vLLM `vllm/model_executor/layers/quantization/utils/fp8_utils.py` (`get_w8a8_block_fp8_configs`)
- SGLang `python/sglang/srt/layers/moe/moe_runner/triton_utils/fused_moe_triton_config.py` (`get_config_file_name`)
- aiter `aiter/ops/triton/gemm_a8w8_blockscale.py` (`_get_config`: `{dev}-GEMM_BLOCKSCALE-A8W8.json`; commit 3703a6e300fce12ea1a683641ee50a31cb666a55, 2025-06-26)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import decorators, launches
from skel.skeletons.predicates.autotune import autotune_multi_config
from skel.skeletons.predicates.dots import GEMM_LOOP
from skel.skeletons.predicates.softmax_loops import ONLINE_SOFTMAX_LOOP

if TYPE_CHECKING:
    from skel.kernels.model import Decorator, KernelFacts, Launch

_TABLE_READ = re.compile(r"(^|\.)(json\.loads?|yaml\.(safe_)?load|load_json\w*|read_json\w*)$")
_TABLE_NAME = re.compile(r"(?i)(^|\.)(\w*get_device_name|\w*device_name|\w*config_file\w*|get_\w*configs?|"
                         r"\w*get_device|\w*tuned_config\w*)$")


def _tuned_table(k: KernelFacts) -> list[int]:
    """The file loads a config table (`json.load`) and names it by device or shape
    (`get_config_file_name`, `torch.cuda.get_device_name`, `get_*_configs`): both kinds of
    host call, or neither counts."""
    reads = [line for name, line in k.module_calls.items() if _TABLE_READ.search(name)]
    named = [line for name, line in k.module_calls.items() if _TABLE_NAME.search(name)]
    return reads + named if reads and named else []


def _several_configs(d: Decorator, k: KernelFacts) -> bool:
    """The autotune decorator tunes over several configs."""
    return autotune_multi_config(k)


def _weight_gemm(k: KernelFacts) -> list[int]:
    """A GEMM over a weight of shape (N, K): parameters named `N` and `K` (vLLM, SGLang,
    aiter, lmdeploy linear and MoE kernels). The table key is (N, K, device); chunked
    recurrences and attention (`K`, `V`, `BT`) have no fixed weight shape to key on."""
    names = {p.name for p in k.params}
    return [k.line_start] if {"N", "K"} <= names else []


#: Attention's tiles follow the head dim and the arch, not a weight shape.
NOT_ATTENTION = ~ONLINE_SOFTMAX_LOOP
TUNED_TABLE = custom("tuned-config-table",
                     "configs read from a tuned table file (`json.load` of a device/shape-named file)", _tuned_table)
LAUNCHED_HERE = launches(own=True, name="launched-here", describe="a launch of the kernel in its own file")
WEIGHT_GEMM = custom("weight-gemm", "a GEMM over a weight of shape (N, K) (parameters `N` and `K`)", _weight_gemm,
                     signature=True)
_DEFAULT_GETTER = re.compile(r"(?i)(^|\.)\w*(default|heuristic|fallback)\w*config\w*$")
_TUNED_GETTER = re.compile(r"(?i)(^|\.)(\w*(optimal|tuned|best)\w*config\w*|get_config_file_name|get_\w*_configs)$")


def _default_config_dict(ln: Launch, k: KernelFacts) -> bool:
    """`kernel[grid](..., **config)` with `config = get_default_config(M, ...)`: a hand-written
    per-shape choice in code (a `config` passed in by the caller may come from a table)."""
    return bool(ln.star_kwargs) and any(_DEFAULT_GETTER.search(c) for c in ln.host_calls)


def _tuned_getter(ln: Launch, k: KernelFacts) -> bool:
    """The launcher gets its config from a tuned-table getter (`try_get_optimal_moe_config`,
    `get_moe_configs`), whose table file may live in another module."""
    return any(_TUNED_GETTER.search(c) for c in ln.host_calls)


PICKED_AT_RUN_TIME = decorators(
    "triton.autotune", where=_several_configs, name="runtime-autotune",
    describe="`@triton.autotune` over several configs (tuned on the first call of each key)") | launches(
    own=True, where=_default_config_dict, name="default-config-dict",
    describe="a launch spreading a hand-written default config (`**get_default_config(M)`)")

SKELETON = Skeleton(
    id="offline-tuned-configs",
    title="Offline-tuned config tables per device and shape",
    summary="Launch configs from offline-tuned per-device/per-shape JSON tables (`**config`), not runtime autotune.",
    category=Category.HOST,
    doc=__doc__,
    present=TUNED_TABLE | launches(own=True, where=_tuned_getter, name="tuned-config-getter",
                                   describe="configs from a tuned-table getter (`try_get_optimal_moe_config`)"),
    preconditions=[GEMM_LOOP, WEIGHT_GEMM, NOT_ATTENTION, LAUNCHED_HERE, PICKED_AT_RUN_TIME],
    subject=GEMM_LOOP,
    env=Env(),
    helps=("latency", "compute"),
)
