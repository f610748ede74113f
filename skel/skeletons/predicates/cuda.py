"""CUDA C++ kernels: shared arrays, pointers, thread-linear indices, subscripts, stride loops.

Read from a CUDA unit's facts (``skel.kernels.cuda``: calls, loops, assigns, names, var_types)
and, for what the facts do not list — array subscripts and the names a ``__shared__``
declaration introduces — from the unit's source with comments and string literals blanked,
so a commented-out line or an inline-PTX string never counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skel.kernels.model import Assign, KernelFacts, Loop

_BLANK = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])'", re.S)
_IDENT = re.compile(r"[A-Za-z_]\w*")
#: `__shared__ float red[BLOCK];`, `extern __shared__ __align__(16) char smem[];`,
#: `__shared__ typename BlockReduce::TempStorage tmp;` -> the declared name
_SHARED_DECL = re.compile(r"__shared__\s+(?:__align__\s*\(\s*\w+\s*\)\s*)?[^;=()]*?\b([A-Za-z_]\w*)\s*(?=[\[;=])")
#: a local pointer declared with an initializer: `const T* __restrict__ x = input + row * d;`
_POINTER_DECL = re.compile(r"[\w:>]\s*\*\s*(?:const\s+)?(?:__restrict__\s+)?([A-Za-z_]\w*)\s*=(?!=)")
#: a stride that halves: `s >>= 1`, `s /= 2`, `s = s / 2`, `s = s >> 1` (group 1 or 3: the variable)
HALVING = re.compile(r"\b(\w+)\s*(>>=\s*1|/=\s*2)\b|\b(\w+)\s*=\s*\3\s*(>>\s*1|/\s*2)\b")
#: the block-wide barriers (`__syncthreads()` and its counting/voting forms)
SYNC_THREADS = ("__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or")


def code(k: KernelFacts) -> str:
    """The unit's source with comments and string/char literals replaced by spaces (newlines kept)."""
    return _BLANK.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), k.source or "")


def line_of(k: KernelFacts, text: str, pos: int) -> int:
    """The file line of offset ``pos`` in the unit's source ``text`` (from :func:`code`)."""
    return k.line_start + text.count("\n", 0, pos)


@dataclass(frozen=True)
class Subscript:
    """One ``base[index]`` in the unit's source: its line, the array or pointer, the index text."""

    line: int
    base: str
    index: str


def subscripts(k: KernelFacts) -> list[Subscript]:
    """Every ``name[index]`` in the unit (nested ones too), with its line."""
    return [s for _, s in _subscripts_at(k, code(k))]


