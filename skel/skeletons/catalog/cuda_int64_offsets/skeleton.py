"""Compute a CUDA kernel's block-derived offsets in 64 bits (`int64_t`, `size_t`) so tensors past 2**31 elements index correctly.

## What it does
Promotes the block index (or the first index derived from it) to 64 bits before it is
multiplied by a size or stride, and keeps every offset built from it in a 64-bit variable:

    const int row = blockIdx.x;                    const int64_t row = blockIdx.x;
    const int slot = slot_table[row];          →   const int64_t slot = slot_table[row];
    y[row * cols + c] = pool[slot * cols + c];     y[row * cols + c] = pool[slot * cols + c];

The same for a flat index over a tensor whose element count is 64-bit or a product of sizes
(`for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < 1LL * m * n; ...)`),
and for a named offset (`int idx = row * columns + column` → `uint64_t idx = (uint64_t)row
* columns + column`). The cast must come before the multiply: `(int64_t)(row * cols)` casts
the already wrapped product.

## Why it is faster
It is not: this is a correctness technique with a small cost. `blockIdx.x` is a 32-bit
unsigned, an `int` parameter is 32 bits, and C++ multiplies them in 32 bits: `row * cols`
wraps once the product passes 2**31 - 1 (in `int`, and nvcc then sign-extends the wrapped
value: a negative offset). With rows of 4,096 bytes that is row 524,288 of a 2 GiB tensor;
for a KV-cache pool gathered by slot it is the first slot past 2**31 / row length — a pool a
serving engine fills routinely. The kernel then reads or writes memory before the tensor:
wrong results or an illegal-address fault, only on large inputs. nvcc 13.0 for sm_90 makes
the 32-bit `IMAD` then `SHF.R.S32.HI`/`LEA.HI.X.SX32` (sign extension) visible in the SASS of
this skeleton's example.
The cost: a 64-bit multiply-add is an `IMAD.WIDE` or two instructions instead of one and the
64-bit temporaries take two registers; in a memory-bound kernel it does not show. Promote
once (the row or slot base) and keep per-thread in-row offsets in 32 bits.

## Applies when
- a global-memory address (`p[E]`, `p + E`, or a 32-bit local that feeds one: `int idx =
  row * columns + column`) multiplies a block-derived 32-bit index — `blockIdx.*`, a row from
  it, an index loaded from a table at it (`slot = slot_table[blockIdx.x]`), a grid-stride loop
  variable — by a runtime size or stride (an `int` parameter, `H * D`), with no 64-bit operand
  (`int64_t` / `size_t` variable or parameter, `(int64_t)` / `static_cast<int64_t>` cast,
  `1LL *`) before the multiply; or a flat index `blockIdx.x * blockDim.x + threadIdx.x` is
  kept in 32 bits over a tensor whose element count is a 64-bit parameter or a product of
  sizes (`i < m * n`);
- the tensors can exceed 2**31 elements in use. In a serving engine's module (sglang, vLLM,
  lmdeploy ...) one forward pass holds a bounded number of tokens, so the product must be one
  that passes 2**31 even then: an index loaded from a table (a cache slot, page or block id)
  times a size, a block index times two or more sizes, or vocabulary-wide rows (`logits`);
- **it pays** (fixes) when a tensor it indexes holds more than 2**31 elements: `--shape
  PTR=DIMS` for its pointers, `--shape elements=N`, or rows and cols; it does not pay when
  every pointer's shape (or `elements`) is given and stays at or under 2**31; otherwise it
  is conditional on those sizes.

## Does not apply when
- the index is promoted already (`const int64_t row = blockIdx.x`, `(size_t)blockIdx.x * n`,
  an `int64_t` stride parameter in the product, `index_t` strides as in flash-attention);
- the product cannot grow with the problem: a block index times a constant (`blockIdx.x * 256`,
  `* kBlock`), a flat index bounded by an `int` element count (it fits in `int` in bounds), a
  per-row table (`rstd[blockIdx.x]`), a thread-local in-row offset (`threadIdx.x * 8 + j`);
- a serving engine's `token * hidden` over one forward pass's activations (thousands of
  tokens): it wraps only past hundreds of thousands of tokens.

## References
- ROCm aiter `csrc/include/rope_common.h` (`kn_entry_1c_sbhd_uncached` and the other RoPE entry
  kernels: `const int32_t sid = blockIdx.x` becomes `const uint64_t sid`, and the offsets
  `sid * stride_i_s + bid * stride_i_b` 64-bit) — at `f279dd96f6`, 2025-03-20, "Fix Illegal
  Memroy Access and Unfair Compare Test Code (#230)", before 2025-07-01
- InternLM lmdeploy `src/turbomind/kernels/activation_kernels.cu` (`generic_activation`: the
  grid-stride `for (int id = blockIdx.x * blockDim.x + threadIdx.x; id < m * n; ...)` becomes
  `int64_t id ... id < 1LL * m * n`, and the launcher's grid `1LL * m * n`) — at `fdfbcb8a29`,
  2023-12-28, "Fix overflow (#897)", before 2025-07-01
- turboderp exllamav2 `exllamav2/exllamav2_ext/cuda/quantize.cu` (`quantize_rtn_kernel`,
  `fused_quantize_adjust_kernel`: `int idx = row * columns + column` becomes `uint64_t idx =
  (uint64_t)row * (uint64_t)columns + (uint64_t)column`) — at `92f559e0b3`, 2024-04-05, "Fix int
  overflow in quantization kernels"; the rest of the file's kernels at `c49df4fe54`, 2024-04-27,
  "Quant: Fix int overflows when H.numel() > 2^31", before 2025-07-01
- the Triton skeleton `int64-offsets` (`tl.program_id(0).to(tl.int64)`): the same fix and the
  same payoff over tensor sizes
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.cuda import code, line_of, pointer_names, subscripts
from skel.skeletons.predicates.cuda_tiles import is_kernel
from skel.skeletons.predicates.payoff import row_shape
from skel.skeletons.predicates.workload import SERVING_ENGINE

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload

_INT32_MAX = 2**31 - 1
#: 64-bit integer types (`index_t` is flash-attention's and PyTorch's `int64_t`)
_WIDE_TYPE = re.compile(r"\b(?:u?int64_t|size_t|ssize_t|ptrdiff_t|long|index_t|u?intptr_t|u?int64|LongIndex)\b")
_WIDE_CAST = re.compile(r"\(\s*(?:const\s+)?(?:u?int64_t|size_t|ssize_t|ptrdiff_t|long(?:\s+long)?|unsigned\s+long"
                        r"(?:\s+long)?|index_t)\s*\)|\b(?:static_cast|int64_t|size_t)\s*<?\s*(?:u?int64_t|size_t|"
                        r"long(?:\s+long)?|index_t)?\s*>?\s*\(|\b\d+(?:LL|ll|ULL|ull|L|l|UL|ul)\b")
_IDENT = re.compile(r"blockIdx\.[xyz]|blockDim\.[xyz]|gridDim\.[xyz]|threadIdx\.[xyz]|[A-Za-z_]\w*")
#: a C cast to an integer type: `(int64_t)row`, `(size_t)blockIdx.x`, `(int)x`
_C_CAST = re.compile(r"^\(\s*((?:const\s+)?(?:unsigned\s+)?(?:u?int\d+_t|size_t|ssize_t|ptrdiff_t|long(?:\s+long)?|"
                     r"int|unsigned|index_t))\s*\)\s*(.+)$", re.S)
#: a vocabulary-wide row: a few thousand of them pass 2**31
_VOCAB_WIDE = re.compile(r"(?i)logit|vocab")


@dataclass
class _Names:
    wide: set[str] = field(default_factory=set)      # 64-bit variables and parameters
    block: set[str] = field(default_factory=set)     # computed from a block index (or loaded at one)
    loaded: set[str] = field(default_factory=set)    # values read from memory at a block-derived index
    sizes: set[str] = field(default_factory=set)     # runtime sizes: integer parameters, locals made of them
    flat: set[str] = field(default_factory=set)      # `blockIdx.x * blockDim.x + threadIdx.x` indices
    pointers: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class _Hit:
    line: int
    text: str
    flat: bool      # the runtime factor is only blockDim/gridDim: a flat index
    loaded: bool    # the block-derived factor is an index loaded from a table
    sizes: int      # how many runtime sizes the product multiplies


def _type_of(k: KernelFacts, name: str) -> str:
    for p in k.params:
        if p.name == name:
            return p.annotation or ""
    return str((getattr(k, "var_types", None) or {}).get(name, ""))


def _words(expr: str) -> list[str]:
    return _IDENT.findall(expr)


def _names(k: KernelFacts) -> _Names:
    n = _Names(pointers=pointer_names(k))
    for p in k.params:
        if p.constexpr or "*" in (p.annotation or ""):
            continue
        if _WIDE_TYPE.search(p.annotation or ""):
            n.wide.add(p.name)
        if re.search(r"\b(?:int|unsigned|u?int32_t|u?int64_t|size_t|long|index_t)\b", p.annotation or ""):
            n.sizes.add(p.name)
    inits = [(lp.targets[0], lp.args[0].split("=", 1)[1]) for lp in k.loops
             if lp.targets and lp.args and "=" in lp.args[0]]
    defs = [(a.targets[0].strip(), a.value) for a in k.assigns if a.op == "=" and a.targets] + inits
    for _ in range(4):
        for target, value in defs:
            if not re.fullmatch(r"[A-Za-z_]\w*", target):
                continue
            words = set(_words(value))
            declared = _type_of(k, target)
            if _WIDE_TYPE.search(declared) or ((not declared or "auto" in declared)
                                               and (_WIDE_CAST.search(value) or words & n.wide)):
                n.wide.add(target)
            if any(w.startswith("blockIdx.") for w in words) or words & n.block:
                n.block.add(target)
                if re.search(r"[A-Za-z_]\w*\s*\[", value) and not words & n.wide:
                    n.loaded.add(target)
            elif words and words <= (n.sizes | {"sizeof"}) and "[" not in value:
                n.sizes.add(target)
            if re.search(r"blockIdx\.x\s*\*\s*blockDim\.x|blockDim\.x\s*\*\s*blockIdx\.x", value):
                n.flat.add(target)
    n.block -= n.pointers
    return n


def _split(expr: str, ops: str) -> list[tuple[str, str]]:
    """Top-level operands of ``expr`` with the operator before each (`+`/`-`, or `*`)."""
    out, depth, cur, op = [], 0, "", ""
    i = 0
    while i < len(expr):
        ch = expr[i]
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if depth == 0 and ch in ops and not (ch == "-" and expr[i + 1:i + 2] == ">"):
            out.append((op, cur))
            cur, op = "", ch
        else:
            cur += ch
        i += 1
    out.append((op, cur))
    return [(o, c.strip()) for o, c in out if c.strip()]


@dataclass
class _Val:
    wide: bool = False
    block: bool = False
    loaded: bool = False
    sizes: int = 0
    dims: bool = False


def _factor(f: str, n: _Names, k: KernelFacts, hits: list[tuple[str, bool, bool, int]]) -> _Val:
    """The flags of one factor: a cast, a parenthesised sum, a subscript, a name or a number."""
    m = _C_CAST.match(f)
    if m:
        v = _factor(m.group(2), n, k, hits)
        v.wide = bool(_WIDE_TYPE.search(m.group(1)))
        return v
    m = re.match(r"^static_cast\s*<\s*([^<>]+?)\s*>\s*\((.*)\)$", f, re.S)
    if m:
        v = _expr(m.group(2), n, k, hits)
        v.wide = bool(_WIDE_TYPE.search(m.group(1)))
        return v
    if f.startswith("(") and f.endswith(")"):
        return _expr(f[1:-1], n, k, hits)
    sub = re.match(r"^([A-Za-z_]\w*)\s*\[(.*)\]$", f, re.S)
    if sub:  # a value read from memory: grows if read at a block-derived index
        inner = _expr(sub.group(2), n, k, hits)
        elem = _type_of(k, sub.group(1))
        return _Val(wide=bool(_WIDE_TYPE.search(elem)), block=inner.block, loaded=inner.block)
    if re.fullmatch(r"\d+[uU]?", f):
        return _Val()
    if re.search(r"\d+(?:LL|ll|ULL|ull|L|l|UL|ul)$", f):
        return _Val(wide=True)
    words = set(_words(f))
    return _Val(wide=bool(words & n.wide), block=bool(words & n.block) or any(w.startswith("blockIdx.") for w in words),
                loaded=bool(words & n.loaded), sizes=len(words & n.sizes),
                dims=any(w.startswith(("blockDim.", "gridDim.")) for w in words))


def _expr(expr: str, n: _Names, k: KernelFacts, hits: list[tuple[str, bool, bool, int]]) -> _Val:
    """Flags of a sum of products, recording each 32-bit block × size product in ``hits``:
    (its text, flat (the size is only blockDim/gridDim), loaded, the number of sizes)."""
    total = _Val()
    for _, term in _split(expr, "+-"):
        acc: _Val | None = None
        text = ""
        for _, f in _split(term, "*"):
            v = _factor(f, n, k, hits)
            text = f if acc is None else f"{text} * {f}"
            if acc is None:
                acc = v
                continue
            grows = (acc.block and (v.sizes or v.dims)) or ((acc.sizes or acc.dims) and v.block)
            if grows and not acc.wide and not v.wide:
                flat = not (acc.sizes if v.block else v.sizes) and not (v.sizes if acc.block else acc.sizes)
                hits.append((text, flat, acc.loaded or v.loaded, acc.sizes + v.sizes))
            acc = _Val(acc.wide or v.wide, acc.block or v.block, acc.loaded or v.loaded, acc.sizes + v.sizes,
                       acc.dims or v.dims)
        if acc is not None:
            total = _Val(total.wide or acc.wide, total.block or acc.block, total.loaded or acc.loaded,
                         max(total.sizes, acc.sizes), total.dims or acc.dims)
    return total


def _addresses(k: KernelFacts, n: _Names, text: str) -> list[tuple[int, str]]:
    """(line, index expression) of global-memory accesses: `p[E]`, `p + E`, and the values of
    the locals used in them (`int idx = row * columns + column; ... x[idx]`; a 64-bit local
    assigned a 32-bit product, `int64_t base = row * cols`, holds the wrapped value too)."""
    out = [(s.line, s.index) for s in subscripts(k) if s.base in n.pointers]
    for p in n.pointers:
        for m in re.finditer(rf"\b{re.escape(p)}\s*\+(?!\+|=)", text):
            depth, i, start = 0, m.end(), m.end()
            while i < len(text):
                ch = text[i]
                if ch in "([":
                    depth += 1
                elif ch in ")]":
                    if depth == 0:
                        break
                    depth -= 1
                elif ch in ",;?:" and depth == 0:
                    break
                i += 1
            out.append((line_of(k, text, m.start()), text[start:i]))
    used = {w for _, e in out for w in _words(e)}
    for _ in range(2):
        for a in k.assigns:
            t = a.targets[0].strip() if a.targets else ""
            if a.op == "=" and t in used and t not in n.pointers and re.fullmatch(r"[A-Za-z_]\w*", t):
                out.append((a.line, a.value))
                used |= set(_words(a.value))
    for lp in k.loops:
        if lp.targets and lp.targets[0] in used and lp.args and "=" in lp.args[0]:
            out.append((lp.line, lp.args[0].split("=", 1)[1]))
    return out


def _flat_extent_grows(k: KernelFacts, n: _Names, text: str) -> bool:
    """The tensor a flat index covers can pass 2**31: the kernel takes a 64-bit size, or
    compares the index with a product of sizes (`i < m * n`)."""
    if any(p for p in n.wide if p in {q.name for q in k.params}):
        return True
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*<=?\s*([^;{}]+?)\s*[;)]", text):
        if m.group(1) in n.flat and "*" in m.group(2) and set(_words(m.group(2))) & n.sizes:
            return True
    return False


def _hits(k: KernelFacts) -> list[_Hit]:
    if not is_kernel(k):
        return []
    text = code(k)
    n = _names(k)
    flat_ok = None
    out: list[_Hit] = []
    seen: set[tuple[int, str]] = set()
    for line, expr in _addresses(k, n, text):
        found: list[tuple[str, bool, bool, int]] = []
        _expr(expr, n, k, found)
        for prod, flat, loaded, sizes in found:
            if flat:
                flat_ok = _flat_extent_grows(k, n, text) if flat_ok is None else flat_ok
                if not flat_ok:
                    continue
            if (line, prod) not in seen:
                seen.add((line, prod))
                out.append(_Hit(line, prod, flat, loaded, sizes))
    return out


def _int32_products(k: KernelFacts) -> list[int]:
    return [h.line for h in _hits(k)]


def _large_in_serving(k: KernelFacts) -> list[int]:
    """Products that pass 2**31 with a forward pass of thousands of tokens: an index loaded from a
    table times a size, a block index times two or more sizes, vocabulary-wide rows."""
    vocab = bool(_VOCAB_WIDE.search(" ".join(p.name for p in k.params)))
    return [h.line for h in _hits(k) if h.loaded or h.sizes >= 2 or vocab]


def _promoted(k: KernelFacts) -> list[int]:
    """64-bit block-derived offsets (`const int64_t row = blockIdx.x`, `(size_t)blockIdx.x * n`,
    `1LL * m * n`) in a kernel with no 32-bit product left."""
    if not is_kernel(k) or _hits(k):
        return []
    n = _names(k)
    lines = [a.line for a in k.assigns if a.targets and a.targets[0].strip() in n.wide & n.block]
    lines += [lp.line for lp in k.loops if lp.targets and lp.targets[0] in n.wide & n.block]
    text = code(k)
    for m in _WIDE_CAST.finditer(text):
        if re.search(r"blockIdx|\*", text[m.start():m.start() + 80].split(";")[0]):
            lines.append(line_of(k, text, m.start()))
    return lines


def offsets_past_int32_cuda(k: KernelFacts, wl: Workload) -> Payoff:
    """Pays (fixes) when a tensor the kernel indexes holds more than 2**31 elements; does not pay
    when every pointer's size (or `elements`, or rows and cols) is given and none does; else
    unknown. The Triton `int64-offsets` payoff, with CUDA's pointer parameters (`T*`)."""
    n, name = wl.largest_elements(k)
    pointers = [p.name for p in k.params if "*" in (p.annotation or "")]
    for p in pointers:  # a 1-D tensor given by its length (`--shape slot_table=65536`)
        if p in wl.sizes and (n is None or wl.sizes[p] > n):
            n, name = wl.sizes[p], p
    rows, cols = row_shape(k, wl)
    if rows is not None and cols is not None and (n is None or rows * cols > n):
        n, name = rows * cols, f"rows × cols ({rows:,} × {cols:,})"
    if n is not None and n - 1 > _INT32_MAX:  # the largest in-bounds offset is n - 1
        return Payoff(PAYS, f"{name} holds {n:,} elements: its last offset, {n - 1:,}, is past 2**31 - 1, where a "
                      "32-bit product wraps (negative, sign-extended: before the tensor)")
    explicit = wl.size("rows") is not None and wl.size("cols") is not None  # a row kernel's tensor, given
    known = "elements" in wl.sizes or "elements" in wl.shapes or explicit or (
        bool(pointers) and all(p in wl.shapes or p in wl.sizes for p in pointers))  # a 1-D tensor: its length
    if n is not None and known:
        return Payoff(DOES_NOT_PAY, f"the largest tensor ({name}) holds {n:,} elements, at most 2**31: every offset "
                      "fits in 32 bits")
    largest = f" (the largest known, {name}, holds {n:,})" if n is not None else ""
    return Payoff(UNKNOWN, "pays only if a tensor this kernel indexes holds more than 2**31 elements" + largest,
                  "--shape elements=N (the largest tensor) or --shape PTR=DIMS per pointer")


