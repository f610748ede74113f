"""Payoff conditions shared by skeletons: does the technique pay at the kernel's sizes?

Each function reads a kernel's facts and its workload (``skel.kernels.workload``) and
answers a ``Payoff``: ``pays`` / ``does-not-pay`` with the sizes and the arithmetic, or
``unknown`` with the flag that would decide it. They never guess a size: a kernel whose
sizes nobody gave gets a conditional answer, and ``skel suggest`` lists it apart.

The thresholds are the measured ones, with their source:

- 2**31: Triton computes `pid * stride` in int32 unless an operand is int64, and the
  product wraps past 2**31 - 1 (skeleton ``int64-offsets``);
- short rows: a program of one row of at most 1,024 columns leaves most lanes idle; at
  4,096 and 32,768 columns several rows per program measured 0.95–1.00× on an H100
  (issue #35's GPU run of naive kernels);
- many programs: a grid of at least 16 waves of SMs (16 × 132 on an H100/H200) pays the
  per-program launch cost often enough for a persistent grid to win; a grid of a few waves
  does not.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.workload import INT32_LIMIT
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Payoff

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.kernels.workload import Workload

#: a row this short (columns) leaves most lanes of a one-row program idle
SHORT_ROW = 1024
#: a row this wide already fills a program: several rows per program measured 0.95-1.00x
WIDE_ROW = 4096
#: waves of programs over the SMs past which per-program start-up is worth amortising
MANY_WAVES = 16
#: waves of programs at or under which there is nothing to amortise
FEW_WAVES = 4
#: a scalar parameter holding a row's width (the column bound of a row kernel)
_COLS_NAME = re.compile(r"(?i)^(n_?cols|ncols|num_cols|n_col|cols|hidden(_size|_dim)?|d|dim|d_model|n|N|H|width|"
                        r"row_size|row_len|feature_size|head_dim|HEAD_DIM|D)$")
_ROWS_NAME = re.compile(r"(?i)^(n_?rows|nrows|num_rows|rows|m|M|num_tokens|n_tokens|batch|B|BT|T)$")


def offsets_past_int32(k: KernelFacts, wl: Workload) -> Payoff:
    """Some linear offset the kernel computes can pass 2**31: a tensor it indexes holds at
    least 2**31 elements (rows × columns, a shape, or ``elements``)."""
    n, name = wl.largest_elements(k)
    rows, cols = row_shape(k, wl)
    if rows is not None and cols is not None and (n is None or rows * cols > n):
        n, name = rows * cols, f"rows × cols ({rows:,} × {cols:,})"
    if n is not None and n - 1 >= INT32_LIMIT:  # the largest in-bounds offset is n - 1
        return Payoff(PAYS, f"{name} holds {n:,} elements: its last offset, {n - 1:,}, is past 2**31 - 1, where an "
                      "int32 offset wraps")
    explicit = wl.size("rows") is not None and wl.size("cols") is not None  # a row kernel's tensor, given
    if n is not None and (wl.all_tensors_known(k) or explicit):
        return Payoff(DOES_NOT_PAY, f"the largest tensor ({name}) holds {n:,} elements, at most 2**31: every "
                      "offset fits in int32")
    known = f" (the largest known, {name}, holds {n:,})" if n is not None else ""
    return Payoff(UNKNOWN, "pays only if a tensor this kernel indexes holds more than 2**31 elements" + known,
                  "--shape elements=N (the largest tensor) or --shape PTR=DIMS per pointer")


def row_shape(k: KernelFacts, wl: Workload) -> tuple[int | None, int | None]:
    """A row-wise kernel's row count and width: ``rows``/``cols`` when given, else a scalar
    parameter named like one (``n_cols=4096``), else the last dimension of the largest
    tensor shape given (its rows the product of the others)."""
    rows, cols = wl.size("rows"), wl.size("cols")
    params = [p.name for p in k.params if not p.constexpr]
    if cols is None:
        cols = next((wl.sizes[p] for p in params if _COLS_NAME.match(p) and p in wl.sizes), None)
    if rows is None:
        rows = next((wl.sizes[p] for p in params if _ROWS_NAME.match(p) and p in wl.sizes), None)
    shapes = [s for n, s in wl.shapes.items() if n in params or n == "elements"] + list(wl.inputs)
    shapes = [s for s in shapes if len(s) >= 2]
    if shapes and (rows is None or cols is None):
        big = max(shapes, key=lambda s: (len(s) > 1, _prod(s)))
        cols = cols if cols is not None else big[-1]
        rows = rows if rows is not None else _prod(big[:-1])
    return rows, cols


def _prod(dims: tuple[int, ...]) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


def short_and_many_rows(k: KernelFacts, wl: Workload) -> Payoff:
    """Rows short against a program (≤ 1,024 columns) and many more rows than SMs (≥ 16
    waves): what several rows per program amortise."""
    rows, cols = row_shape(k, wl)
    sms = wl.sms
    if cols is not None and cols >= WIDE_ROW:
        return Payoff(DOES_NOT_PAY, f"rows of {cols:,} columns already fill a program (measured 0.95–1.00× at "
                      "4,096 and 32,768 columns)")
    if rows is not None and rows <= FEW_WAVES * sms:
        return Payoff(DOES_NOT_PAY, f"{rows:,} rows are at most {FEW_WAVES} waves of {sms} SMs: one program per row "
                      "already finishes in a few waves")
    if cols is not None and rows is not None and cols <= SHORT_ROW and rows >= MANY_WAVES * sms:
        return Payoff(PAYS, f"{rows:,} rows of {cols:,} columns: short rows, {rows // sms:,} per SM")
    need = [x for x, v in (("rows", rows), ("cols", cols)) if v is None]
    if not need:
        return Payoff(UNKNOWN, f"{rows:,} rows of {cols:,} columns: between the sizes measured (pays at ≤ "
                      f"{SHORT_ROW:,} columns and ≥ {MANY_WAVES * sms:,} rows); measure it with `skel verify`")
    return Payoff(UNKNOWN, f"pays if rows are short (≤ {SHORT_ROW:,} columns) and many (≥ {MANY_WAVES * sms:,})",
                  " ".join(f"--shape {x}=N" for x in need))


def many_short_programs(k: KernelFacts, wl: Workload) -> Payoff:
    """Programs far outnumber the SMs (≥ 16 waves) and each does little (a row of ≤ 2,048
    columns): what a persistent grid saves is the per-program start-up."""
    rows, cols = row_shape(k, wl)
    programs = wl.size("programs") or rows
    sms = wl.sms
    if programs is not None and programs <= FEW_WAVES * sms:
        return Payoff(DOES_NOT_PAY, f"{programs:,} programs are {FEW_WAVES} waves of {sms} SMs or fewer: "
                      "nothing to amortise")
    if cols is not None and cols > 2 * SHORT_ROW:
        return Payoff(DOES_NOT_PAY, f"each program's row of {cols:,} columns is long enough to hide its start-up")
    if programs is not None and cols is not None and programs >= MANY_WAVES * sms:
        return Payoff(PAYS, f"{programs:,} programs over {sms} SMs ({programs // sms:,} waves), {cols:,} columns each")
    need = [x for x, v in (("rows", programs), ("cols", cols)) if v is None]
    if not need:
        return Payoff(UNKNOWN, f"{programs:,} programs of {cols:,} columns: between the sizes measured; "
                      "measure it with `skel verify`")
    return Payoff(UNKNOWN, f"pays if programs are many (≥ {MANY_WAVES * sms:,}) and short (≤ {2 * SHORT_ROW:,} "
                  "columns)", " ".join(f"--shape {x}=N" for x in need))


#: payoffs that ask whether *any* run reaches a size (can an offset pass 2**31?): the
#: largest run a repository's tests or benchmarks make (``skel.kernels.callers``) answers
#: them either way. The others ask about the production workload's row and program counts,
#: of which a test's sizes (often a smoke test's) are only a lower bound: a test that
#: already has many short rows says they pay, one with a few rows says nothing
#: (``skel.retriever.suggest._payoffs``).
ANY_RUN = frozenset({offsets_past_int32})
