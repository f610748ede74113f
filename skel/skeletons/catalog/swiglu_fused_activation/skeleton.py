"""Compute the gated activation `silu(gate) * up` in one kernel that loads both halves.

## What it does
A gated MLP (SwiGLU, GeGLU) needs `act(gate) * up` between its up-projection and its
down-projection. Written as an activation kernel on `gate` followed by a multiply on the
host (`act_out * up`, `.mul_(up)`) or by a second kernel, the activation's output makes
a round trip through HBM. The fused kernel loads the `gate` and `up` tiles of the same
positions — two tensors, or the two halves of one `[tokens, 2 * I]` projection output —
and stores only the product:

    g = tl.load(gate_up + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(gate_up + row * stride + I + cols, mask=mask, other=0.0)
    tl.store(out + row * stride_o + cols, (g * tl.sigmoid(g)).to(u.dtype) * u, mask=mask)

Merging the gate and up weights into one `gate_up_proj` GEMM (one launch, one read of the
activations) usually comes with it: the fused kernel then reads the GEMM's output halves.

## Why it is faster
The activation is elementwise and memory-bound. Per element of the `[tokens, I]`
intermediate the unfused pair moves five values (the activation reads `gate` and writes
`act`, the multiply reads `act` and `up` and writes the product); the fused kernel moves
three (reads `gate` and `up`, writes the product): 40% fewer bytes and one launch fewer.
With I = 14,336 (Llama-3-8B) and 8K tokens in bf16 that is 470 MB saved per layer. In
decode, a handful of tokens, the saved launch is most of what is left. It pays at every
size; it also frees the `[tokens, I]` activation buffer.

## Applies when
- an elementwise kernel applies a gate activation (`x * tl.sigmoid(x)`,
  `x / (1 + exp(-x))`, a `silu`/`gelu` helper, `tl.erf`/`tanh` GELU) to one loaded
  tensor and stores it, with no second tensor in the product, and
- its launcher in the same file reads the `up` half (a tensor named `up`, `up_out`,
  `x_up`...) that it does not pass to the kernel: the product with it happens outside.

## Does not apply when
- the kernel already loads the second operand and stores `act(gate) * up` (SwiGLU as
  written in Liger, unsloth, lmdeploy and lightllm), or any gate `o * sigmoid(g)` of two
  loaded tensors;
- the activation stands alone: an MLP with a plain `silu`/`gelu` (no gate), Mamba's
  conv activation, a sigmoid gate of one tensor — nothing to multiply;
- the kernel is launched from another file, whose launcher cannot be seen;
- the activation's output is an output of its own (saved for a backward that needs it,
  or returned): it must be written anyway, and only the multiply's re-read is saved;
- the activation is already the epilogue of the up-projection GEMM (`epilogue-fusion`).

## References
- lightllm `lightllm/models/llama/triton_kernel/silu_and_mul.py` (`_silu_and_mul_kernel`: gate and up read from the two halves of one `gate_up_proj` output, replacing `F.silu(gate_out, inplace=True)` then `gate_out * up_out` in `_ffn`) — at `00aeedc349`, 2024-01-25, "[Update] KV Merge And FFn up gate merge. (#320)", before 2025-07-01
- lmdeploy `lmdeploy/pytorch/kernels/cuda/activation.py` (`_silu_and_mul_kernel`; `fused_moe.py`'s `F.silu(gate_cache, inplace=True) * up_cache` replaced by it) — at `97449e3c5d`, 2024-09-19, "Add silu mul kernel (#2469)", before 2025-07-01
- exllamav2 `exllamav2/exllamav2_ext/cuda/q_mlp.cu` (`silu_mul_kernel`: the CUDA form, given a GELU variant for Gemma) — at `cc1094a41b`, 2024-02-22, "Support Gemma", before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_targets, custom
from skel.skeletons.predicates.dots import no_dot
from skel.skeletons.predicates.host import own_launches
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

#: calls that make a gate activation (SiLU/swish, sigmoid, GELU)
_ACT_CALLS = {"tl.sigmoid", "sigmoid", "silu", "swish", "_silu", "gelu", "_gelu", "gelu_tanh", "tl.erf", "erf",
              "tl.math.erf", "libdevice.erf", "tanh", "tl.math.tanh", "libdevice.tanh", "fast_tanh",
              "tl.extra.cuda.libdevice.erf", "tl.extra.cuda.libdevice.tanh"}
#: reductions: a kernel with one is a loss, a norm or a softmax, not an elementwise activation
_REDUCTIONS = {"tl.sum", "tl.max", "tl.min", "tl.reduce", "tl.cumsum", "tl.argmax", "tl.argmin", "tl.associative_scan"}
#: `x / (1 + tl.exp(-x))`: SiLU written out
_SILU_DIV = re.compile(r"/\s*\(\s*1(\.0*)?\s*\+\s*[\w.]*exp2?\(\s*-")
#: a pointer to an incoming gradient
_GRAD = re.compile(r"(?i)^(grad\w*|\w*_grad\w*|d(y|o|out|c|h|s|z)(_ptr)?)$")
#: the `up` half of a gated MLP as a host tensor (not a weight: `up_proj`, `w_up` are GEMM operands)
_UP = re.compile(r"(?i)^((x|h|hidden|out|y)_)?up(_(out|output|states|x|h|act|part|half|cache|buf))?$")


def _load_sources(k: KernelFacts) -> dict[str, set[int]]:
    """For each name, the lines of the vector loads (`tl.load` of an address built from
    `tl.arange`) its value derives from."""
    vector = _arange_names(k)
    out: dict[str, set[int]] = {}
    for c in k.calls_named("tl.load"):
        addr = c.args[0] if c.args else c.kwargs.get("pointer", "")
        if c.target and ("tl.arange" in addr or set(IDENT.findall(addr)) & vector):
            out.setdefault(c.target, set()).add(c.line)
    changed = True
    while changed:
        changed = False
        for a in k.assigns:
            src: set[int] = set()
            for n in a.names:
                src |= out.get(n, set())
            if a.op != "=":
                for t in assign_targets(a):
                    src |= out.get(t, set())
            for t in assign_targets(a):
                if src - out.get(t, set()):
                    out[t] = out.get(t, set()) | src
                    changed = True
    return out


def _arange_names(k: KernelFacts) -> set[str]:
    """Names computed from `tl.arange` (offsets, pointer tiles)."""
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for a in k.assigns:
            if ("tl.arange" in a.calls or set(a.names) & out) and set(assign_targets(a)) - out:
                out |= set(assign_targets(a))
                changed = True
    return out


def _activated(k: KernelFacts) -> set[str]:
    """Names holding an activation of loaded values, and names computed from them."""
    seeds = {t for a in k.assigns if (set(a.calls) & _ACT_CALLS or _SILU_DIV.search(a.value))
             for t in assign_targets(a)}
    out = set(seeds)
    changed = True
    while changed:
        changed = False
        for a in k.assigns:
            if set(a.names) & out and set(assign_targets(a)) - out:
                out |= set(assign_targets(a))
                changed = True
    return out


def _stored_value(c: Call) -> str:
    return c.args[1] if len(c.args) > 1 else c.kwargs.get("value", "")


def _activation_stores(k: KernelFacts) -> list[tuple[int, set[int]]]:
    """(line, vector loads it reads) of each store whose value holds an activation."""
    sources = _load_sources(k)
    act = _activated(k)
    out = []
    for c in k.calls_named("tl.store"):
        value = _stored_value(c)
        names = set(IDENT.findall(value))
        inline_act = any(f"{n}(" in value for n in _ACT_CALLS) or bool(_SILU_DIV.search(value))
        if not (names & act or inline_act):
            continue
        loads: set[int] = set()
        for n in names:
            loads |= sources.get(n, set())
        out.append((c.line, loads))
    return out


def _single_input_activation(k: KernelFacts) -> list[int]:
    """Stores of an activation of one loaded tensor, with no second tensor in the value, in
    an elementwise kernel (no reduction: a loss or a softmax with a tanh soft-cap is not an
    MLP activation)."""
    if any(c.name in _REDUCTIONS for c in k.calls):
        return []
    stores = _activation_stores(k)
    if any(len(loads) >= 2 for _, loads in stores):
        return []
    return [line for line, loads in stores if len(loads) == 1]


def _gradient_loads(k: KernelFacts) -> set[int]:
    """Lines of loads from an incoming gradient (`dy`, `do`, `grad_out`): a backward
    kernel's `dy * s * (1 - s)` is a derivative, not a gate times an up half."""
    grads = {p.name for p in k.params if _GRAD.match(p.name)}
    return {c.line for c in k.calls_named("tl.load")
            if grads & set(IDENT.findall(c.args[0] if c.args else c.kwargs.get("pointer", "")))}


