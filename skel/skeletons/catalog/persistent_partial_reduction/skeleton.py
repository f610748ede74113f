"""Norm backward: ~SM-count programs each sum a private dW/dB row, then one small final sum.

## What it does
The weight and bias gradients of a normalisation layer are sums over all rows:
`dW = sum_rows(dy * x_hat)`, `dB = sum_rows(dy)`. A one-program-per-row backward either
adds each row's contribution into `dW` with `tl.atomic_add` (every program hits the same
`N` addresses) or writes a `[n_rows, N]` buffer of per-row contributions that the host
reduces with `.sum(0)`. The persistent form launches about one program per SM; program
`p` takes rows `p * rows_per_program ... (p + 1) * rows_per_program` (or a
`tl.num_programs` stride), keeps `dw` / `db` in registers across its rows, and stores one
private row `_dW[p, :]`. The host (or a second tiny kernel) sums the `[sm_count, N]`
partials:

    row_start = pid * rows_per_program
    dw = tl.zeros([BLOCK_N], dtype=tl.float32)
    for row in range(row_start, min(row_start + rows_per_program, n_rows)):
        ... dx for this row ...; dw += dy * x_hat
    tl.store(_dW + pid * N + cols, dw, mask=mask)
    # host: dW = _dW.sum(0)

## Why it is faster
Atomics on the same `N` addresses serialize in L2: with 16K rows and 4K columns that is
64M contended fp32 atomic adds, and the order — hence the bits of `dW` — changes from run
to run. A per-row buffer avoids contention but writes and rereads `n_rows x N` fp32
values (256 MB for 16K x 4K), as much traffic as the whole backward. Private per-program
rows cost `sm_count x N` (a few MB), the accumulation happens in registers, the final
sum is small and the result is deterministic. The persistent loop also loads `W` once per
program instead of once per row.

## Applies when
- the kernel adds into a weight/bias gradient shared by all rows: a `tl.atomic_add` whose
  address does not depend on the row (grid axis 0) — every row program hits the same
  columns — or a store of per-row contributions into a `dW`/`dB` buffer indexed by the
  row (reduced by the host afterwards);
- there is no loop over rows per program yet (no `rows_per_program` slice, no
  `tl.num_programs` stride);
- many rows: tokens of a training batch (thousands to millions) against ~132 SMs.

## Does not apply when
- few rows (a handful of sequences): a per-row buffer is small and the atomics barely
  contend;
- the reduction is over a dimension other than the rows (per-token `dk`/`dv` atomics of
  attention backward, indexed by the token): there is no shared vector to keep private;
- the kernel already takes a lock-protected partial buffer per `GROUP_SIZE_M` rows (the
  Triton tutorial's `_layer_norm_bwd_dx_fused`): it is already a partial reduction;
- the program must also write something per row that depends on the final `dW` (it is
  only known after the final sum).
The grid must be `sm_count` (from `torch.cuda.get_device_properties(...).multi_processor_count`)
and `rows_per_program = cdiv(n_rows, sm_count)`; the partial buffer is fp32.

## References
- Liger-Kernel `src/liger_kernel/ops/rms_norm.py` (`_rms_norm_backward_kernel`: `rows_per_program`, — at `5e3bf99abb`, before 2025-07-01
  `_dW = torch.empty((sm_count, n_cols))`, `_dW.sum(dim=0)`, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/layer_norm.py` (`_layer_norm_backward_kernel`, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/group_norm.py` (`_group_norm_backward_kernel`: `tl.atomic_add(DW_ptr + channel_idx, ...)`, — at `5e3bf99abb`, before 2025-07-01
  the atomic form, v0.5.10)
- flash-linear-attention `fla/modules/layernorm.py` (`layer_norm_bwd_kernel`: `BS` rows per program, partial — at `49b00f0a94`, before 2025-07-01
  `dw + i_s * D` rows, v0.2.2)
- Triton tutorial `05-layer-norm.py` (`_layer_norm_bwd_dx_fused` + `_layer_norm_bwd_dwdb`: the lock-based
  GROUP_SIZE_M variant)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skel.kernels.flow import Flow, Node, args_of, constant, has_call, is_call, kwarg, walk
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_targets, custom
from skel.skeletons.patterns import absent, addresses, loops_where
from skel.skeletons.predicates.dots import no_dot
from skel.skeletons.predicates.loops import loop_carried
from skel.skeletons.predicates.pointers import pointer_arg, pointer_bases
from skel.skeletons.predicates.names import IDENT
from skel.skeletons.predicates.programs import grid_stride_loops, pid_names
from skel.skeletons.predicates.rows import ONE_ROW_PER_PROGRAM

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.flow import CallInfo
    from skel.kernels.model import KernelFacts, Loop

#: Pointer arguments holding a weight or bias gradient (`DW`, `dw_ptr`, `dB`, `dgamma`, `_dW`).
_PARAM_GRAD = re.compile(r"(?i)_?d_?(w|b|g|weight|bias|gamma|beta|scale|shift)(_\w*)?|\w*(w|b)_?grad\w*|"
                         r"partial_?d(w|b)\w*")
_LOCKS = ("tl.atomic_cas", "tl.atomic_xchg")


def _pid_axes(fl: Flow, expr: Node) -> set[int]:
    """Grid axes an expression depends on (-1 for an axis that is not a literal)."""
    axes = set()
    for e in fl.closure(expr)[1]:
        for n in walk(e):
            if is_call(n, "tl.program_id"):
                call = cast("cst.Call", n)  # is_call tested its type
                args = args_of(call)
                a = args[0] if args else kwarg(call, "axis")
                v = constant(a) if a is not None else 0
                axes.add(v if isinstance(v, int) else -1)
    return axes


def _shared_vector(fl: Flow, c: CallInfo, addr: Node, k: KernelFacts) -> bool:
    """A `tl.atomic_add` into a vector (`ptr + cols`, or one element per channel in a loop)
    whose address ignores grid axis 0, in a kernel with a grid: all row programs add into
    the same vector. A single scalar sum outside loops is a split reduction, not a gradient
    row."""
    if not any(x.name == "tl.program_id" for x in k.calls) or 0 in _pid_axes(fl, addr):
        return False
    # a vector of columns (or one per channel) every row program adds into
    return has_call(fl.closure(addr)[1], "tl.arange") or c.in_loop


def _row_gradient_store(fl: Flow, c: CallInfo, addr: Node, k: KernelFacts) -> bool:
    """A store into a weight-gradient buffer at a row-indexed address (one partial row per
    program, summed by the host), outside any loop, in a kernel whose program id is a row
    (`ptr + row * stride`)."""
    if c.in_loop:
        return False
    if any(x.name in _LOCKS for x in k.calls):
        return False  # lock-protected GROUP_SIZE_M partials: already a partial reduction
    if ONE_ROW_PER_PROGRAM.check(k) is None:
        return False  # chunked / tiled kernels: their `dw`, `dg` are per-token gradients
    call = next((x for x in k.calls if x.line == c.line and x.name == "tl.store"), None)
    bases = pointer_bases(pointer_arg(call), k, c.line) if call is not None else set()
    return any(_PARAM_GRAD.fullmatch(b) for b in bases) and 0 in _pid_axes(fl, addr)


def _row_pids(k: KernelFacts) -> set[str]:
    """Names holding the row-axis program id (`program_id(0)`), or computed from it outside
    loops (`i_g, i_sg = i_s // GS, i_s % GS`: tuple targets too)."""
    pids = {t for t, axis in pid_names(k).items() if axis == "0"}
    for _ in range(2):
        pids |= {t for a in k.assigns if a.loop_depth == 0 and set(a.names) & pids for t in assign_targets(a)}
    return pids


def _row_block_loop(lp: Loop, k: KernelFacts) -> bool:
    """A loop over the program's own rows: a grid-stride / `rows_per_program` loop, or a loop
    whose start is computed from the row-axis program id (`range(i_sg * BS, T, BT)`); a loop
    over the channels of a group (`program_id(1)`) is not one."""
    if lp.line in grid_stride_loops(k):
        return True
    return bool(lp.args) and bool(set(IDENT.findall(lp.args[0])) & _row_pids(k) or "tl.program_id" in lp.args[0])


def _row_block_loops(k: KernelFacts) -> set[int]:
    """Lines of the loops over a program's own rows (``_row_block_loop``)."""
    return {lp.line for lp in k.loops if _row_block_loop(lp, k)}


