"""Launch about one program per SM and let each loop over many rows (grid-stride).

## What it does
A row kernel launched with one program per row (`grid = (n_rows,)`) becomes a
persistent kernel: the host launches about `NUM_SMS` (times a small occupancy factor)
programs, and each program walks the rows `pid, pid + num_programs, ...`:

    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        ...the old body, with `row` in place of `tl.program_id(0)`...

A variant gives each program a contiguous slice of `rows_per_program` rows (Liger's norm
backward, which also keeps a private partial dW per program).

## Why it is faster
When each row is small (hidden size of a few hundred), a program does very little work
and the launch is dominated by per-program overhead: block scheduling, the prologue
(offsets, masks), loads of row-invariant data such as a norm weight, and the tail wave.
A persistent program pays these once and streams rows back to back, and the compiler
can pipeline loads of the next row under the math of the current one (`tl.range` with
`num_stages`). platform.md measured a row softmax on the H200: 128 columns with 32 rows
per program ~2x; with 4,096 columns ~1.0x (memory-bound, the per-row work already hides
the overhead).

## Applies when
- the kernel uses a 1-D grid (`tl.program_id(0)` only) with the program id as a row
  index (`ptr + pid * row_stride`);
- the row fits in one block (no loop over column blocks) and is reduced (`tl.sum`,
  `tl.max`): norms, softmax, losses over small rows;
- there are many more rows than SMs (tokens x heads in a head-dim norm).

## Does not apply when
- rows are wide (thousands of columns or a column loop): the kernel is memory-bound and
  persistence buys ~nothing (platform.md: ~1.0x at 4,096 columns);
- there are few rows (fewer than a few waves of programs): launch overhead is small;
- the kernel already loops over rows with a `tl.num_programs`/`NUM_SMS` stride or a
  `rows_per_program` slice;
- tiled GEMMs: a persistent matmul (TT 09-persistent-matmul) is a different, larger
  rewrite (tile scheduler, TMA, epilogue overlap) that this skeleton does not cover.
The host must launch `min(n_rows, k * NUM_SMS)` programs (query
`torch.cuda.get_device_properties(...).multi_processor_count`); launching `n_rows`
programs with the loop still works but only adds overhead.

## References
- Triton tutorial `02-fused-softmax.py` (`softmax_kernel`: `tl.range(row_start, n_rows, row_step, num_stages=...)`)
- Liger-Kernel `src/liger_kernel/ops/rms_norm.py` (`_rms_norm_backward_kernel`, `rows_per_program`)
- Liger-Kernel `src/liger_kernel/ops/layer_norm.py` (`_layer_norm_backward_kernel`)
- Triton tutorial `09-persistent-matmul.py` (`matmul_kernel_persistent`, the GEMM analogue)
"""

from __future__ import annotations

import re

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_targets, calls, custom, split_top

_ID = re.compile(r"[A-Za-z_]\w*")
_GRID_NAME = re.compile(r"(?i)n?num_?sms|n_?sms|num_?(programs?|progs?|ctas|cores|workers)|grid_?size|n_?progs?")
_PER_PROGRAM = re.compile(r"(?i)\w*(rows|tiles|blocks|items|tokens)_per_(program|prog|pid|cta|sm|core|block)\w*")
_STRIDE = re.compile(r"(?i)\w*stride\w*|n_cols|n_col|hidden\w*|\w*_dim|D|N|H|C|K|V")


def _pid_names(k, fn: str = "tl.program_id") -> dict[str, str]:
    """Names assigned directly from ``fn(axis)`` -> the axis text ("0", "1", ...)."""
    out: dict[str, str] = {}
    for a in k.assigns:
        if fn not in a.calls:
            continue
        tg = assign_targets(a)
        vals = split_top(a.value) if len(tg) > 1 else [a.value]
        for t, v in zip(tg, vals):
            m = re.search(re.escape(fn) + r"\(\s*(?:axis\s*=\s*)?(\d*)", v)
            if m:
                out[t] = m.group(1) or "0"
    return out


def _grid_names(k) -> set[str]:
    names = set(_pid_names(k, "tl.num_programs"))
    names |= {p.name for p in k.params if _GRID_NAME.fullmatch(p.name)}
    names |= {n for n in k.names if _GRID_NAME.fullmatch(n)}
    for a in k.assigns:  # row_step = tl.num_programs(0) * ROWS_PER_BLOCK
        if set(a.names) & names and "tl.load" not in a.calls:
            names |= set(assign_targets(a))
    return names


