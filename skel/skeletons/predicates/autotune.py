"""``@triton.autotune``: its configs, its key and the meta-parameters it sets."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.conditions import decorated
from skel.skeletons.predicates.names import TILE_NAME

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

#: The kernel is decorated with ``@triton.autotune``: its tile sizes and launch options
#: are already measured, not hand-picked.
AUTOTUNED = decorated("triton.autotune", name="autotuned", describe="`@triton.autotune`")


def decorator_text(k: KernelFacts) -> str:
    """The kernel's decorators as written (everything above its ``def``)."""
    head, sep, _ = k.source.partition("\ndef ")
    return head if sep else ""


def autotune_text(k: KernelFacts) -> str:
    """The ``@triton.autotune(...)`` decorator text onwards ("" when not autotuned): the
    configs as written, for what the parsed decorator facts cannot see (configs spread
    with ``**kwargs``, built in a comprehension)."""
    text = decorator_text(k)
    i = text.find("autotune(")
    return text[i:] if i >= 0 else ""


def autotune_config_keys(k: KernelFacts) -> set[str]:
    """Every name set inside the autotune configs (meta-parameters and Config options).

    The facts' ``config_keys`` are empty when the decorator also spreads ``**kwargs``
    (FLA's ``**autotune_cache_kwargs``), so the decorator text is read as well."""
    d = k.decorator("triton.autotune")
    if d is None:
        return set()
    keys = set(d.config_keys)
    text = autotune_text(k)
    for body in re.findall(r"Config\(\s*\{([^{}]*)\}", text):
        keys.update(re.findall(r"['\"](\w+)['\"]\s*:", body))
    keys.update(re.findall(r"\b(num_warps|num_stages|num_ctas|maxnreg)\s*=", text))
    return keys


def autotune_key_names(k: KernelFacts) -> list[str]:
    """The argument names in ``@triton.autotune(key=[...])`` ([] when not autotuned): a new
    value of any of them re-runs the benchmark of every config."""
    d = k.decorator("triton.autotune")
    return [x.strip("'\" ") for x in d.list_items] if d else []


def autotune_multi_config(k: KernelFacts) -> bool:
    """More than one config (or configs we cannot count: generated or built elsewhere)."""
    d = k.decorator("triton.autotune")
    if d is None:
        return False
    if d.config_count > 1 or d.config_count == -1:
        return True
    text = autotune_text(k)
    if d.config_count == 1 and " for " not in text:
        return False
    configs = d.kwargs.get("configs", "")
    if configs.startswith("[") and " for " not in configs and configs.count("Config(") == 1:
        return False
    return bool(configs) or "Config(" in text


def tuned_meta_params(k: KernelFacts) -> set[str]:
    """Kernel constexpr parameters the autotuner sets (BLOCK sizes, flags)."""
    if k.decorator("triton.autotune") is None:
        return set()
    constexprs = {p.name for p in k.params if p.constexpr}
    tuned = autotune_config_keys(k) & constexprs
    if tuned or not k.launches or "Config(" in autotune_text(k):
        return tuned  # configs written out: their keys are the whole answer
    # configs built by a helper function: the tile params no launch passes are tuned
    # (only when every launch passes keywords we can see; `**kwargs` launches hide them)
    if any(not ln.kwargs for ln in k.launches):
        return set()
    passed = {kw for ln in k.launches for kw in ln.kwargs}
    heur = {x.strip("'\" ") for d in k.decorators if d.name == "triton.heuristics" for x in d.list_items}
    return {p for p in constexprs if TILE_NAME.fullmatch(p) and p not in passed and p not in heur}