def _broadcast_loads(k: KernelFacts) -> set[int]:
    """Lines of loads whose address no program id reaches: a weight or bias vector shared
    by every program (DyT's `gamma`), not a second half of each program's rows."""
    derived = {t for a in k.assigns if "tl.program_id" in a.calls for t in assign_targets(a)}
    changed = True
    while changed:
        changed = False
        for a in k.assigns:
            if set(a.names) & derived and set(assign_targets(a)) - derived:
                derived |= set(assign_targets(a))
                changed = True
    out = set()
    for c in k.calls_named("tl.load"):
        addr = c.args[0] if c.args else c.kwargs.get("pointer", "")
        if "tl.program_id" not in addr and not set(IDENT.findall(addr)) & derived:
            out.add(c.line)
    return out


def _gated_in_kernel(k: KernelFacts) -> list[int]:
    """Stores of an activation multiplied by a second loaded tensor of the same rows
    (gradients and shared weight vectors aside) in an elementwise kernel: the gate fused."""
    if any(c.name in _REDUCTIONS or c.name == "tl.dot" for c in k.calls):
        return []
    other = _gradient_loads(k) | _broadcast_loads(k)
    return [line for line, loads in _activation_stores(k) if len(loads - other) >= 2]


def _host_multiplies_up(k: KernelFacts) -> list[int] | None:
    """The launcher reads an `up` tensor the kernel does not take: the product is outside."""
    if any(_UP.match(p.name) for p in k.params):
        return None
    lines = [ln.line or k.line_start for ln in own_launches(k)
             if any(_UP.match(n) for n in ln.host_names) and not any(_UP.match(a.strip()) for a in ln.args)]
    return lines or None