def _persistent(k) -> list[int]:
    pids = set(_pid_names(k))
    grid = _grid_names(k)
    lines = []
    for lp in k.loops:
        if lp.kind == "while":
            steps = [a for a in k.assigns if lp.line <= a.line <= lp.end_line and a.op == "+="
                     and (set(a.names) & grid or "tl.num_programs" in a.calls)]
            if steps:
                lines.append(lp.line)
            continue
        if len(lp.args) < 3:
            continue
        start, step = lp.args[0], lp.args[2]
        if ("tl.program_id" in start or set(_ID.findall(start)) & pids) and (
                "tl.num_programs" in step or set(_ID.findall(step)) & grid):
            lines.append(lp.line)
    # rows_per_program slices: row_start = pid * rows_per_program; for r in range(row_start, ...)
    per = {n for n in k.names if _PER_PROGRAM.fullmatch(n)}
    if per:
        starts = {t for a in k.assigns if set(a.names) & per and set(a.names) & pids for t in assign_targets(a)}
        for lp in k.loops:
            if lp.args and set(_ID.findall(lp.args[0])) & (starts | per):
                lines.append(lp.line)
    return lines


def _one_row_per_program(k) -> list[int]:
    """A 1-D grid whose program id is a row index (``ptr + pid * row_stride``)."""
    pid_calls = k.calls_named("tl.program_id")
    if not pid_calls or any((c.args[:1] or [c.kwargs.get("axis", "0")])[0].strip() not in ("0", "axis=0")
                            for c in pid_calls):
        return []
    pids = _pid_names(k)
    if not pids:
        return []
    texts = [(a.line, a.value) for a in k.assigns] + [(c.line, a) for c in k.calls for a in c.args]
    hits = []
    for line, text in texts:
        for p in pids:
            for m in re.finditer(r"\b" + re.escape(p) + r"\b\s*\*\s*([A-Za-z_][\w.]*)", text):
                if _STRIDE.fullmatch(m.group(1).split(".")[-1]) and "tl.arange" not in text:
                    hits.append(line)
            for m in re.finditer(r"([A-Za-z_][\w.]*)\s*\*\s*\b" + re.escape(p) + r"\b", text):
                if _STRIDE.fullmatch(m.group(1).split(".")[-1]) and "tl.arange" not in text:
                    hits.append(line)
    return hits


_TILE_2D = re.compile(r"\[\s*:\s*,\s*None\s*\]|\[\s*None\s*,\s*:\s*\]")


def _one_d(k) -> bool:
    return not _TILE_2D.search(k.source)


def _no_column_loop(k) -> bool:
    loads = [c.line for c in k.calls if c.name == "tl.load"]
    return not any(lp.line <= ln <= lp.end_line for lp in k.loops for ln in loads)


PERSISTENT_LOOP = custom(
    "grid-stride-row-loop",
    "a loop over rows/tiles starting at the program id with a `tl.num_programs`/`NUM_SMS` stride, "
    "or a `rows_per_program` slice",
    _persistent,
)
ONE_ROW_PER_PROGRAM = custom(
    "one-row-per-program",
    "a 1-D grid whose program id indexes a row (`ptr + pid * row_stride`)",
    _one_row_per_program,
)
ROW_REDUCTION = calls("tl.sum", "tl.max", "tl.min", "tl.argmax", "tl.argmin", in_loop=False,
                      name="row-reduction", describe="a reduction over the row (`tl.sum`/`tl.max`)")
ROW_IN_ONE_BLOCK = custom("row-in-one-block", "no loop over column blocks (the row fits one block)",
                          _no_column_loop)
ROW_IS_1D = custom("row-is-1d", "1-D row tiles (no `[:, None]` 2-D tiles)", _one_d)
NO_DOT = ~calls("tl.dot", name="dot", describe="a `tl.dot`")

SKELETON = Skeleton(
    id="persistent-kernel",
    title="Persistent grid-stride row kernel",
    summary="Launch ~NUM_SMS programs that loop over rows with a tl.num_programs stride instead of one program per row.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=PERSISTENT_LOOP,
    preconditions=[ONE_ROW_PER_PROGRAM, ROW_REDUCTION, ROW_IN_ONE_BLOCK, ROW_IS_1D, NO_DOT],
    env=Env(),
    helps=("latency", "occupancy"),
    before='''
@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * y_row_stride + cols, x * rstd * w, mask=mask)
''',
    after='''
@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, x_row_stride, y_row_stride, n_rows, n_cols, eps,
                    BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    # launched with grid = (min(n_rows, 4 * NUM_SMS),)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)  # once per program
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        tl.store(y_ptr + row * y_row_stride + cols, x * rstd * w, mask=mask)
''',
)
