"""Normalise, gate or activate the inputs as the matmul kernel loads them, not in a separate pass.

## What it does
When the host wrapper prepares an input with its own elementwise kernel before launching
a `tl.dot` kernel — `q = l2norm(q)`, `g = torch.sigmoid(g)`, `x = F.silu(x)`,
`k = k * torch.exp(g)` — the preparation moves into the kernel, applied to the tile
right after `tl.load` and before it feeds `tl.dot`:

    b_q = tl.load(p_q, mask=m, other=0.).to(tl.float32)
    b_q = b_q * tl.rsqrt(tl.sum(b_q * b_q, 1) + eps)[:, None]    # was l2norm on the host
    b_s = tl.dot(b_q.to(b_k.dtype), b_k)

A constexpr flag (`USE_QK_L2NORM_IN_KERNEL`, `USE_GATE_IN_KERNEL`) keeps the old path
available; for backward, save what the prologue needs (`rstd`) or recompute it.

## Why it is faster
The separate pass reads the input from HBM and writes a transformed copy, which the
matmul kernel then reads again: one extra read and one extra write of the whole tensor,
plus a launch. In the kernel the raw tile is already in registers, so the transform costs
a few instructions per element. For memory-bound consumers (chunked linear attention,
small-K GEMMs) removing a full round trip of q/k/g is a direct win; FLA moved q/k
l2norm into its gated delta rule kernels (`USE_QK_L2NORM_IN_KERNEL`) for this reason.

## Applies when
- a kernel feeds tiles that come straight from `tl.load` into `tl.dot` (no transform in
  between), and
- the host code in the same file runs an elementwise normalisation or activation
  (`l2norm*`, `F.normalize`, `sigmoid`, `silu`, `gelu`, `softplus`, `rms_norm`,
  `layer_norm`, `swiglu`, `torch.exp`) and launches the kernel.

## Does not apply when
- the transform needs data the tile does not have: a norm over a dimension that is split
  across programs (l2norm over K with `BK < K` tiles needs the full row — load all of K
  or keep the separate pass), or a statistic over the sequence;
- the transformed tensor is reused by several kernels (forward and several backward
  kernels): fusing then recomputes it in each, which can cost more than one extra pass;
- the kernel is compute-bound with large K: the saved traffic is small next to the MMA
  work, while the prologue adds register pressure in the K loop;
- the kernel already transforms loaded operands before `tl.dot` (gates via `exp`,
  `tl.sigmoid`, `rsqrt` norms) or has a `USE_*_IN_KERNEL`/`*NORM*` flag.
Detection limits: the precondition needs the host wrapper in the same file (the facts
only record file-level host calls, not which tensor they touch); a kernel pasted alone
is never flagged.

## References
- flash-linear-attention `fla/ops/gated_delta_rule/fused_recurrent.py` (`fused_recurrent_gated_delta_rule_fwd_kernel`: `USE_QK_L2NORM_IN_KERNEL`) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/gla/chunk.py` (`chunk_gla_fwd_A_kernel_intra_sub_inter`: q and k tiles gated with `exp(b_g - b_gn)` right after `tl.load`, then fed to `tl.dot`) — at `49b00f0a94`, before 2025-07-01
- Liger-Kernel `src/liger_kernel/ops/tvd.py` (`_tv_distance_kernel`) — at `5e3bf99abb`, before 2025-07-01
- Triton tutorial `03-matrix-multiplication.py` (the epilogue counterpart)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.predicates.host import calls_before_launch, launch_lines
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_calls, assign_targets, custom, param
from skel.skeletons.patterns import calls_where
from skel.skeletons.predicates.dots import HAS_DOT
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import Assign, Call, KernelFacts

_TRANSFORM = {"tl.sigmoid", "tl.rsqrt", "tl.sqrt", "tl.exp", "tl.exp2", "exp", "exp2", "softplus", "silu", "l2norm",
              "tl.log", "logsigmoid", "gelu", "sigmoid", "rsqrt", "tl.math.rsqrt", "tl.math.exp2", "tanh",
              "tl.extra.cuda.libdevice.tanh", "tl.maximum"}
_TRANSFORM_NAME = re.compile(r"(?i)\w*(sigmoid|silu|swish|gelu|softplus|rsqrt|l2norm|norm|tanh|relu|exp2?)\w*")
_NON_VALUES = {"tl", "float32", "float16", "bfloat16", "dtype", "element_ty", "trans", "None", "True", "False"}
_HOST_OPS = re.compile(r"(?i)(^|\.)(l2norm\w*|l2_norm\w*|normalize|sigmoid|logsigmoid|silu|gelu\w*|softplus|relu|"
                       r"rms_?norm\w*|layer_?norm\w*|swiglu\w*|geglu\w*|fused_\w*gate\w*)$|^torch\.exp$")


def _is_transform(a: Assign) -> bool:
    """A transform call: a known one, or a helper named like one (`_silu`, `rms_norm_fn`)."""
    calls = assign_calls(a)
    return bool(calls & _TRANSFORM) or any(
        "." not in c and _TRANSFORM_NAME.fullmatch(c) for c in calls)


def _dot_results(k: KernelFacts) -> set[str]:
    """Names computed from a tl.dot (scores, accumulators): their transforms are not a prologue."""
    out = {t for a in k.assigns if "tl.dot" in a.calls for t in assign_targets(a)}
    out |= {c.target for c in k.calls if c.name == "tl.dot" and c.target}
    changed = True
    while changed:
        changed = False
        for a in k.assigns:
            if set(a.names) & out:
                new = set(assign_targets(a)) - out
                if new:
                    out |= new
                    changed = True
    return out


def _operands(c: Call) -> set[str]:
    return {n for x in c.args[:2] for n in IDENT.findall(x)} - _NON_VALUES


def _defs(k: KernelFacts) -> dict[str, list[Assign]]:
    d: dict[str, list[Assign]] = {}
    for a in k.assigns:
        for t in assign_targets(a):
            d.setdefault(t, []).append(a)
    return d


def _transformed_operands(k: KernelFacts) -> list[int]:
    """A tl.dot operand built from loaded data through a transform (exp gate, sigmoid, rsqrt norm)."""
    defs = _defs(k)
    dotted = _dot_results(k)
    lines = []
    for c in k.calls_named("tl.dot"):
        frontier = _operands(c) - dotted
        seen: set[str] = set()
        for _ in range(3):  # follow up to three assignments back
            nxt: set[str] = set()
            for n in frontier - seen:
                seen.add(n)
                for a in defs.get(n, []):
                    if a.line > c.line and not a.loop_depth:
                        continue
                    if _is_transform(a) and not set(a.names) & dotted:
                        lines.append(a.line)
                    nxt |= set(a.names) - _NON_VALUES - dotted
            frontier = nxt
    return lines


def _fed_by_raw_loads(c: Call, k: KernelFacts) -> bool:
    """A tl.dot whose operands are tiles straight from tl.load (at most a cast or transpose)."""
    defs = _defs(k)
    ops = _operands(c)
    raw = [n for n in ops if defs.get(n) and all(assign_calls(a) <= {"tl.load", ".to"} and "tl.load" in assign_calls(a)
                                               for a in defs[n])]
    return len(raw) >= 1 and len(ops) >= 1


def _host_prepass(k: KernelFacts) -> list[int] | bool:
    """The kernel is launched in this file by a function that calls an elementwise
    norm/activation *before* the launch (one after it is an epilogue, not a prologue)."""
    if calls_before_launch(k, _HOST_OPS):  # the transform runs before the launch: it feeds the kernel
        return launch_lines(k) or True
    return []


PROLOGUE_FLAGS = param(r"USE_\w+_IN_KERNEL|USE_\w*L2NORM\w*|USE_\w*_NORM|APPLY_\w*(NORM|ACT|GATE)\w*",
                       constexpr=True, name="prologue-flag",
                       describe="an in-kernel input transform flag (`USE_QK_L2NORM_IN_KERNEL`, `USE_GATE_IN_KERNEL`)")
TRANSFORMED_DOT_INPUT = custom(
    "transformed-dot-operand",
    "a `tl.dot` operand computed from loaded data through exp/sigmoid/rsqrt (gate, activation, norm)",
    _transformed_operands,
)
RAW_LOAD_DOT = calls_where("tl.dot", where=_fed_by_raw_loads, name="raw-load-dot-operand",
                           describe="a `tl.dot` fed directly by `tl.load`ed tiles")
HOST_PREPASS = custom(
    "host-elementwise-prepass",
    "host code in this file launching the kernel and calling an elementwise norm/activation "
    "(`l2norm`, `sigmoid`, `silu`, `rms_norm`, ...)",
    _host_prepass,
)

SKELETON = Skeleton(
    id="prologue-fusion",
    title="Fuse input normalisation/activation into the matmul's loads",
    summary="Apply the host's input norm/gate/activation to tiles after tl.load, before tl.dot: saves a full HBM pass.",
    category=Category.FUSION,
    doc=__doc__,
    present=TRANSFORMED_DOT_INPUT | (PROLOGUE_FLAGS & HAS_DOT),
    preconditions=[RAW_LOAD_DOT, HOST_PREPASS],
    subject=RAW_LOAD_DOT,
    env=Env(),
    helps=("memory",),
)
