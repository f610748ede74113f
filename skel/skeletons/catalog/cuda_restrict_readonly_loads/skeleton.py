"""Qualify a kernel's read-only pointer parameters `const T* __restrict__` (or read them with `__ldg`), so loads need not wait behind stores.

## What it does
A kernel that reads some pointer parameters and writes through another, none of them
`__restrict__`, gets the qualifier on each of them — `const T* __restrict__` on the inputs,
`T* __restrict__` on the output:

    __global__ void k(bf16* out, const int8_t* q,          __global__ void k(bf16* __restrict__ out,
                      const float* scale, int cols) {  →                     const int8_t* __restrict__ q,
      #pragma unroll                                                         const float* __restrict__ scale, ...)
      for (int j = 0; j < 8; ++j)                            (same body)
        out[r * cols + c + j * 256] = q[...] * scale[r];

The alternative spelling for a single pointer, where the signature cannot change, reads it
with `__ldg(&p[i])` (the read-only data path, explicitly). Both are promises: the arrays do
not overlap (and what is read is not written during the kernel).

## Why it is faster
`const T*` says nothing about aliasing: without `__restrict__`, nvcc must assume a store
through `out` can change what `q` and `scale` point at. Every load that comes after a store in
program order then stays after it: in a loop unrolled to 8 copies (`#pragma unroll`, a literal
or `kName` trip), each thread issues load, store, load, store… and waits one full memory
latency per element instead of putting all eight loads in flight at once; a loop-invariant
read (`scale[row]`) is reloaded after every store instead of kept in a register. With the
qualifier, the loads are scheduled together ahead of the stores, and the compiler may use the
non-coherent read-only path (`LDG.E.CONSTANT`, `ld.global.nc`). nvcc 13.0 for sm_90, on this
skeleton's example: eight rounds of `LDG.E.S8` / `LDG.E` / `STG` before, all loads first after;
on a rotary kernel's `for (i = lane; i < kHeadDim / 2; i += 32)` loop, unrolled by 4, four
rounds of five loads and two stores before, eleven loads then six stores after.
Memory-level parallelism per thread is what a latency-bound streaming kernel lacks (narrow
int8/bf16 elements, modest occupancy), so the gain is there, and it is largest where each
thread handles several elements.

When it does not pay: a kernel whose reads all come before its stores (one element per
thread, or a reduction into registers stored once at the end) gains nothing from reordering,
and the read-only path moves the same bytes through the same unified L1 on sm_70+. A
grid-stride loop (`for (i = tid; i < n; i += stride)`) is left rolled by nvcc either way: the
qualifier only lets loop-invariant reads leave it.

## Applies when
- a `__global__` kernel writes through a pointer parameter (`out[i] = …`, `*(out + i) = …`,
  an atomic on it, or a local pointer derived from it), and reads another pointer parameter
  it never writes nor passes to a helper, neither carrying `__restrict__` (the reads not
  through `__ldg`), in a loop that also stores or after a store (a store can hold it back);
- **it pays** (shown as a suggestion) when a loop with a compile-time trip count (a bound and
  step made of literals, template parameters, `kName` or `constexpr` constants — the start may
  be the lane, as in `for (i = lane; i < kHeadDim / 2; i += 32)` — or a `#pragma unroll` on
  it) both stores through the unqualified output and reads the unqualified input: nvcc unrolls
  it, and its unrolled copies are serialised load → store;
  *conditional* when they meet only in a runtime-trip loop (invariant reloads) or when a
  straight-line read follows a store. A kernel whose reads all precede its stores is not
  matched: it does not pay.

## Does not apply when
- the output or the inputs are already `__restrict__` (restrict on the written pointer alone
  already tells the compiler the reads cannot see its stores), or the inputs are read with
  `__ldg`;
- a pointer is both read and written (an in-place update `x[i] = x[i] * s`), or the launcher
  may pass the same tensor as input and output (an in-place variant of an out-of-place
  kernel): `__restrict__` is then a false promise and undefined behaviour;
- the input pointer escapes to a helper (`load_vec(x + i)`, `cub::BlockLoad(...).Load(x + i, …)`):
  whether it is written there is not visible here;
- the kernel writes no global pointer (a reduction into shared memory only), or reads no
  pointer parameter.

## References
- turboderp exllamav2 `exllamav2/exllamav2_ext/cuda/q_gemm.cu` (`gemm_half_q_half_kernel`:
  `const half* a`, `const uint32_t* b_q_weight`, the scales and `half* c` all gain `__restrict__`
  in place) — at `92ce76dec1`, 2023-09-02, "Kernel optimizations WIP", before 2025-07-01
- turboderp exllamav2 `exllamav2/exllamav2_ext/cuda/cache.cu` (`fp16_to_q4`: `const half* in`,
  `unsigned char* out`, `half* scales` become `__restrict__`) — at `80769af4e8`, 2024-05-27,
  "Q4 cache: Optimize paged mode a bit more", before 2025-07-01
- bitsandbytes `csrc/kernels.cu` (`kDequantizeBlockwise`: the shared-memory copy of the 256-entry
  code book is dropped and each lookup reads `__ldg(&code[qvals[j]])`, "load code through
  read-only cache via __ldg") — at `08fa2e7b01`, 2022-11-07, "Fixed bug in cpu quant; faster
  GPU dequant.", before 2025-07-01
- flashinfer `include/flashinfer/attention/hopper/prefill_sm90.cuh` (`PrefillWithKVCacheKernel`:
  the per-request `prefix_len`/`max_item_len` scalars read with `__ldg(ptr + batch_idx)`) — at
  `6c6f1a5bb7`, 2025-04-30, "add multi-item scoring (#1015)", before 2025-07-01
- the candidate clusters "+ call __ldg; - __restrict__" and "- call __ldg; + __restrict__"
  (`skel skeletons candidates`: bitsandbytes and flashinfer, one commit each way): the two
  spellings of the same promise replace each other
- CUDA C++ Programming Guide, "__restrict__" (its example: the loads hoisted, the reloads after
  each store removed) and CUDA C++ Best Practices Guide, "Read-Only Data Cache"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.cuda import code, line_of
from skel.skeletons.predicates.cuda_loops import pragma_unrolled
from skel.skeletons.predicates.cuda_tiles import is_kernel

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop
    from skel.skeletons.base import Workload

_RESTRICT = re.compile(r"\b__restrict(?:__)?\b|\brestrict\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_ASSIGN_OP = re.compile(r"\s*(?:[-+*/%|&^]|<<|>>)?=(?!=)")
#: a cast to a non-const pointer: `reinterpret_cast<float4*>(out)` is how vector stores are written
_MUTABLE_CAST = re.compile(r"(?:reinterpret|static|const)_cast\s*<\s*(?!const\b)[^<>]*?\*\s*>\s*\(\s*&?\s*"
                           r"([A-Za-z_]\w*)\b")
#: the read-only-path loads: `__ldg(&p[i])`, `__ldg(p + i)`
_LDG = re.compile(r"\b__ldg\s*\(\s*&?\s*([A-Za-z_]\w*)\b")
#: names of compile-time constants by convention: `kName`, ALL_CAPS
_CONST_NAME = re.compile(r"k[A-Z]\w*|[A-Z][A-Z0-9_]*")
_CONSTEXPR = re.compile(r"\bconstexpr\s+[\w:<>\s]*?\b([A-Za-z_]\w*)\s*=")


@dataclass(frozen=True)
class _Ptr:
    name: str
    restrict: bool


@dataclass(frozen=True)
class _Access:
    pointer: str  # the parameter
    line: int
    store: bool
    ldg: bool = False


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += {"(": 1, "<": 1, "[": 1, ")": -1, ">": -1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p for p in (*parts, cur) if p.strip()]


def _pointer_params(k: KernelFacts, text: str) -> tuple[list[_Ptr], int]:
    """The kernel's pointer parameters as written (the facts drop `__restrict__`), and the offset
    where its body starts in ``text``."""
    m = re.search(rf"\b{re.escape(k.name)}\s*\(", text)
    if not m:
        return [], 0
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    out = []
    for part in _split_top(text[m.end():i - 1]):
        decl = part.split("=", 1)[0]
        names = _IDENT.findall(decl)
        if "*" in decl and "(" not in decl and names:
            out.append(_Ptr(names[-1], bool(_RESTRICT.search(decl))))
    return out, i


def _operand_before(text: str, at: int) -> bool:
    """An operand ends right before ``at`` (so a `*` there multiplies): a name, a number, `]`, or
    a `)` that does not close a `for`/`if`/`while` header."""
    head = text[:at].rstrip()
    prev = head[-1:]
    if prev != ")":
        return bool(prev) and (prev.isalnum() or prev in "_]")
    depth, i = 0, len(head) - 1
    while i >= 0:
        depth += {")": 1, "(": -1}.get(head[i], 0)
        if depth == 0:
            break
        i -= 1
    return not re.search(r"\b(?:for|if|while|switch)\s*$", head[:max(i, 0)])


def _derived(k: KernelFacts, text: str, param: str) -> set[str]:
    """``param`` and the local pointers computed from it (`const T* x = input + row * d`)."""
    names = {param}
    types = getattr(k, "var_types", None) or {}
    for _ in range(3):
        for a in k.assigns:
            if a.op != "=" or not set(a.names) & names or not a.targets:
                continue
            t = _IDENT.match(a.targets[0].strip())
            if t and t.group(0) == a.targets[0].strip() and ("*" in str(types.get(t.group(0), ""))
                                                           or a.value.lstrip().startswith("&")):
                names.add(t.group(0))
    return names


def _accesses(k: KernelFacts) -> tuple[list[_Ptr], dict[str, list[_Access]], set[str]]:
    """(pointer parameters, their element reads and stores by parameter, parameters that escape
    to a helper or are cast to a mutable pointer)."""
    text = code(k)
    params, body_at = _pointer_params(k, text)
    body = text[body_at:]
    acc: dict[str, list[_Access]] = {p.name: [] for p in params}
    escapes: set[str] = set()
    for p in params:
        names = _derived(k, text, p.name)
        alt = "|".join(map(re.escape, sorted(names)))
        for m in re.finditer(rf"\b(?:{alt})\s*\[", body):
            depth, i = 1, m.end()
            while i < len(body) and depth:
                depth += {"[": 1, "]": -1}.get(body[i], 0)
                i += 1
            before = body[max(0, m.start() - 24):m.start()]
            store = bool(_ASSIGN_OP.match(body, i)) or bool(re.search(r"\batomic\w*\s*\(\s*&\s*$", before))
            ldg = bool(re.search(r"\b__ldg\s*\(\s*&\s*$", before))
            acc[p.name].append(_Access(p.name, line_of(k, text, body_at + m.start()), store, ldg))
        for m in re.finditer(rf"\*\s*\(\s*(?:{alt})\b[^;()]*\)", body):
            if _operand_before(body, m.start()):
                continue  # `a * (b + i)`: a product
            store = bool(_ASSIGN_OP.match(body, m.end()))
            acc[p.name].append(_Access(p.name, line_of(k, text, body_at + m.start()), store))
        for m in re.finditer(rf"\b(?:__ldg|atomic\w*)\s*\(\s*&?\s*(?:{alt})\b", body):
            acc[p.name].append(_Access(p.name, line_of(k, text, body_at + m.start()),
                                       store=not m.group(0).startswith("__ldg"), ldg=m.group(0).startswith("__ldg")))
        for m in _MUTABLE_CAST.finditer(body):
            if m.group(1) in names:
                escapes.add(p.name)
        for c in k.calls:
            if c.name.startswith(("__ldg", "atomic")):
                continue
            if any(re.search(rf"\b(?:{alt})\b(?!\s*\[)|&\s*\(?\s*(?:{alt})\s*\[", a) for a in c.args):
                escapes.add(p.name)  # the pointer (or `&p[i]`) goes to a helper: written there or not
    return params, acc, escapes


@dataclass(frozen=True)
class _Aliasing:
    reads: list[_Access]  # element reads of unqualified read-only inputs, not through __ldg
    stores: list[_Access]  # stores through unqualified outputs
    qualified: list[int]  # lines of qualified read-only inputs' reads, or of __ldg reads
    qualified_out: bool  # a pointer written through is `__restrict__`


def _aliasing(k: KernelFacts) -> _Aliasing | None:
    if not is_kernel(k):
        return None
    params, acc, escapes = _accesses(k)
    reads: list[_Access] = []
    stores: list[_Access] = []
    qualified: list[int] = []
    qualified_out = False
    for p in params:
        a = acc[p.name]
        if any(x.store for x in a):
            if not p.restrict:
                stores += [x for x in a if x.store]
            qualified_out |= p.restrict
            continue
        if not a or p.name in escapes:
            continue
        if p.restrict:
            qualified += [x.line for x in a]
        else:
            reads += [x for x in a if not x.ldg]
            qualified += [x.line for x in a if x.ldg]
    return _Aliasing(reads, stores, qualified, qualified_out)


def _unqualified_reads(k: KernelFacts) -> list[int]:
    """Reads of read-only pointer parameters with no `__restrict__`, in a kernel that stores
    through a pointer parameter with none either, where a store can hold a read back: the two
    share a loop, or the read comes after the store. Reads that all precede the stores (one
    element per thread, a reduction stored once) have nothing to gain."""
    al = _aliasing(k)
    if not al or not al.stores or not al.reads:
        return []
    sl = [s.line for s in al.stores]
    loops = [lp for lp in k.loops if any(_inside(lp, s) for s in sl)]
    return [r.line for r in al.reads if r.line > min(sl) or any(_inside(lp, r.line) for lp in loops)]


def _qualified(k: KernelFacts) -> list[int]:
    """Reads through `__restrict__` inputs or `__ldg`, where no unqualified input is read beside
    them — or where the output written through is `__restrict__` (which settles the aliasing)."""
    al = _aliasing(k)
    if not al or (al.reads and not al.qualified_out):
        return []
    return al.qualified


def _constant(expr: str, names: set[str]) -> bool:
    """``expr`` is a compile-time integer: literals, `sizeof`, and names that are template
    parameters, `kName`/ALL_CAPS constants or `constexpr` locals, combined by arithmetic."""
    if not expr.strip() or re.search(r"[.\[]|->", expr):
        return False
    words = set(_IDENT.findall(re.sub(r"\b\d+[uUlLfF]*\b", "", expr)))
    return all(w in names or w == "sizeof" or _CONST_NAME.fullmatch(w) for w in words)


def _fixed_trip(k: KernelFacts, lp: Loop, text: str) -> bool:
    """A loop nvcc unrolls whole: `#pragma unroll` on it, or a compile-time bound and step (the
    start may be the lane: `for (i = lane; i < kHeadDim / 2; i += 32)` has at most
    kHeadDim / 64 trips, and nvcc unrolls it)."""
    if lp.kind != "for":
        return False
    if pragma_unrolled(lp):
        return True
    if len(lp.args) < 3 or re.search(r"unroll\s*\(?\s*1\b", str(lp.kwargs.get("pragma", ""))):
        return False
    m = re.match(r"^\s*([A-Za-z_]\w*)\s*(?:<|<=|!=)\s*(.+?)\s*$", lp.args[1])
    if not m:
        return False
    var, bound = m.group(1), m.group(2)
    names = {p.name for p in k.params if p.constexpr} | set(_CONSTEXPR.findall(text))
    step = lp.args[2].strip()
    s = re.fullmatch(rf"(?:\+\+\s*{var}|{var}\s*\+\+|{var}\s*\+=\s*(.+))", step)
    if not s:
        return False
    return _constant(bound, names) and (s.group(1) is None or _constant(s.group(1), names))


def _inside(lp: Loop, line: int) -> bool:
    return lp.line <= line <= lp.end_line


def restrict_pays(k: KernelFacts, wl: Workload) -> Payoff:
    """Pays where a compile-time-trip loop both stores through the unqualified output and reads
    the unqualified inputs (its unrolled copies run load → store, one latency each); unknown where
    they meet in a runtime loop or a read follows a store; does not pay where every read comes
    before every store."""
    al = _aliasing(k)
    if not al or not al.reads or not al.stores:
        return Payoff(UNKNOWN, "no unqualified read-only input beside an unqualified output")
    text = code(k)
    rl, sl = [r.line for r in al.reads], [s.line for s in al.stores]
    names = sorted({r.pointer for r in al.reads})
    outs = sorted({s.pointer for s in al.stores})
    both = [lp for lp in k.loops if any(_inside(lp, r) for r in rl) and any(_inside(lp, s) for s in sl)]
    for lp in both:
        if _fixed_trip(k, lp, text):
            return Payoff(PAYS, f"the loop at line {lp.line} has a compile-time trip (nvcc unrolls it) and both "
                          f"stores through `{outs[0]}` and reads `{'`, `'.join(names)}`: with no `__restrict__` each "
                          "unrolled copy's loads wait behind the previous copy's store (one memory latency per "
                          "copy, invariant reads reloaded); qualified, the loads issue together")
    if both:
        return Payoff(UNKNOWN, f"the runtime-trip loop at line {both[0].line} stores through `{outs[0]}` and reads "
                      f"`{'`, `'.join(names)}`: nvcc mostly leaves a loop with a runtime bound rolled (a grid-stride "
                      "loop over `n` stays one copy either way), so `__restrict__` mostly lets loop-invariant reads "
                      "leave it; where nvcc does unroll it, the copies run load → store one latency each and it "
                      "pays. `cuobjdump -sass` tells: unrolled copies with LDG and STG alternating")
    first_store = min(sl)
    late = [r for r in rl if r > first_store]
    if late:
        return Payoff(UNKNOWN, f"a read of an unqualified input (line {late[0]}) follows a store through "
                      f"`{outs[0]}` (line {first_store}): that load waits for the store; it pays as far as the "
                      "kernel's time goes into that wait")
    return Payoff(DOES_NOT_PAY, f"every read of `{'`, `'.join(names)}` comes before the first store through "
                  f"`{outs[0]}` (line {first_store}), in no loop with it: nothing for `__restrict__` to reorder, "
                  "and the read-only path moves the same bytes through the unified L1 on sm_70+")


UNQUALIFIED_READS = custom(
    "unrestricted-readonly-pointer-reads",
    "reads of a pointer parameter the kernel never writes, with no `__restrict__` (nor `__ldg`), in a loop with "
    "(or after) a store through an output with no `__restrict__` either: the compiler must assume they alias",
    _unqualified_reads)
QUALIFIED = custom(
    "restrict-or-ldg-reads",
    "read-only pointer parameters declared `__restrict__` (or read with `__ldg`), or an output declared "
    "`__restrict__`", _qualified)

SKELETON = Skeleton(
    id="cuda-restrict-readonly-loads",
    title="const __restrict__ read-only pointers (loads free to move ahead of stores)",
    summary="Declare read-only kernel pointers const T* __restrict__ (or __ldg): loads are not held behind "
    "aliasing stores.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\b__restrict(__)?\b", r"\brestrict\w*", r"\balias\w*"),
    present=QUALIFIED,
    preconditions=[UNQUALIFIED_READS],
    subject=UNQUALIFIED_READS,
    env=Env(),
    helps=("memory", "latency"),
    languages=("cuda",),
    payoff=restrict_pays,
)