def _subscripts_at(k: KernelFacts, text: str) -> list[tuple[int, Subscript]]:
    out = []
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\[", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            out.append((m.start(), Subscript(line_of(k, text, m.start()), m.group(1), text[m.end():i - 1].strip())))
    return out


def shared_arrays(k: KernelFacts) -> set[str]:
    """Names declared ``__shared__`` in the unit, and pointers taken into them
    (``float* sA = smem + ...``, ``auto* s = reinterpret_cast<T*>(smem)``)."""
    names = {m.group(1) for m in _SHARED_DECL.finditer(code(k))}
    for _ in range(2):
        for a in k.assigns:
            if set(a.names) & names and _declares_pointer(k, a):
                names.update(_plain(t) for t in a.targets)
    return names


def _plain(target: str) -> str:
    m = _IDENT.search(target)
    return m.group(0) if m else target


def _declares_pointer(k: KernelFacts, a: Assign) -> bool:
    """The assignment makes a pointer (a declared pointer type, `&x[..]`, a cast to a pointer),
    not a value read through one (`v = static_cast<int>(s_vals[h])`)."""
    t = " ".join(str((getattr(k, "var_types", None) or {}).get(_plain(x), "")) for x in a.targets)
    v = a.value.lstrip()
    return "*" in t or v.startswith("&") or bool(re.match(r"(?:reinterpret|static)_cast\s*<[^>]*\*\s*>", v))


def pointer_names(k: KernelFacts) -> set[str]:
    """Global-memory pointers: pointer parameters and locals declared as pointers into them."""
    shared = shared_arrays(k)
    names = {p.name for p in k.params if "*" in (p.annotation or "") and "__shared__" not in p.annotation}
    locals_ = {m.group(1) for m in _POINTER_DECL.finditer(code(k))}
    for v, t in (getattr(k, "var_types", None) or {}).items():
        if "*" in str(t) and "__shared__" not in str(t):
            locals_.add(v)
    for _ in range(3):  # pointers derived from pointers: `x = input + row * d; gate = x + d`
        for a in k.assigns:
            for t in map(_plain, a.targets):
                if t in locals_ and set(a.names) & names and not set(a.names) & shared:
                    names.add(t)
    return names - shared


def _loop_variable(lp: Loop) -> str | None:
    """The variable a ``for`` loop declares or sets in its init (``int i = threadIdx.x``)."""
    if lp.targets:
        return lp.targets[0]
    init = lp.args[0] if lp.args else ""
    m = re.search(r"([A-Za-z_]\w*)\s*=(?!=)", init)
    return m.group(1) if m else None


_THREAD = re.compile(r"\bthreadIdx\.x\b")


def _linear_in(expr: str, names: set[str]) -> bool:
    """``expr`` moves by one per thread: it holds ``threadIdx.x`` or a thread-linear name, never
    multiplied or divided (``threadIdx.x * 4``, ``tid / 32`` are strided or warp-uniform), and
    never as a subscript (``topk_ids[i]`` is a value read from memory: data, not an index
    that moves by one)."""
    found = False
    for m in re.finditer(r"\bthreadIdx\.x\b|\b[A-Za-z_]\w*\b", expr):
        tok = m.group(0)
        if tok != "threadIdx.x" and tok not in names:
            continue
        before, after = expr[:m.start()].rstrip(), expr[m.end():].lstrip()
        if before.endswith((".", "->")):
            continue  # a member (`blockIdx.x`'s `x`), not the variable of that name
        if before.count("[") > before.count("]"):
            return False  # inside a subscript: the value is what memory holds there
        if before.endswith(("*", "/")) or after.startswith(("*", "/", "<<", ">>")):
            return False
        found = True
    return found


def thread_linear_names(k: KernelFacts) -> set[str]:
    """Names that advance by one from one thread to the next: ``tid = threadIdx.x``,
    ``i = blockIdx.x * blockDim.x + threadIdx.x``, ``lane = tid % 32``, loop variables that
    start there (``for (int i = threadIdx.x; ...)``)."""
    names: set[str] = set()
    for _ in range(3):
        for a in k.assigns:
            if a.op == "=" and _linear_in(a.value, names):
                names.update(_plain(t) for t in a.targets)
        for lp in k.loops:
            var = _loop_variable(lp)
            init = lp.args[0] if lp.args else ""
            if var and "=" in init and _linear_in(init.split("=", 1)[1], names):
                names.add(var)
    return names


def _terms(index: str) -> list[str]:
    """Top-level ``+``/``-`` terms of an index expression, casts dropped."""
    index = re.sub(r"\(\s*(?:u?int(?:64|32)_t|size_t|long(?:\s+long)?|int|unsigned)\s*\)", "", index)
    terms, depth, cur = [], 0, ""
    for ch in index:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch in "+-" and depth == 0:
            terms.append(cur.strip())
            cur = ""
        else:
            cur += ch
    terms.append(cur.strip())
    return [t for t in terms if t]


#: an element address taken for an atomic (`atomicAdd(&cnt[e], 1)`): a read-modify-write no
#: vector type can widen
_ATOMIC_ARG = re.compile(r"\batomic\w*\s*\(\s*&\s*$")
#: an element read through pointer arithmetic: `*(x + i)`, `__ldg(x + i)` (`__ldcs`, `__ldcg` ...)
_POINTER_ACCESS = re.compile(r"(?:\*\s*\(|\b__ld\w*\s*\()\s*([A-Za-z_]\w*)\s*\+\s*([^();]*?)\s*\)")


def pointer_accesses(k: KernelFacts) -> list[Subscript]:
    """Elements read through pointer arithmetic (``*(x + i)``, ``__ldg(x + i)``), as subscripts.
    A `*` after an operand (`a * (b + i)`) multiplies: not one."""
    text = code(k)
    out = []
    for m in _POINTER_ACCESS.finditer(text):
        if text[m.start()] == "*" and text[:m.start()].rstrip()[-1:] in tuple("abcdefghijklmnopqrstuvwxyz"
                                                                               "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_)]"):
            continue
        out.append(Subscript(line_of(k, text, m.start()), m.group(1), m.group(2).strip()))
    return out


def atomic_subscripts(k: KernelFacts) -> list[Subscript]:
    """Subscripts whose address an atomic takes (``atomicAdd(&counts[e], 1)``)."""
    text = code(k)
    return [s for at, s in _subscripts_at(k, text) if _ATOMIC_ARG.search(text[max(0, at - 40):at])]


def unit_stride_accesses(k: KernelFacts) -> list[Subscript]:
    """Scalar element accesses of global pointers whose index moves by one per thread
    (``x[i]``, ``out[row * d + i]``, ``__ldg(x + i)``): neighbouring threads touch
    neighbouring elements. An atomic's element (``atomicAdd(&out[i], v)``) is not one."""
    pointers = pointer_names(k)
    linear = thread_linear_names(k)
    atomic = {(s.line, s.base, s.index) for s in atomic_subscripts(k)}
    out = []
    for s in subscripts(k) + pointer_accesses(k):
        if s.base not in pointers or "[" in s.index or (s.line, s.base, s.index) in atomic:
            continue  # not a global pointer, an indirect (gathered) index, or an atomic's target
        terms = _terms(s.index)
        if any(t in linear or t == "threadIdx.x" for t in terms) and _linear_in(s.index, linear):
            out.append(s)
    return out


def sync_lines(k: KernelFacts) -> list[int]:
    """Lines of the block barriers (:data:`SYNC_THREADS`) in the unit, folded helpers included."""
    return [c.line for c in k.calls if c.name in SYNC_THREADS]