def _private_partials_after_row_loop(k: KernelFacts) -> list[int] | None:
    """A loop over the program's rows whose carried accumulator is stored once after it,
    in a kernel without `tl.dot` (a split-K GEMM is another technique)."""
    if any(c.name == "tl.dot" for c in k.calls):
        return None
    loops = _row_block_loops(k)
    lines = []
    for lp in k.loops:
        if lp.line not in loops:
            continue
        carried = set(loop_carried(k, lp))
        for c in k.calls_named("tl.store"):
            if c.line > lp.end_line and c.loop_depth < lp.depth and any(
                    n in carried for a in c.args[1:2] for n in IDENT.findall(a)):
                lines += [lp.line, c.line]
    return lines


PRIVATE_PARTIALS = custom(
    "private-partial-rows",
    "a row loop per program (`rows_per_program` / `tl.num_programs` stride) whose accumulator is stored once "
    "after it", _private_partials_after_row_loop)
SHARED_GRADIENT_ACCUMULATION = addresses(
    of=("tl.atomic_add",), kernel_where=_shared_vector, name="shared-atomic-gradient",
    describe="a `tl.atomic_add` whose address ignores the row axis (all rows add into one vector)") | addresses(
    of=("tl.store",), kernel_where=_row_gradient_store, name="per-row-gradient-buffer",
    describe="per-row weight-gradient contributions stored at a row-indexed address "
             "(a `[n_rows, N]` buffer summed on the host)")
NO_ROW_LOOP = absent(loops_where(where=_row_block_loop, name="row-loop", describe="a loop over rows per program"),
                     name="no-row-loop", describe="no loop over rows per program (one program per row)")

SKELETON = Skeleton(
    id="persistent-partial-reduction",
    title="Persistent partial reduction of dW/dB (no atomics, deterministic)",
    summary="Norm backward: ~SM_count programs each accumulate a private dW/dB row over their rows, then a small sum.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=PRIVATE_PARTIALS,
    preconditions=[SHARED_GRADIENT_ACCUMULATION, NO_ROW_LOOP, no_dot("a norm backward is row-wise work")],
    subject=SHARED_GRADIENT_ACCUMULATION,
    env=Env(),
    helps=("memory", "latency"),
)
