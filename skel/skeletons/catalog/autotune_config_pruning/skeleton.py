"""Prune the autotune config space before it is benchmarked.

## What it does
An `@triton.autotune` whose configs are the full cross product of tile sizes, warps and
stages (`for BK in [32, 64, 128] for BV in [32, 64, 128] for num_warps in [2, 4, 8]
for num_stages in [2, 3, 4]`: 81 configs) is cut down before any config runs:

- `prune_configs_by={'early_config_prune': fn}`, where `fn(configs, named_args, **kw)`
  drops configs whose tiles exceed the problem (`BLOCK_M > M`), whose shared memory
  (`(BM * BK + BK * BN) * bytes * num_stages`) exceeds the device, or that are known bad;
- or config lists filtered where they are written: a comprehension with an `if` clause
  (`if BK * BV <= 128 * 64`), or lists chosen by the hardware
  (`BK_LIST = [32, 64] if check_shared_mem() else [16, 32]`,
  `num_warps in [1, 2, 4] + ([8] if check_shared_mem('hopper') else [])`).

## Why it is faster
The autotuner compiles and times every config on the first call of each key; with 81
configs that is tens of seconds per new key, paid in every process and on every new
length bucket. Configs whose multi-buffered tiles do not fit shared memory fail with
`OutOfResources` (Triton skips them, but only after compiling them), and on a smaller
GPU (sm_86/sm_89: 100 KB vs 228 KB on H100) a config tuned for Hopper may be the one
that fails. Pruning keeps the configs that can win: first-call time drops with the
config count, and no launch is attempted that cannot fit. Steady-state kernel time is
unchanged when the pruned configs could not have won.

## Applies when
- the kernel is autotuned over a large config space (16 or more configs written as
  literal lists or a written-out list);
- the space sweeps two or more shared-memory-sized parameters: tile sizes (`BLOCK_*`,
  `BK`, `BV`) and `num_stages`, whose product is what overflows shared memory.

## Does not apply when
- the configs are already pruned: `prune_configs_by=`, a filtering `if` in the config
  comprehension, or lists that depend on a hardware query (`check_shared_mem`,
  `get_device_capability`, `is_hip`, `IS_NVIDIA_HOPPER`);
- the config space is small (a handful of configs tunes in a second);
- the configs come from a helper or a list defined elsewhere (`configs=get_configs()`,
  `for BK in BK_LIST`): static code cannot count them, and such helpers usually filter
  already;
- pruning by problem size must not remove the only config valid for an edge shape:
  keep at least one config for every key (an empty list raises in the autotuner).

## References
- Triton `python/triton/ops/matmul.py` (Triton 2.x: `_kernel` autotuned with
  `prune_configs_by={'early_config_prune': early_config_prune, 'perf_model': estimate_matmul_time}`)
- flash-linear-attention `fla/ops/gla/chunk.py` (`BK_LIST = [32, 64] if check_shared_mem() else [16, 32]`, — at `49b00f0a94`, before 2025-07-01
  used by `chunk_gla_bwd_kernel_dv`, v0.2.2)
- flash-linear-attention `fla/ops/attn/parallel.py` (`parallel_attn_fwd_kernel`: — at `49b00f0a94`, before 2025-07-01
  `num_warps in [1, 2, 4] + ([8] if check_shared_mem('hopper') else [])`, v0.2.2)
- FlagGems `src/flag_gems/runtime/backend/_cambricon/ops/mv.py` (`config_prune` passed as — at `a8f6d603ef`, before 2025-07-01
  `early_config_prune`, commit a8f6d603efb6)
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.patterns import decorators
from skel.skeletons.predicates.autotune import AUTOTUNED, autotune_config_keys, autotune_text
from skel.skeletons.predicates.names import TILE_NAME

if TYPE_CHECKING:
    from skel.kernels.model import Decorator, KernelFacts

#: Hardware queries that choose config lists (shared memory, architecture, backend).
_HW_QUERY = re.compile(
    r"\b(check_shared_mem|get_device_capability|get_device_properties|max_shared_mem\w*|is_hip|is_amd|IS_AMD"
    r"|is_nvidia\w*|IS_NVIDIA\w*|is_hopper\w*|IS_HOPPER\w*|is_blackwell\w*|is_ampere\w*|IS_AMPERE\w*"
    r"|get_arch|get_current_target|torch\.version\.hip|IS_INTEL\w*|is_intel\w*|IS_NPU|is_npu\w*)\b")
#: Large enough that the first call of a key costs seconds of compiling and timing.
LARGE_SPACE = 16


def _autotune_call(k: KernelFacts) -> ast.Call | None:
    """The `triton.autotune(...)` decorator as a Python AST (None when it cannot be parsed)."""
    text = autotune_text(k)
    if not text:
        return None
    # the decorator text runs to the `def`: cut it at the matching parenthesis
    depth, end = 0, -1
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                end = i + 1
                break
    if end < 0:
        return None
    try:
        node = ast.parse(text[:end], mode="eval").body
    except SyntaxError:
        return None
    return node if isinstance(node, ast.Call) else None


def _configs_node(call: ast.Call) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == "configs":
            return kw.value
    return call.args[0] if call.args else None


def _length(node: ast.expr) -> int | None:
    """How many values a literal iterable holds (list/tuple/set, `range(...)` of literals,
    `a + b`); None when it is a name or computed elsewhere."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return len(node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _length(node.left), _length(node.right)
        return None if a is None or b is None else a + b
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        try:
            return len(range(*(ast.literal_eval(a) for a in node.args)))
        except (ValueError, TypeError):
            return None
    return None


