"""`__launch_bounds__(maxThreads, minBlocks)`: tell nvcc the block size so it budgets registers for the occupancy wanted.

## What it does
A kernel that is always launched with the same block size declares it:

    __global__ void __launch_bounds__(256, 2) softmax_row8(...)   // <= 256 threads, >= 2 CTAs/SM
    softmax_row8<<<rows, 256, 0, stream>>>(...);

`maxThreadsPerBlock` (256) promises the launch never uses more threads; the optional
`minBlocksPerMultiprocessor` (2) asks the compiler to fit at least that many CTAs on one SM.
nvcc then caps registers per thread so that `maxThreads * minBlocks` threads fit the SM's
register file (65,536 32-bit registers on sm_70 … sm_100: 256 × 2 threads → at most 128
registers each), and sizes nothing for block sizes that never occur. A template kernel can
name its own thread count: `__launch_bounds__(kNumThreads)`.

## Why it is faster
Without bounds nvcc knows nothing about the block size and picks registers for the speed of
one thread (up to 255): a register-hungry kernel (unrolled loops, per-thread arrays, register
tiles, MMA fragments) may end up with one CTA per SM, too few warps to hide memory latency. The bound lets the compiler trade registers for resident warps where that
is the better deal, and makes the choice explicit and stable across compiler versions.
It also prevents a launch failure: a kernel compiled to 96 registers cannot launch 1,024
threads (98,304 > 65,536 registers) — "too many resources requested for launch" — while
`__launch_bounds__(1024)` makes nvcc compile it to fit.

When it hurts: a cap below what the kernel needs makes nvcc spill registers to local memory
(`ptxas -v` prints "N bytes spill stores / spill loads"); spills go through L1/L2 and can cost
far more than the extra occupancy gains. Latency-tolerant kernels (enough ILP per thread,
TMA/cp.async pipelines) often run best at low occupancy: DeepGEMM uses `(threads, 1)` to
keep registers, not to add CTAs. Measure both, and check the spill counts.

## Applies when
- a `__global__` kernel has no `__launch_bounds__` (or `__maxnreg__`);
- every launch of it in this file uses a compile-time block size (a literal, a `dim3` of
  literals, a `kName`/`ALL_CAPS` constant), or its thread count is its own template
  parameter (`template <int kNumThreads>`);
- it holds many values in registers: `#pragma unroll` loops, per-thread arrays, register tiles
  or tensor-core fragments (a kernel that needs 20 registers has nothing to trade).

## Does not apply when
- the block size is chosen at run time (from the row length, a heuristic): one bound must
  cover the largest launch, and a smaller one makes the larger launches fail;
- the kernel is register-light: the cap is never reached, nothing changes;
- the kernel already spills, or performance depends on keeping a large register tile (GEMM
  main loops sized to the register file): a `minBlocks` above 1 adds spills;
- occupancy is limited by shared memory, not registers: the bound cannot raise it.
With bounds present, the skeleton is suggested as a refinement when a launch in this file uses
more threads than `maxThreadsPerBlock` (the launch fails with an invalid configuration).

## References
- DeepGEMM `deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d1d.cuh` (`__launch_bounds__(kNumTMAThreads + kNumMathThreads, 1)`)
- DeepGEMM `deep_gemm/include/deep_gemm/scheduler/sm90_paged_mqa_logits.cuh` (`__launch_bounds__(32, 1)` on a one-warp metadata kernel)
- sglang wheel `sglang/kernels/jit/csrc/moe/moe_finalize_fuse_shared.cu` (`kNumThreads` constexpr block size)
- CUDA C++ Programming Guide, "Launch Bounds" (and "Maximum Number of Registers per Thread", `__maxnreg__`)
- CUDA C++ Best Practices Guide, "Register Pressure" / "Occupancy"
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom, soft, split_top
from skel.skeletons.patterns import decorators
from skel.skeletons.predicates.cuda_tiles import is_kernel, mma_lines

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

#: Compile-time in C++ convention: `kThreads`, `BLOCK_SIZE`, `WARP_SIZE` ... (one capital
#: letter, `N`, is usually a runtime size)
_CONST_NAME = re.compile(r"k[A-Z]\w*|[A-Z][A-Z0-9_]+")
#: A template parameter that is the kernel's thread count.
_THREADS_PARAM = re.compile(r"(?i)k?_?(num_?)?threads\w*|\w*threads_?per_?(block|cta)\w*|k?block_?(threads|dim)\w*")
#: A per-thread array declared in the body: `float v[8];`, `uint4 regs[kN] = {};`
_LOCAL_ARRAY = re.compile(r"^[ \t]*(?:const[ \t]+)?([A-Za-z_][\w:<>, ]*)[ \t]+[A-Za-z_]\w*(\[[^\]]+\])+[ \t]*(=|;)", re.M)
_NOT_A_TYPE = {"return", "else", "case", "goto", "delete", "throw", "do"}


def _int_expr(node: ast.AST) -> int | None:
    """An integer expression of literals and + - * (`16 * 16`, `(128 + 32)`), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        a, b = _int_expr(node.left), _int_expr(node.right)
        if a is None or b is None:
            return None
        return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) else a * b
    return None


