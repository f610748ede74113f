"""Pad a shared-memory tile read (or written) column-wise to a row length that is not a multiple of 32 banks (`[32][33]`), or XOR-swizzle its column.

## What it does
A 2-D `__shared__` tile whose rows are a multiple of 128 bytes, accessed by a warp down a
column — lane `l` touching row `l` of one column, as in a transpose or a column-wise
reduction — gets one extra element per row, or its column index XOR-ed with the row:

    __shared__ float tile[32][32];                __shared__ float tile[32][32 + 1];
    tile[threadIdx.y + j][threadIdx.x] = in[..];  tile[threadIdx.y + j][threadIdx.x] = in[..];
    __syncthreads();                          →   __syncthreads();
    out[..] = tile[threadIdx.x][threadIdx.y + j]; out[..] = tile[threadIdx.x][threadIdx.y + j];

The pad is one 4-byte word — one float, two bf16, four int8 (`4 / sizeof(T)`, as aiter's
`LDS_PAD`): a single bf16 of padding still leaves a 2-way conflict. The row-wise side does not
change. The swizzled form keeps the tile's size and alignment
(needed where rows are read with 16-byte vectors or `ldmatrix`): `tile[r][c ^ r]` (for
vectors: the 16-byte chunk index XOR-ed with the row modulo the number of chunks).

## Why it is faster
Shared memory is 32 banks of 4 bytes; a warp's request is served in one pass only when its
32 lanes hit 32 different banks (or the same word). Element (r, c) of a `float[32][32]` tile is
in bank `(32 r + c) % 32 = c`: a column read puts all 32 lanes on one bank and is replayed 32
times — a 32-way conflict; bf16 rows of 64 elements, or any row of a multiple of 128 bytes,
do the same. With a row of 33 floats the bank is `(33 r + c) % 32 = (r + c) % 32`: the
column spreads over all 32 banks and the access is one pass. A transpose or column
reduction that stages every element through the tile pays the conflict on every element,
so shared-memory replays, not HBM, bound it: NVIDIA's "Efficient Matrix Transpose" measures
the padded tile close to a plain copy and the unpadded one well below it.

When it does not pay: a tile accessed only along rows (lane `l` on column `l`), a row
length whose conflict is already small (a 16-float row gives 16-way, a 17-float row none,
an 8-byte row 2-way), or a kernel bound by something else than shared memory. The pad costs
one element per row of shared memory and breaks 16-byte alignment of rows: a tile read with
`float4` or `ldmatrix` needs the swizzle instead.

## Applies when
- a `__shared__` array of two or more dimensions (`float tile[32][32]`, `T s[kWarps][32][32]`)
  is subscripted with a lane-varying index (`threadIdx.x`, a lane, `tid`) in its next-to-last
  dimension and no lane-varying index in its last — a warp walks down a column;
- its row (the last dimension) is not padded (`+ 1`, `+ PAD`) and no index of it is XOR-ed
  (`^`), and the sizes written in the kernel (literals, a `constexpr` in its body) do not
  bound the conflict below 8-way: a row of 17 floats is conflict-free, a tile of 4 rows
  puts at most 4 lanes on a column;
- **it pays** when the row length and row count, from the declaration, a `constexpr` in the
  kernel or `--shape NAME=N`, make the column access an 8-way or worse conflict (a multiple
  of 32 elements of any width, 64 bf16, 16 float, over 8 rows or more); a named size nobody
  gave is conditional on `--shape`; 2- to 4-way (from the sizes given) is conditional too
  (it pays where shared memory bounds the kernel), and conflict-free does not pay.

## Does not apply when
- the tile is only read and written along rows, or the next-to-last index is warp-uniform
  (`s[warp_id][lane]`, `s[threadIdx.y][threadIdx.x]`): every lane is on its own bank already;
- the row is padded already (`[32][33]`, `[kBlockM + 1]`, `[TILE + LDS_PAD]`) or the column index is
  swizzled (`^`);
- the tile is read through `ldmatrix`, `wmma::load_matrix_sync` or TMA, by pointer, not by
  subscript (their layouts and swizzles are the library's business);
- a 1-D array (a reduction buffer `red[threadIdx.x]`): rows and columns are not written in it.

## References
- ROCm aiter `csrc/transpose_add.cu` (`add_tn_big_tile_kernel`: `__shared__ _T sa[BIG_TILE_SIZE]
  [BIG_TILE_SIZE + LDS_PAD]` with `LDS_PAD = 4 / sizeof(_T)`, "pad LDS row by dword", written
  `sa[row][col]` and read `sa[col][row]`) — at `869a30c193`, 2024-11-27, "add add_transpose
  implement", before 2025-07-01; moved to `csrc/kernels/transpose_operator.cu` and tuned at
  `306ee89e35`, 2024-12-24, "update transpose_operator.cu : using swizzle method to avoid cacheline"
  (that swizzle is of block indices, for caches; the LDS pad stays), before 2025-07-01
- hpcaitech ColossalAI `colossalai/kernel/cuda_native/csrc/kernels/dropout_kernels.cu`
  (`ls_dropout_act_bias_bwd_kernel`: the bias gradient's column sums staged in `__shared__ float
  tile[WARP_SIZE][WARP_SIZE + 1]`, stored by column, reduced by row) — at `5c3843dc98`,
  2021-12-21, "add colossalai kernel module (#55)", before 2025-07-01
- facebookresearch xformers `xformers/components/attention/csrc/cuda/attention.cu` (the backward
  kernels' `__shared__ scalar_t fact[TILE_SIZEQ][TILE_SIZEK + 1]`) — at `a0fb375377`, 2022-04-25,
  "Memory efficient attention - backward pass (#281)", before 2025-07-01
- Dao-AILab flash-attention `csrc/flash_attn/src/flash_fwd_kernel.h` (`combine_attn_seqk_parallel`:
  `__shared__ ElementAccum sLSE[kMaxSplits][kBlockM + 1]`, written by split and read by row) — at
  `b1fbbd8337`, 2023-08-29, "Implement splitKV attention", before 2025-07-01
- the candidate clusters "+ constexpr block size" (aiter's transpose commit) and "fewer call
  __syncthreads" (bitsandbytes' "Shared memory efficient" GEMV commits, which shrink and
  reuse shared arrays rather than pad them): the pad itself is added with new kernels in
  these repositories, not retrofitted, in the history mined
- NVIDIA, "An Efficient Matrix Transpose in CUDA C/C++" (Mark Harris, 2013): `tile[TILE_DIM]
  [TILE_DIM+1]`; CUDA C++ Best Practices Guide, "Shared Memory and Memory Banks"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.cuda import code, line_of, thread_linear_names
from skel.skeletons.predicates.cuda_tiles import is_kernel

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload

#: `__shared__ float tile[32][32];`, `__shared__ __align__(16) T s[kWarps][kTile][kTile];`
_DECL = re.compile(r"__shared__\s+(?:__align__\s*\(\s*\w+\s*\)\s*)?((?:[\w:]+(?:\s*<[^;<>]*>)?\s+)+?)"
                   r"([A-Za-z_]\w*)\s*((?:\[[^\[\]]+\]\s*){2,})\s*;")
_PADDED = re.compile(r"[+]\s*(?:\d+|[A-Za-z_]\w*)\s*$")
_BYTES = {"float": 4, "int": 4, "unsigned": 4, "uint32_t": 4, "int32_t": 4, "half": 2, "__half": 2,
          "__nv_bfloat16": 2, "nv_bfloat16": 2, "bf16": 2, "short": 2, "int16_t": 2, "uint16_t": 2, "double": 8,
          "int64_t": 8, "uint64_t": 8, "half2": 4, "__half2": 4, "__nv_bfloat162": 4, "float2": 8, "char": 1,
          "int8_t": 1, "uint8_t": 1, "__nv_fp8_e4m3": 1, "__nv_fp8_e5m2": 1}
_CONSTEXPR = re.compile(r"\bconstexpr\s+(?:static\s+)?(?:const\s+)?[\w:]+\s+([A-Za-z_]\w*)\s*=\s*(\d+)\s*;")
_INT = re.compile(r"^\(?\s*(\d+)[uUlL]*\s*\)?$")


@dataclass(frozen=True)
class _Tile:
    name: str
    elem: str
    dims: tuple[str, ...]
    line: int

    @property
    def row(self) -> str:
        return self.dims[-1]


@dataclass(frozen=True)
class _ColumnAccess:
    tile: _Tile
    line: int
    text: str


def _tiles(k: KernelFacts, text: str) -> list[_Tile]:
    out = []
    for m in _DECL.finditer(text):
        words = m.group(1).split()
        elem = words[-1] if words else ""
        dims = tuple(d.strip() for d in re.findall(r"\[([^\[\]]+)\]", m.group(3)))
        out.append(_Tile(m.group(2), elem, dims, line_of(k, text, m.start())))
    return out


def _lane_varying(expr: str, lanes: set[str]) -> bool:
    """``expr`` differs from lane to lane of a warp: it reads `threadIdx.x` or a thread-linear
    name (`tid`, `lane`, `i = blockIdx.x * blockDim.x + threadIdx.x`), not divided down to a
    warp index (`threadIdx.x / 32`, `tid >> 5`)."""
    for m in re.finditer(r"\bthreadIdx\.x\b|\b[A-Za-z_]\w*\b", expr):
        tok = m.group(0)
        if tok != "threadIdx.x" and (tok not in lanes or expr[:m.start()].rstrip().endswith((".", "->"))):
            continue
        after = expr[m.end():].lstrip().lstrip(")").lstrip()  # past a cast's parenthesis
        if after.startswith(("/", ">>")):
            continue
        return True
    return False


def _lanes(k: KernelFacts) -> set[str]:
    """Thread-linear names, less those assigned a warp index through a cast
    (`wave_id = static_cast<int>(threadIdx.x) / LANES`)."""
    lanes = set(thread_linear_names(k))
    loop_vars = {lp.targets[0] for lp in k.loops if lp.targets}
    for _ in range(2):
        for a in k.assigns:
            t = a.targets[0].strip() if a.targets else ""
            if a.op == "=" and t in lanes and t not in loop_vars and not _lane_varying(a.value, lanes - {t}):
                lanes.discard(t)
    return lanes


def _lanes_at(k: KernelFacts, line: int, lanes: set[str]) -> set[str]:
    """The lane-varying names at ``line``: a loop variable is judged by the loop around that line
    that sets it (`for (r = lane; ...)` varies by lane, `for (r = threadIdx.y; ...)` does not),
    whatever other loops of the kernel reusing the name start from."""
    out = set(lanes)
    for lp in sorted((lp for lp in k.loops if lp.line <= line <= lp.end_line), key=lambda lp: lp.line):
        var = lp.targets[0] if lp.targets else None
        init = lp.args[0] if lp.args else ""
        if not var or "=" not in init:
            continue
        out.discard(var)
        if _lane_varying(init.split("=", 1)[1], out):
            out.add(var)
    return out


def _subscript_chains(text: str, name: str) -> list[tuple[int, list[str]]]:
    """Each `name[i0][i1]...` in ``text``: its offset and its index expressions."""
    out = []
    for m in re.finditer(rf"\b{re.escape(name)}\s*\[", text):
        idx, i = [], m.end() - 1
        while i < len(text) and text[i] == "[":
            depth, j = 1, i + 1
            while j < len(text) and depth:
                depth += {"[": 1, "]": -1}.get(text[j], 0)
                j += 1
            idx.append(text[i + 1:j - 1].strip())
            i = j
            while i < len(text) and text[i] in " \t":
                i += 1
        out.append((m.start(), idx))
    return out


def _value(expr: str, k: KernelFacts, text: str, sizes: dict[str, int]) -> int | None:
    m = _INT.match(expr)
    if m:
        return int(m.group(1))
    consts = {n: int(v) for n, v in _CONSTEXPR.findall(text)}
    name = expr.strip("() ")
    if name in consts:
        return consts[name]
    if name in sizes:
        return sizes[name]
    for p in k.params:
        if p.name == name and p.constexpr and p.default and _INT.match(p.default):
            return int(p.default)
    return None


def _degree(row: int, elem_bytes: int, rows: int = 32) -> int:
    """The bank conflict of a warp reading one column of ``rows`` rows ``row`` elements long: the
    most distinct 4-byte words any one bank serves (8-byte elements: a half-warp per pass). A
    tile of fewer than 32 rows has only that many lanes on a column at once."""
    lanes = min(16 if elem_bytes >= 8 else 32, max(1, rows))
    banks: dict[int, set[int]] = {}
    for lane in range(lanes):
        word = lane * row * elem_bytes // 4
        banks.setdefault(word % 32, set()).add(word)
    return max(len(w) for w in banks.values())


def _worst(row: int, elem: str, rows: int = 32) -> tuple[int, str]:
    """(the conflict degree, the width it was computed for): the element's own width when
    known, else the smallest degree over 1-8 byte elements (a template `T`)."""
    if elem in _BYTES:
        return _degree(row, _BYTES[elem], rows), f"{_BYTES[elem]}-byte `{elem}`"
    return min(_degree(row, b, rows) for b in (1, 2, 4, 8)), f"`{elem}` of any width from 1 to 8 bytes"


def _pad(elem: str) -> str:
    """The pad that shifts each row by one bank: one 4-byte word (`4 / sizeof(T)` elements)."""
    b = _BYTES.get(elem)
    return str(max(1, 4 // b)) if b else "4 / sizeof(T)"


def _column_accesses(k: KernelFacts) -> list[_ColumnAccess]:
    """Subscripts of unpadded, unswizzled shared tiles whose next-to-last index varies by lane
    and whose last does not: a warp walking down a column."""
    if not is_kernel(k):
        return []
    text = code(k)
    lanes = _lanes(k)
    out = []
    for t in _tiles(k, text):
        if _PADDED.search(t.row):
            continue
        row, rows = _value(t.row, k, text, {}), _value(t.dims[-2], k, text, {})
        if (row is not None and _worst(row, t.elem, rows or 32)[0] < 8) or (rows is not None and rows < 8):
            continue  # a literal row length (or row count) with a small conflict at most
        chains = _subscript_chains(text, t.name)
        if any("^" in ix for _, idx in chains for ix in idx):
            continue  # swizzled
        for at, idx in chains:
            if len(idx) != len(t.dims):
                continue
            here = _lanes_at(k, line_of(k, text, at), lanes)
            if _lane_varying(idx[-2], here) and not _lane_varying(idx[-1], here):
                out.append(_ColumnAccess(t, line_of(k, text, at), f"{t.name}[{']['.join(idx)}]"))
    return out


def _column_lines(k: KernelFacts) -> list[int]:
    return [c.line for c in _column_accesses(k)]


def _padded_or_swizzled(k: KernelFacts) -> list[int]:
    """Declarations of shared tiles with a padded row (`[32 + 1]`, `[TILE + PAD]`), or subscripts
    of a shared tile with an XOR-ed index."""
    if not is_kernel(k):
        return []
    text = code(k)
    lines = [t.line for t in _tiles(k, text) if _PADDED.search(t.row)]
    for t in _tiles(k, text):
        lines += [line_of(k, text, at) for at, idx in _subscript_chains(text, t.name) if any("^" in ix for ix in idx)]
    return lines


def bank_conflict_pays(k: KernelFacts, wl: Workload) -> Payoff:
    """Pays at an 8-way or worse conflict on the column access (from the row length and the
    element width); 2- to 4-way is unknown; conflict-free does not pay; a named row length
    nobody gave is unknown with `--shape NAME=N`."""
    accesses = _column_accesses(k)
    if not accesses:
        return Payoff(UNKNOWN, "no column-wise access to an unpadded shared tile")
    text = code(k)
    sizes = dict(wl.sizes)
    unknown: list[str] = []
    needs: list[str] = []
    mild: list[str] = []
    free: list[str] = []
    for a in accesses:
        t = a.tile
        row, rows = _value(t.row, k, text, sizes), _value(t.dims[-2], k, text, sizes)
        where = f"`{a.text}` (line {a.line}) on `{t.elem} {t.name}[{']['.join(t.dims)}]`"
        missing = [d for d, v in ((t.row, row), (t.dims[-2], rows)) if v is None]
        if row is not None and rows is None and _worst(row, t.elem)[0] < 8:
            missing = []  # small whatever the row count: judged below on 32 rows
        if missing:
            unknown.append(f"{where}: {' and '.join(f'`{d}`' for d in dict.fromkeys(missing))} not known here (the "
                           "row length, and the rows: a column of fewer than 32 rows has fewer lanes on it)")
            needs += [f"--shape {n}=N" for d in missing for n in re.findall(r"[A-Za-z_]\w*", d)]
            continue
        assert row is not None  # what `missing` checked
        deg, width = _worst(row, t.elem, rows or 32)
        if deg >= 8:
            return Payoff(PAYS, f"{where}: a warp accesses a column of rows {row} elements long, every lane on the "
                          f"same few banks — a {deg}-way bank conflict ({width}), replayed {deg} times per access; "
                          f"a row padded by one 4-byte word ({row} + {_pad(t.elem)} elements) or an XOR-swizzled "
                          "column puts the lanes on different banks")
        (mild if deg > 1 else free).append(f"{where}: {deg}-way ({width}, rows of {row})")
    if unknown:
        return Payoff(UNKNOWN, "; ".join(unknown) + ": a multiple of 32 elements (or of 128 bytes) makes the column "
                      "access a 32-way (or 8-way and worse) bank conflict", needs=" ".join(dict.fromkeys(needs)))
    if mild:
        return Payoff(UNKNOWN, "; ".join(mild) + ": a small conflict, which pays to remove where shared memory "
                      "bounds the kernel")
    return Payoff(DOES_NOT_PAY, "; ".join(free) + ": conflict-free already")


COLUMN_ACCESS = custom(
    "unpadded-shared-tile-column-access",
    "a 2-D `__shared__` tile with an unpadded row (`float tile[32][32]`) subscripted down a column by a warp "
    "(lane-varying next-to-last index, `tile[threadIdx.x][j]`): a bank conflict on every access",
    _column_lines)
PADDED = custom(
    "padded-or-swizzled-shared-tile",
    "a `__shared__` tile with a padded row (`[32][33]`, `[TILE + PAD]`) or an XOR-swizzled index (`c ^ r`)",
    _padded_or_swizzled)

SKELETON = Skeleton(
    id="cuda-smem-padding-bank-conflicts",
    title="Pad (or XOR-swizzle) shared tiles accessed down a column: no bank conflicts",
    summary="Pad a __shared__ tile read down a column to [32][33] (or XOR-swizzle it): 32-way bank conflicts "
    "become none.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bbank[- ]conflicts?\b", r"\bpad(ded|ding)?\b.*\bshared\b", r"\bswizzl\w*"),
    present=PADDED,
    preconditions=[COLUMN_ACCESS],
    subject=COLUMN_ACCESS,
    env=Env(),
    helps=("memory", "latency"),
    languages=("cuda",),
    payoff=bank_conflict_pays,
)