def _config_count(node: ast.expr | None) -> int | None:
    """Configs the decorator benchmarks, counted from literals (None: not countable)."""
    if node is None:
        return None
    if isinstance(node, ast.ListComp):
        total = 1
        for gen in node.generators:
            n = _length(gen.iter)
            if n is None:
                return None
            total *= n
        return total
    if isinstance(node, (ast.List, ast.Tuple)):
        total = 0
        for elt in node.elts:
            sub = _config_count(elt.value) if isinstance(elt, ast.Starred) else (
                _config_count(elt) if isinstance(elt, ast.ListComp) else 1)
            if sub is None:
                return None
            total += sub
        return total
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _config_count(node.left), _config_count(node.right)
        return None if a is None or b is None else a + b
    return None


def _pruned(d: Decorator, k: KernelFacts) -> bool:
    """The autotune decorator prunes its configs: `prune_configs_by=`, an `if` in the config
    comprehension, or lists chosen by a hardware query."""
    call = _autotune_call(k)
    if "prune_configs_by" in d.kwargs or (call is not None and any(kw.arg == "prune_configs_by"
                                                                     for kw in call.keywords)):
        return True
    configs = _configs_node(call) if call is not None else None
    if configs is None:
        return False
    for node in ast.walk(configs):
        if isinstance(node, ast.comprehension) and node.ifs:
            return True  # `for BK in ... if BK * BV <= ...`
        if isinstance(node, ast.IfExp) and _HW_QUERY.search(ast.unparse(node.test)):
            return True  # `([8] if check_shared_mem('hopper') else [])`
    return bool(_HW_QUERY.search(ast.unparse(configs)))


def _large_space(d: Decorator, k: KernelFacts) -> bool:
    """The autotune decorator's configs, counted from literals, are LARGE_SPACE or more."""
    call = _autotune_call(k)
    if call is None:
        return False
    n = _config_count(_configs_node(call))
    return n is not None and n >= LARGE_SPACE


def _swept(configs: ast.ListComp) -> set[str]:
    """Config parameters a comprehension sweeps over two or more values: `for bk in [32, 64]`
    feeding `Config({'BLOCK_K': bk})` sweeps BLOCK_K; `num_stages=s` sweeps num_stages."""
    loop_vars = {g.target.id for g in configs.generators
                 if isinstance(g.target, ast.Name) and (_length(g.iter) or 0) >= 2}
    out: set[str] = set()
    for node in ast.walk(configs.elt):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Name) and value.id in loop_vars:
                    out.add(str(key.value))
        elif isinstance(node, ast.Call):
            out |= {kw.arg for kw in node.keywords
                    if kw.arg and isinstance(kw.value, ast.Name) and kw.value.id in loop_vars}
    return out


def _smem_params(d: Decorator, k: KernelFacts) -> bool:
    """Two or more shared-memory-sized parameters vary across the configs (tile sizes and
    `num_stages`): their product is what overflows shared memory."""
    call = _autotune_call(k)
    if call is None:
        return False
    configs = _configs_node(call)
    names = _swept(configs) if isinstance(configs, ast.ListComp) else autotune_config_keys(k)
    sized = {n for n in names if n == "num_stages" or TILE_NAME.fullmatch(n)}
    return len(sized) >= 2


# the decorator's configs: signature facts
PRUNED_CONFIGS = decorators(
    "triton.autotune", where=_pruned, name="pruned-configs",
    describe="pruned autotune configs (`prune_configs_by=`, an `if` in the config comprehension, or hardware-chosen "
             "lists)")
LARGE_CONFIG_SPACE = decorators(
    "triton.autotune", where=_large_space, name="large-config-space",
    describe=f"an autotune config space of {LARGE_SPACE}+ configs counted from literal lists")
SMEM_SIZED_CONFIGS = decorators(
    "triton.autotune", where=_smem_params, name="smem-sized-configs",
    describe="configs sweeping two shared-memory-sized parameters (tile sizes, `num_stages`)")

SKELETON = Skeleton(
    id="autotune-config-pruning",
    title="Prune the autotune config space (prune_configs_by / SMEM-filtered lists)",
    summary="Prune autotune configs (early_config_prune, SMEM/arch-filtered lists): short tuning, no configs that cannot fit.",
    category=Category.TUNING,
    doc=__doc__,
    present=PRUNED_CONFIGS,
    preconditions=[AUTOTUNED, LARGE_CONFIG_SPACE, SMEM_SIZED_CONFIGS],
    subject=AUTOTUNED,
    env=Env(),
    helps=("latency",),
)