INT32_PRODUCT = custom(
    "int32-block-index-times-size",
    "an address multiplying a block-derived 32-bit index (`blockIdx.x`, a row or slot from it) by a runtime size or "
    "stride with no 64-bit operand (or a 32-bit flat index over a tensor sized in 64 bits)", _int32_products)
LARGE_IN_SERVING = ~SERVING_ENGINE | custom(
    "int32-product-past-2-31-in-serving",
    "an int32 product that can pass 2**31 with a forward pass of thousands of tokens (an index loaded from a table "
    "times a size, a block index times two or more sizes, vocabulary-wide rows)", _large_in_serving)
PROMOTED = custom(
    "int64-block-offsets",
    "block-derived offsets computed in 64 bits (`int64_t row = blockIdx.x`, `(size_t)blockIdx.x * n`, `1LL * m * n`)",
    _promoted)

SKELETON = Skeleton(
    id="cuda-int64-offsets",
    title="int64 block indices and offsets in CUDA kernels (no 32-bit wrap past 2**31 elements)",
    summary="Compute blockIdx-derived offsets in int64_t/size_t (cast before the multiply): no wrap past 2**31 "
    "elements.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bint64\b", r"\boverflow\w*", r"\b64-?bit (index|offset)\w*"),
    present=PROMOTED,
    preconditions=[INT32_PRODUCT, LARGE_IN_SERVING],
    subject=INT32_PRODUCT,
    pays_in="correctness",
    env=Env(),
    payoff=offsets_past_int32_cuda,
    helps=(),
    languages=("cuda",),
)