def _const_value(text: str) -> int | None:
    """The integer value of a block-size expression made of literals (`256`, `dim3(32, 8)`,
    `16 * 16`), else None."""
    t = text.strip()
    m = re.fullmatch(r"dim3\s*[({](.*)[)}]", t, re.S)
    total = 1
    for p in (split_top(m.group(1)) if m else [t]):
        p = re.sub(r"(?<=\d)[uUlL]+\b", "", p.strip())  # 256u, 128UL
        if not p:
            continue
        try:
            value = _int_expr(ast.parse(p, mode="eval").body)
        except SyntaxError:
            return None
        if value is None:
            return None
        total *= value
    return total


def _compile_time(text: str) -> bool:
    """A block size known at compile time: literals, or names written as constants."""
    t = re.sub(r"^\s*dim3\s*[({]|[)}]\s*$", "", text.strip())
    names = set(re.findall(r"[A-Za-z_]\w*", t)) - {"dim3", "sizeof", "static_cast", "int", "unsigned", "uint32_t"}
    return bool(t.strip()) and all(_CONST_NAME.fullmatch(n) for n in names)


def _fixed_block(k: KernelFacts) -> list[int] | bool | None:
    """Every launch in this file has a compile-time block size, or the kernel's thread count
    is its own template parameter."""
    blocks = [(ln.line, ln.kwargs.get("block", "")) for ln in k.launches]
    if blocks and all(b and _compile_time(b) for _, b in blocks):
        return [line for line, _ in blocks]
    params = [p.name for p in k.params if p.constexpr and _THREADS_PARAM.fullmatch(p.name)]
    if params:
        return True
    return None


def _register_pressure(k: KernelFacts) -> list[int] | None:
    """Signs that the kernel keeps many values in registers: `#pragma unroll` loops,
    per-thread arrays, tensor-core fragments."""
    lines = [lp.line for lp in k.loops if str(lp.kwargs.get("pragma", "")).startswith("unroll")]
    for m in _LOCAL_ARRAY.finditer(k.source):
        if "__shared__" not in m.group(0) and m.group(1).split()[0] not in _NOT_A_TYPE:
            lines.append(k.line_start + k.source.count("\n", 0, m.start()))
    lines += mma_lines(k)
    lines += [line for n, line in k.names.items() if n.endswith("fragment")]
    return sorted(set(lines)) or None


def _bound_covers_launches(k: KernelFacts) -> bool:
    """No launch in this file uses more threads than the kernel's `maxThreadsPerBlock`
    (sizes that are not literals count as covered)."""
    dec = next((d for d in k.decorators if d.name == "__launch_bounds__" and d.list_items), None)
    if dec is None:
        return True
    bound = _const_value(dec.list_items[0])
    if bound is None:
        return True
    for ln in k.launches:
        size = _const_value(ln.kwargs.get("block", ""))
        if size is not None and size > bound:
            return False
    return True


def _global_kernel(k: KernelFacts) -> bool | None:
    """A `__global__` kernel (a whole-unit fact: no lines of its own)."""
    return is_kernel(k) or None


KERNEL = custom("cuda-kernel", "a `__global__` kernel", _global_kernel, signature=True)
BOUNDED = decorators("__launch_bounds__", "__maxnreg__", name="launch-bounds",
                     describe="`__launch_bounds__(...)` (or `__maxnreg__`) on the kernel")
FIXED_BLOCK = custom(
    "compile-time-block-size",
    "launches with a compile-time block size (a literal or constant), or a thread-count template parameter",
    _fixed_block)
REGISTER_PRESSURE = custom(
    "register-pressure",
    "values kept in registers (`#pragma unroll` loops, per-thread arrays, MMA fragments)",
    _register_pressure)
BOUND_COVERS_LAUNCHES = custom(
    "bound-covers-launches",
    "every launch in this file within `maxThreadsPerBlock` (a larger block fails to launch)",
    _bound_covers_launches)

SKELETON = Skeleton(
    id="launch-bounds-occupancy",
    title="__launch_bounds__ for a fixed block size (register budget and occupancy)",
    summary="Declare __launch_bounds__(threads, minBlocks) on a fixed-block kernel so nvcc budgets registers for occupancy.",
    category=Category.TUNING,
    doc=__doc__,
    ruled_out_by=(r"launch[_ ]bounds", r"\bmaxnreg\b", r"\bregister (cap|limit|budget)"),
    present=BOUNDED,
    # a register-light kernel gains nothing from the bound, but it is not wrong: a near miss
    preconditions=[KERNEL, FIXED_BLOCK, soft(REGISTER_PRESSURE)],
    subject=KERNEL,
    languages=("cuda",),
    env=Env(backends=("cuda",)),
    helps=("occupancy",),
    refine=[BOUND_COVERS_LAUNCHES],
)
