"""Apply the bias, scale, activation, residual or cast to the matmul accumulator before storing it.

## What it does
A matmul-like kernel that writes its raw accumulator, followed on the host by an
elementwise op (`y = act(x @ w + b) * s + r`), is extended so that the op runs on the
accumulator in registers, right after the K loop and before `tl.store`:

    for k in range(0, K, BLOCK_K):
        acc = tl.dot(a, b, acc)
    acc = acc * scale + tl.load(bias_ptr + offs_n)[None, :]    # epilogue
    acc = tl.where(acc >= 0, acc, 0.01 * acc)                   # activation
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=...)

Optional parts are switched with constexpr flags (`HAS_BIAS`, `ACTIVATION`,
`MUL_ROUTED_WEIGHT`) so one kernel serves every variant.

## Why it is faster
The separate elementwise kernel reads the whole [M, N] output back from HBM and writes it
again (plus a launch); in the epilogue the values are already in registers, so the op
costs a few instructions per element and no memory traffic. For a bandwidth-bound
elementwise op on an [M, N] bf16 output that is 4*M*N bytes saved per fused op, which is
significant whenever the GEMM itself is not much larger (small K, skinny shapes, MoE
expert GEMMs). It also saves the intermediate allocation.

## Applies when
- the kernel accumulates a `tl.dot` over a loop and stores the raw accumulator
  (`tl.store(ptr, acc)` or `acc.to(dtype)`) with no further math;
- the caller applies an elementwise op to that output (bias, scale, activation, gating,
  residual add, dtype cast, quantisation) — check the host code: the kernel alone
  cannot show it.

## Does not apply when
- the output is a split-K partial (atomics or a partial buffer): the op must run after
  the partials are summed;
- the following op needs a reduction across the row (softmax, layer norm over N) that
  one N-tile does not see — that needs a different fusion (N in one tile, or a
  separate pass);
- the output is consumed raw elsewhere too (the pre-activation is saved for backward:
  then store both, or recompute);
- the kernel already post-processes the accumulator (an activation, a scale by a
  loaded vector, a residual add, `HAS_BIAS`/`ACTIVATION`/`FUSE_*` flags).
Extra epilogue operands (bias, scales) add loads and registers; with large tiles and
deep pipelines that can lower occupancy — keep them as [BLOCK_N] vectors.

## References
- Triton tutorial `03-matrix-multiplication.py` (`matmul_kernel`, `ACTIVATION == "leaky_relu"`)
- SGLang `fused_moe_triton_kernels.py` (`fused_moe_kernel`: `MUL_ROUTED_WEIGHT`, fused SwiGLU)
- vLLM `model_executor/layers/fused_moe/fused_moe.py` (`fused_moe_kernel`, `MUL_ROUTED_WEIGHT`)
- Liger-Kernel `src/liger_kernel/ops/fused_neighborhood_attention.py` (`_fused_neighborhood_attention_qk_kernel`: `acc * scale` and the neighborhood mask applied to the QK^T accumulator before `tl.store`) — at `5e3bf99abb`, before 2025-07-01
- flash-linear-attention `fla/ops/utils/matmul.py` (`matmul_kernel`: `ACTIVATION`, `HAS_ALPHA`, `HAS_INPUT`/`HAS_BETA` applied to `b_acc` before the store) — at `49b00f0a94`, before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_calls, assign_targets, custom, param, rx
from skel.skeletons.predicates.dots import HAS_DOT
from skel.skeletons.predicates.host import ELEMENTWISE_OUTPUT_OP, calls_after_launch, launch_lines, launched_here
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import Assign, Call, KernelFacts, Loop

_ARITH = re.compile(r"[-+*/]")
_NOT_OPERANDS = {"tl", "float32", "float16", "bfloat16", "dtype", "element_ty", "None", "True", "False"}


def _dot_accumulators(k: KernelFacts) -> list[tuple[Loop, str]]:
    """(loop, accumulator) pairs: a name carried across the loop and updated with tl.dot."""
    out = []
    for lp in k.loops:
        if lp.kind == "while":
            continue
        body = sorted((a for a in k.assigns if lp.line <= a.line <= lp.end_line), key=lambda a: a.line)
        first: dict[str, Assign] = {}
        for a in body:
            for t in assign_targets(a):
                first.setdefault(t, a)
        carried = {t for t, a in first.items() if a.op != "=" or t in a.names}
        found = set()
        for a in body:
            if "tl.dot" not in a.calls:
                continue
            for t in set(assign_targets(a)) & carried:
                if t not in found and not _read_in_loop(k, lp, t) and _pure_accumulation(body, t):
                    found.add(t)
                    out.append((lp, t))
    # keep the outermost loop per accumulator (the K loop, not an inner helper loop)
    best: dict[str, Loop] = {}
    for lp, t in out:
        if t not in best or lp.depth < best[t].depth:
            best[t] = lp
    return [(lp, t) for t, lp in best.items()]


def _pure_accumulation(body: list[Assign], name: str) -> bool:
    """Every update of the name in the loop adds a tl.dot (`acc += tl.dot(..)`, `acc = tl.dot(a, b, acc)`):
    a GEMM accumulator, not a rescaled one (online softmax `acc * alpha`, a decayed state `h *= g`)."""
    for a in body:
        if name not in assign_targets(a):
            continue
        if "tl.dot" not in a.calls:
            return False
        if a.op == "+=" or a.op == "-=":
            continue
        rest = a.value.replace(" ", "")
        if rx(r"\b" + re.escape(name) + r"\s*\*").search(a.value) or rx(r"\*\s*" + re.escape(name) + r"\b").search(a.value):
            return False
        if not (rx(r",\s*(acc\s*=\s*)?" + re.escape(name) + r"\s*(,[^()]*)?\)\s*$").search(a.value)
                or rest.startswith(name + "+") or rest.endswith("+" + name)):
            return False
    return True


def _read_in_loop(k: KernelFacts, lp: Loop, name: str) -> bool:
    """The name is used in the loop other than by its own updates: a recurrent state (stored
    per chunk, multiplied with queries), not a GEMM accumulator."""
    word = re.compile(r"\b" + re.escape(name) + r"\b")
    for a in k.assigns:
        if lp.line <= a.line <= lp.end_line and name not in assign_targets(a) and name in a.names:
            return True
    for c in k.calls:
        if lp.line <= c.line <= lp.end_line and c.target != name and any(word.search(x) for x in c.args):
            return True
    return False


def _post(k: KernelFacts, lp: Loop, acc: str) -> tuple[list[Assign], set[str]]:
    """Assignments after the loop that derive from the accumulator (outside that loop)."""
    derived = {acc}
    chain = []
    for a in sorted(k.assigns, key=lambda a: a.line):
        if a.line <= lp.end_line or a.loop_depth >= lp.depth and _inside_any(k, a.line, lp):
            continue
        reads = set(a.names) | (set(assign_targets(a)) if a.op != "=" else set())
        if reads & derived:
            chain.append(a)
            derived |= set(assign_targets(a))
    return chain, derived


def _inside_any(k: KernelFacts, line: int, lp: Loop) -> bool:
    return any(o.line <= line <= o.end_line and o.depth >= lp.depth for o in k.loops if o is not lp)


def _epilogue_ops(k: KernelFacts, lp: Loop, acc: str) -> list[int]:
    """Post-loop math on the accumulator beyond a cast, with operands that are not the
    loop's own running statistics (attention's `acc / l_i` is not an epilogue)."""
    loop_vars = set(lp.assigned) | set(lp.targets)
    chain, derived = _post(k, lp, acc)
    lines = []
    for a in chain:
        calls = assign_calls(a) - {".to"}
        operands = set(a.names) - derived - _NOT_OPERANDS - {c for c in a.calls if "." not in c}
        if calls - {"tl.dot"} or (_ARITH.search(a.value.replace("->", "")) and operands - loop_vars):
            if operands - loop_vars or calls - {"tl.dot", "tl.where"}:
                lines.append(a.line)
    return lines


def _stores_of(k: KernelFacts, lp: Loop, names: set[str]) -> list[tuple[Call, str]]:
    out = []
    for c in k.calls:
        if c.name != "tl.store" or c.line <= lp.end_line:
            continue
        val = c.args[1] if len(c.args) > 1 else c.kwargs.get("value", "")
        if set(IDENT.findall(val)) & names:
            out.append((c, val))
    return out


def _fused_epilogue(k: KernelFacts) -> list[int]:
    lines = []
    for lp, acc in _dot_accumulators(k):
        ops = _epilogue_ops(k, lp, acc)
        _, derived = _post(k, lp, acc)
        if ops and _stores_of(k, lp, derived):
            lines += ops
    return lines


def _raw_store(k: KernelFacts) -> list[int]:
    """The accumulator (or only a cast of it) stored right after the loop."""
    lines = []
    for lp, acc in _dot_accumulators(k):
        if _epilogue_ops(k, lp, acc):
            continue
        chain, derived = _post(k, lp, acc)
        if any(assign_calls(a) - {".to"} or set(a.names) - derived - _NOT_OPERANDS for a in chain):
            continue
        if any(a.loop_depth != lp.depth - 1 for a in chain):
            continue  # folded into an enclosing recurrence, not a tile epilogue
        for c, val in _stores_of(k, lp, derived):
            expr = re.sub(r"\.to\([^()]*(\([^()]*\))?[^()]*\)", "", val).strip()
            if expr in derived and c.loop_depth == lp.depth - 1:
                lines.append(c.line)
    return lines


EPILOGUE_FLAGS = param(r"(ACTIVATION|HAS_BIAS|USE_BIAS|ADD_BIAS|HAS_RESIDUAL|ADD_RESIDUAL|MUL_ROUTED_WEIGHT|"
                       r"FUSE_\w+|APPLY_\w+|WITH_\w*(BIAS|ACT)\w*)", constexpr=True, name="epilogue-flag",
                       describe="an epilogue constexpr flag (`ACTIVATION`, `HAS_BIAS`, `FUSE_*`)")
FUSED_EPILOGUE = custom(
    "fused-epilogue",
    "post-loop math on the `tl.dot` accumulator (activation, scale, bias, residual) before `tl.store`",
    _fused_epilogue,
)


def _host_epilogue(k: KernelFacts) -> list[int] | bool | None:
    """The file's own launch is followed by elementwise work on the output; with no launch
    in the file the caller is out of sight, which is not a reason to stay silent."""
    if not launched_here(k):
        return True
    if not calls_after_launch(k, ELEMENTWISE_OUTPUT_OP):
        return None
    return launch_lines(k) or True


HOST_EPILOGUE = custom(
    "host-epilogue",
    "the host applies an elementwise op (bias, activation, scale, cast) to the output after the launch "
    "(or the kernel is launched from another file)",
    _host_epilogue,
)
RAW_ACC_STORE = custom(
    "raw-accumulator-store",
    "a `tl.dot` accumulator stored right after its loop with no math (at most a cast)",
    _raw_store,
)

SKELETON = Skeleton(
    id="epilogue-fusion",
    title="Fuse the elementwise epilogue into the matmul",
    summary="Apply bias/scale/activation/residual to the tl.dot accumulator before tl.store instead of a separate pass.",
    category=Category.FUSION,
    doc=__doc__,
    present=FUSED_EPILOGUE | (EPILOGUE_FLAGS & HAS_DOT),
    preconditions=[RAW_ACC_STORE, HOST_EPILOGUE],
    subject=RAW_ACC_STORE,
    env=Env(),
    helps=("memory",),
)