SINGLE_INPUT_ACTIVATION = custom(
    "single-input-activation",
    "an elementwise kernel storing an activation (`x * sigmoid(x)`, `silu`, GELU) of one loaded tensor, "
    "no second tensor in the stored value",
    _single_input_activation)
GATED_IN_KERNEL = custom(
    "gated-activation-in-kernel",
    "an activation of one loaded tensor multiplied by a second loaded tensor before the store",
    _gated_in_kernel)
HOST_UP_OPERAND = custom(
    "host-up-operand",
    "the launcher in this file reads the `up` half (`up`, `up_out`) and does not pass it to the kernel",
    _host_multiplies_up)

SKELETON = Skeleton(
    id="swiglu-fused-activation",
    title="Fuse the gated activation: silu(gate) * up in one kernel",
    summary="Load gate and up together and store act(gate) * up: no activation round trip, one launch fewer.",
    category=Category.FUSION,
    doc=__doc__,
    ruled_out_by=(r"\b(silu|gelu|act\w*)[\s_]and[\s_]mul\b", r"\bfus\w*\s+(the\s+)?(gate|gated|swiglu|geglu)\b"),
    present=GATED_IN_KERNEL,
    preconditions=[SINGLE_INPUT_ACTIVATION, HOST_UP_OPERAND, no_dot("an elementwise activation, not a matmul")],
    subject=SINGLE_INPUT_ACTIVATION,
    env=Env(),
    helps=("memory", "latency"),
)
