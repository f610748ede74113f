"""Restore or zero in-place outputs between autotune trials (`restore_value` / `reset_to_zero`).

## What it does
Adds `restore_value=[...]` or `reset_to_zero=[...]` to `@triton.autotune`, naming the
pointer arguments the kernel updates in place or accumulates into with atomics.
Between benchmark trials the autotuner then copies the saved tensor back
(`restore_value`) or zeroes it (`reset_to_zero`), so every trial — and the final run —
starts from the same memory the caller passed in.

## Why it is faster
It is a *correctness* skeleton that makes autotuning possible at all for such kernels.
While tuning, the autotuner runs the kernel several times per config. A kernel that does
`x = load(p); store(p, f(x))` or `tl.atomic_add(p, v)` then compounds its effect: the
first real call returns garbage (the output was updated once per trial) even though
every config is individually correct. Without the restore the usual workaround is to
drop autotuning and hard-code one config, which gives up the speed autotuning buys.

## Applies when
- the kernel is `@triton.autotune`d with more than one config (a single config is never
  benchmarked, so no trial runs twice);
- and it calls `tl.atomic_*` (split-K / dW accumulation, counters) or loads and later
  stores through the same pointer argument (in-place update, `o += ...` accumulation,
  in-place gradient as in fused linear cross-entropy).

## Does not apply when
- the kernel is not autotuned, or has a single config;
- the configs already carry a `pre_hook` (e.g. one that zeroes the atomic target before
  each trial, as gemlite's split-K configs do): that is this technique, spelled per config —
  also when a helper function of the module builds the configs (`configs=gen_configs()`,
  `triton.Config(..., pre_hook=lambda nargs: nargs["c"].zero_())`, or `cfg.pre_hook = ...`
  set on the built configs);
- the output is only written (pure store): repeated trials overwrite it with the same
  values;
- the buffer is scratch the caller re-initialises anyway — then the restore only adds a
  copy per trial.
Costs: `restore_value` clones the named tensors before tuning (extra memory equal to
their size) and copies them back after every trial; it only affects the tuning run, not
later cached calls. Detection here is syntactic: a load and a later store whose pointer
expressions resolve to the same kernel argument.

## References
- FBGEMM `fbgemm_gpu/experimental/gemm/triton_gemm/grouped_gemm.py` (`_fbgemm_grouped_gemm`: `restore_value=["c_ptr"]`, since the fused scatter-add `tl.atomic_add`s into `c_ptr`)
- mamba `mamba_ssm/ops/triton/ssd_chunk_state.py` (`_chunk_cumsum_bwd_kernel`: every config's `pre_hook=init_to_zero(["dA_ptr", "ddt_bias_ptr"])` zeroes the `tl.atomic_add` targets before each trial)
- Triton `triton.autotune` documentation: `reset_to_zero`, `restore_value`
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import decorated
from skel.skeletons.patterns import decorators
from skel.skeletons.predicates.autotune import autotune_multi_config
from skel.skeletons.predicates.pointers import ACCUMULATES

if TYPE_CHECKING:
    from skel.kernels.model import Decorator, KernelFacts


def _multi_config(d: Decorator, k: KernelFacts) -> bool:
    """The kernel's (first) `@triton.autotune`, when it has more than one config."""
    return d is k.decorator("triton.autotune") and autotune_multi_config(k)


def _config_pre_hook(d: Decorator, k: KernelFacts) -> bool:
    return "pre_hook" in d.config_keys


MULTI_CONFIG_AUTOTUNE = decorators("triton.autotune", where=_multi_config, name="autotune-multi-config",
                                   describe="`@triton.autotune` with more than one config")
RESTORES = decorated("triton.autotune", kw="restore_value", name="autotune-restore-value",
                     describe="`@triton.autotune(restore_value=...)`") | decorated(
    "triton.autotune", kw="reset_to_zero", name="autotune-reset-to-zero",
    describe="`@triton.autotune(reset_to_zero=...)`") | decorated(
    # a Config(pre_hook=...) that zeroes or restores outputs before each trial does the same job
    "triton.autotune", name="autotune-config-pre-hook", describe="`triton.Config(..., pre_hook=...)` in the configs",
    where=_config_pre_hook)

SKELETON = Skeleton(
    id="autotune-restore-reset",
    title="restore_value / reset_to_zero for in-place autotuned kernels",
    summary="Autotuned kernels that accumulate in place or use atomics must restore/zero outputs between trials.",
    category=Category.TUNING,
    doc=__doc__,
    present=RESTORES,
    preconditions=[MULTI_CONFIG_AUTOTUNE, ACCUMULATES],
    subject=MULTI_CONFIG_AUTOTUNE,
    pays_in="correctness",
    env=Env(),
    helps=(),
)
