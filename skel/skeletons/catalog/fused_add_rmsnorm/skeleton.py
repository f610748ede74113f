"""Add the residual inside the norm kernel: one pass writes the new residual and the normalised row.

## What it does
A pre-norm transformer block does `residual = x + residual` and then `y = rmsnorm(residual)`
(or LayerNorm) at every layer boundary. Written as two launches — an add kernel or a torch
`x + residual`, then a norm kernel that loads the sum back — the sum makes a full round
trip through HBM. The fused kernel loads `x` and `residual` for its row, adds them in
registers, stores the sum as the new residual, and computes the statistic and the
normalised output from the same registers:

    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(R + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
    x += r
    tl.store(R_OUT + row * stride_r + cols, x.to(R_OUT.dtype.element_ty), mask=mask)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(Y + row * stride_y + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)

The residual pointer is usually optional (`HAS_RESIDUAL: tl.constexpr`) so one kernel
serves the first layer (no residual yet) and the rest; serving engines write both outputs
in place (`x` becomes the normalised row, `residual` the sum).

## Why it is faster
Per element of the `[rows, hidden]` activation the unfused pair moves five values: the add
reads `x` and `residual` and writes the sum, the norm reads the sum and writes `y`. The
fused kernel moves four (reads `x`, `residual`; writes the sum and `y`): one full read of
`rows × hidden` elements less (16K tokens × 4,096 hidden in bf16: 128 MB a layer boundary,
twice per layer), and one launch less, which is most of the cost at decode sizes, where a
few rows make each kernel a few microseconds of launch. The sum never leaves registers
before the statistic, so it is also rounded once (to the residual's dtype) instead of
being re-read from a low-precision copy.

It pays while the row fits one program's registers (hidden ≤ 8,192 in one block, as
every LLM's hidden size does). A row too wide for one block (> 16,384 columns) needs a
second column pass that reads the stored sum back: the bytes are those of the unfused
pair and only the launch is saved.

## Applies when
- a row-norm kernel (RMSNorm or LayerNorm: a `tl.sum` of the squared loaded row and a
  `rsqrt`/`sqrt`) normalises one row per program with no residual input of its own, and
- its launcher in the same file adds a residual first: it reads a `residual`/`skip`
  tensor the kernel does not take, calls `torch.add`/`.add_` before the launch, or
  launches an add kernel just before it;
- the hidden size fits one block (≤ 8,192 columns; the payoff reads `--shape cols=N`).

## Does not apply when
- the kernel already takes the residual (a `residual`/`R` pointer or `HAS_RESIDUAL`
  flag) and adds it to the loaded row before the statistic;
- the norm has no residual in sight: a plain RMSNorm launched on its input, a q/k norm
  over heads, or a kernel launched from another file whose caller cannot be seen;
- the residual is added to the norm's *output* (`y + residual` after the launch: a
  post-norm epilogue, a different fusion);
- the kernel is not a norm (an add, a softmax, an activation), or it is a matmul;
- the row is wider than one program can hold (> 16,384 columns): the fused two-pass
  kernel reads the sum back and saves only a launch.

## References
- flash-attention `flash_attn/ops/triton/layernorm.py` (`_layer_norm_fwd_1pass_kernel`: `HAS_RESIDUAL`, `x += residual` stored to `RESIDUAL_OUT` before the RMS/LayerNorm statistic) — at `79bd1a2d5d`, 2023-11-13, "[LayerNorm] Implement residual + LayerNorm/RMSNorm in Triton", before 2025-07-01
- FlagGems `src/flag_gems/fused/skip_rms_norm.py` (`skip_rms_norm_kernel`: `x += r` in registers before `tl.sum(x * x / N)`) — at `b3dc349320`, 2024-05-23, "Add skip rmsnorm[SiliconFlow] (#21)", before 2025-07-01
- FlagGems `src/flag_gems/fused/fused_add_rms_norm.py` (`fused_add_rms_norm_kernel`: the sum written back to the residual, the normalised row to `X`, in place) — at `7ae98016c4`, 2025-06-04, "Refactor `skip_rms_norm` to `fused_add_rms_norm` with in-place multi-output support (#668)", before 2025-07-01
- flashinfer `include/flashinfer/norm.cuh` (`FusedAddRMSNormKernel`, the CUDA form) — at `b78151383d`, 2024-08-04, "feat: support fused add rmsnorm (#419)", and at `2043ca2181`, 2024-11-09, "perf: reduce the read and write of shared memory in the FusedAddRMSNormKernel (#592)", before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import assign_targets, custom
from skel.skeletons.predicates.dots import no_dot
from skel.skeletons.predicates.host import own_launches
from skel.skeletons.predicates.names import IDENT
from skel.skeletons.predicates.payoff import row_shape

if TYPE_CHECKING:
    from skel.kernels.model import Assign, KernelFacts, Launch
    from skel.skeletons.base import Workload

#: columns a row kernel holds in one block without spilling (fp32, 8-16 warps)
FITS = 8192
#: past this the row spills: a fused kernel needs a second pass that reads the sum back
SPILLS = 16384
#: a residual (skip) tensor, as a kernel parameter or a host name
_RESIDUAL = re.compile(r"(?i)^(residual\w*|\w*_residual\w*|resid|res_ptr|r_ptr|skip\w*|\w*_skip|shortcut\w*|"
                       r"has_residual|add_residual)$")
#: a one-letter residual pointer (`R`, `Res`): a kernel parameter only
_RESIDUAL_PARAM = re.compile(r"^(R|Res|RES)$")
#: a host add of two tensors
_HOST_ADD = re.compile(r"(?:^|\.)add_?$")
#: an add kernel launched by the same host function (`_add_kernel`, `residual_add_kernel`)
_ADD_KERNEL = re.compile(r"(?i)(^|_)add(_|$)|residual")
#: the square of a name (`x * x`, `xc*xc`), the sum of which is a norm's statistic
_SQUARE = re.compile(r"\b([A-Za-z_]\w*)\s*\*\s*\1\b")
_ROOTS = {"tl.rsqrt", "tl.sqrt", "tl.math.rsqrt", "tl.math.sqrt", "rsqrt", "sqrt", "libdevice.rsqrt",
          "tl.sqrt_rn"}
_SUMS = {"tl.sum", "tl.reduce"}


def _loaded(k: KernelFacts) -> dict[str, int]:
    """Names holding loaded values (a `tl.load` result, or values computed from one), each
    with the line of the load it first derives from."""
    out: dict[str, int] = {}
    for a in sorted(k.assigns, key=lambda a: a.line):
        if "tl.load" in a.calls:
            for t in assign_targets(a):
                out.setdefault(t, a.line)
    changed = True
    while changed:
        changed = False
        for a in k.assigns:
            src = [out[n] for n in a.names if n in out]
            if not src:
                continue
            for t in assign_targets(a):
                if t not in out:
                    out[t] = min(src)
                    changed = True
    return out


def _norm_statistic(k: KernelFacts) -> list[int]:
    """Lines of a row norm's statistic: the square of a loaded row summed (`tl.sum(x * x)`,
    or `acc += x * x` summed after a column loop) in a kernel that takes a root of it
    (`tl.rsqrt`, `1 / tl.sqrt`) and stores a row."""
    if not any(c.name in _ROOTS for c in k.calls) or not any(c.name in _SUMS for c in k.calls):
        return []
    if not k.calls_named("tl.store"):
        return []
    if any((c.args[:1] or [c.kwargs.get("axis", "0")])[0].strip() not in ("0", "axis=0")
           for c in k.calls_named("tl.program_id")):
        return []  # a grid over heads, time chunks or V tiles: not one program per row
    loaded = _loaded(k)
    # sums of the whole row outside loops: a loop around the statistic is a recurrence over
    # time (a q/k l2norm per step), not a row norm
    sums = [a for a in k.assigns if a.loop_depth == 0 and ("tl.sum" in a.calls or "tl.reduce" in a.calls)]
    lines = []
    for a in k.assigns:
        squared = {m.group(1) for m in _SQUARE.finditer(a.value)} & set(loaded)
        if not squared:
            continue
        if a.loop_depth == 0 and a in sums:
            lines.append(a.line)
        elif a.op == "+=" and a.loop_depth == 1:  # a column loop's accumulator, summed after it
            acc = set(assign_targets(a))
            lines += [a.line] + [s.line for s in sums if s.line > a.line and acc & set(s.names)]
    return sorted(set(lines))


def _residual_params(k: KernelFacts) -> list[str]:
    return [p.name for p in k.params if _RESIDUAL.match(p.name) or _RESIDUAL_PARAM.match(p.name)]


def _adds_two_rows(a: Assign, loaded: dict[str, int]) -> bool:
    """`x += r`, `x = x + r` or `tl.load(X) + tl.load(R)`: two rows from different loads added."""
    if a.value.count("tl.load(") >= 2 and "+" in a.value:
        return True
    sources = {loaded[n] for n in a.names if n in loaded}
    if a.op == "+=":
        sources |= {loaded[t] for t in assign_targets(a) if t in loaded}
        return len(sources) >= 2
    return a.op == "=" and "+" in a.value and len(sources) >= 2 and not _SQUARE.search(a.value)


def _residual_in_kernel(k: KernelFacts) -> list[int]:
    """A norm kernel that already adds a residual: the statements reading a residual
    pointer or flag among its parameters, or two loaded rows added before the statistic."""
    stats = _norm_statistic(k)
    if not stats:
        return []
    params = set(_residual_params(k))
    if params:
        used = [c.line for c in k.calls if params & {n for x in [*c.args, *c.kwargs.values()] for n in IDENT.findall(x)}]
        used += [a.line for a in k.assigns if params & set(a.names)]
        used += [i["line"] for i in k.ifs if params & set(i.get("names", []))]
        if used:
            return used
    loaded = _loaded(k)
    return [a.line for a in k.assigns if a.line < max(stats) and _adds_two_rows(a, loaded)]


def _adds_residual_first(ln: Launch, k: KernelFacts) -> bool:
    """The launching function adds a residual before this launch: a host add, an add
    kernel launched before it in the same function, or a residual tensor the function
    reads and the kernel does not take (the sum happens on the host), unless the only
    add comes after the launch (the residual added to the norm's output)."""
    if any(_HOST_ADD.search(c) for c in ln.calls_before):
        return True
    if any(o.host_function == ln.host_function and o.kernel != k.name and 0 < o.line < ln.line
           and _ADD_KERNEL.search(o.kernel) for o in k.launches):
        return True
    if any(_HOST_ADD.search(c) for c in ln.calls_after):
        return False
    return any(_RESIDUAL.match(n) for n in ln.host_names)


def _host_residual_add(k: KernelFacts) -> list[int] | None:
    if _residual_params(k):
        return None
    lines = [ln.line or k.line_start for ln in own_launches(k) if _adds_residual_first(ln, k)]
    return lines or None


ROW_NORM = custom(
    "row-norm-statistic",
    "a row norm's statistic: the sum of the squared loaded row (`tl.sum(x * x)`) and its root (`rsqrt`)",
    _norm_statistic)
RESIDUAL_IN_KERNEL = custom(
    "residual-in-norm-kernel",
    "the norm kernel takes the residual (a `residual`/`R` pointer, `HAS_RESIDUAL`) or adds two loaded rows "
    "before its statistic",
    _residual_in_kernel)
HOST_RESIDUAL_ADD = custom(
    "host-residual-add",
    "the launcher in this file adds a residual before launching the norm (reads a `residual` tensor the "
    "kernel does not take, `torch.add`/`.add_`, or an add kernel launched just before)",
    _host_residual_add)


def row_fits_for_fusion(k: KernelFacts, wl: Workload) -> Payoff:
    """One read of the `rows × cols` sum and one launch saved while the row fits one block
    (≤ 8,192 columns); past 16,384 the fused kernel re-reads the sum in a second pass."""
    rows, cols = row_shape(k, wl)
    if cols is None:
        return Payoff(UNKNOWN, f"pays if the hidden size fits one block (≤ {FITS:,} columns): the sum then "
                      "never goes back to HBM", "--shape cols=N")
    if cols > SPILLS:
        return Payoff(DOES_NOT_PAY, f"a row of {cols:,} columns does not fit one program (> {SPILLS:,}): the fused "
                      "kernel must read the stored sum back in a second pass, the same bytes as the two kernels")
    if cols > FITS:
        return Payoff(UNKNOWN, f"a row of {cols:,} columns is between {FITS:,} (fits) and {SPILLS:,} (spills): "
                      "measure it with `skel verify`")
    saved = f"{rows * cols * 2 / 2**20:,.1f} MiB (bf16) and one launch" if rows else "one read of the sum and a launch"
    return Payoff(PAYS, f"a row of {cols:,} columns fits one block: the norm no longer reads the sum back — "
                  f"{saved} per call (5 → 4 values moved per element)")


SKELETON = Skeleton(
    id="fused-add-rmsnorm",
    title="Fuse the residual add into the RMSNorm/LayerNorm kernel",
    summary="Load x and residual, add in registers, store the new residual and the normalised row in one kernel.",
    category=Category.FUSION,
    doc=__doc__,
    ruled_out_by=(r"\bfus\w*\s+(the\s+)?(residual|add)\b", r"\badd[\s_]?(rms|layer)[\s_]?norm\b"),
    present=RESIDUAL_IN_KERNEL,
    preconditions=[ROW_NORM, HOST_RESIDUAL_ADD, no_dot("a row norm, not a matmul")],
    subject=ROW_NORM,
    env=Env(),
    payoff=row_fits_for_fusion,
    helps=("memory", "latency"),
)
