"""CUDA C++ counted loops over per-thread arrays: what a kernel keeps in registers only if unrolled.

A per-thread array (`float acc[8]`, `uint4 regs[kN]`, `frag[num_frags_x][4]`) lives in
registers only while every index into it is a compile-time constant; a loop whose variable
indexes it must therefore be fully unrolled, which needs a compile-time trip count. The
readers here find those loops in a CUDA unit's own body (``array_loops``: the counted `for`
loops whose variable indexes a local array, with what their trip count and the array's size
are made of), the ones left rolled (``rolled_array_loops``), and say when unrolling them pays
(``local_memory_pays``). Names are judged compile-time by what C++ makes them: template
parameters, `constexpr` locals, `const` locals initialised from constants, names that size a
local array, qualified members (`WGMMA::kNumAccum`), and `kName`/`ALL_CAPS` constants not
assigned at run time; parameters and the thread's coordinates are runtime.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Payoff
from skel.skeletons.predicates.cuda import code, line_of
from skel.skeletons.predicates.cuda_tiles import is_kernel

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop
    from skel.kernels.workload import Workload

#: the longest trip count worth unrolling fully (a literal, or a literal array size)
MAX_TRIP = 32
#: compile-time by C++ convention: `kNumThreads`, `BLOCK_SIZE`, `WARP_SIZE` (one capital, `N`,
#: is usually a runtime size)
_CONST_NAME = re.compile(r"k[A-Z]\w*|[A-Z][A-Z0-9_]+")
#: identifiers, qualified ones whole (`WGMMA::kNumAccum`); not a member (`blockDim.x`'s `x`)
_IDENT = re.compile(r"(?<![.\w])(?<!->)[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")
#: words of an expression that are neither constants nor runtime values
_NEUTRAL = {"sizeof", "static_cast", "reinterpret_cast", "const_cast", "int", "unsigned", "signed", "long",
            "short", "char", "bool", "float", "double", "size_t", "int8_t", "int16_t", "int32_t", "int64_t",
            "uint8_t", "uint16_t", "uint32_t", "uint64_t", "true", "false", "const", "auto", "constexpr"}
#: names that are never compile-time: the thread's coordinates
_RUNTIME = {"threadIdx", "blockIdx", "blockDim", "gridDim", "clock", "clock64"}
#: `constexpr int kVec = 8;`, `static constexpr uint32_t NUM = ...`
_CONSTEXPR_DECL = re.compile(r"\bconstexpr\s+(?:static\s+)?(?:const\s+)?[\w:]+(?:\s*<[^;{}]*?>)?\s*[*&]?\s*"
                             r"([A-Za-z_]\w*)\s*[=({]")
#: an array declarator: `acc[8]`, `frag[kM][4]`
_ARRAY_DECL = re.compile(r"\b([A-Za-z_]\w*)\s*((?:\[[^\[\]]+\]\s*)+)(?=[;,=)]|\{)")
#: the type that opens a declaration (qualifiers, then a possibly templated, qualified name)
_DECL_PREFIX = re.compile(r"^\s*(?:(?:const|volatile|register|__align__\s*\(\s*\w+\s*\)|alignas\s*\(\s*\w+\s*\))\s+)*"
                          r"([A-Za-z_][\w:]*)(?:\s*<[^;{}]*>)?\s*[*&]?\s+(.*)$", re.S)
_NOT_A_TYPE = {"return", "else", "case", "goto", "delete", "throw", "do", "if", "for", "while", "switch", "new",
               "using", "typedef", "template", "operator"}
_NOT_LOCAL = re.compile(r"\b(?:__shared__|extern|static|__constant__|__device__|typedef)\b")
#: a brace initializer `= {}` / `= {0.f, 1.f}` (blanked so a declaration after it stays one statement)
_BRACE_INIT = re.compile(r"=\s*\{[^{};]*\}")
_FOR = re.compile(r"\bfor\s*\(")
_INIT = re.compile(r"^\s*(?:[\w:<>,\s*&]*?\s)?([A-Za-z_]\w*)\s*=\s*(.+?)\s*;?\s*$", re.S)
_COND = re.compile(r"^\s*(.+?)\s*(<=|>=|<|>|!=)\s*(.+?)\s*$", re.S)
_STEP = re.compile(r"^\s*(?:(\+\+|--)\s*([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(\+\+|--)|([A-Za-z_]\w*)\s*([+-])=\s*(.+?)"
                   r"|([A-Za-z_]\w*)\s*=\s*([A-Za-z_]\w*)\s*([+-])\s*(.+?))\s*$", re.S)


# --- what the kernel declares -------------------------------------------------------------

@dataclass(frozen=True)
class LocalArray:
    """A per-thread array declared in the kernel: its name, line and dimension texts."""

    name: str
    line: int
    dims: tuple[str, ...]


def local_arrays(k: KernelFacts) -> dict[str, LocalArray]:
    """Per-thread arrays the kernel's own body declares (`float acc[8] = {};`, `T a[TM], b[TN];`),
    not `__shared__`/`static`/`extern` ones, not parameters."""
    text = _BRACE_INIT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), code(k))
    body = text.find("{")
    out: dict[str, LocalArray] = {}
    for m in _ARRAY_DECL.finditer(text):
        if m.start() < body:
            continue  # the signature: a parameter, not a local
        start = max(text.rfind(";", 0, m.start()), text.rfind("{", 0, m.start()), text.rfind("}", 0, m.start()))
        prefix = text[start + 1:m.start()]
        d = _DECL_PREFIX.match(prefix)
        if not d or d.group(1) in _NOT_A_TYPE or _NOT_LOCAL.search(prefix) or "(" in prefix:
            continue
        rest = d.group(2).strip()
        if rest and not (rest.endswith(",") and re.match(r"[A-Za-z_*&]", rest)):
            continue  # `x = a[1]`, `float v = vals[i]`: a use, not a declarator
        dims = tuple(x.strip() for x in re.findall(r"\[([^\[\]]+)\]", m.group(2)))
        out.setdefault(m.group(1), LocalArray(m.group(1), line_of(k, text, m.start()), dims))
    return out


@dataclass
class _Names:
    """What the kernel's names are: compile-time constants (with values where literal) or not."""

    constants: set[str]
    runtime: set[str]
    values: dict[str, int]
    loop_vars: set[str]


def _names(k: KernelFacts, arrays: dict[str, LocalArray]) -> _Names:
    runtime = {p.name for p in k.params if not p.constexpr} | _RUNTIME
    constants = {p.name for p in k.params if p.constexpr}
    text = code(k)
    declared_constexpr = {m.group(1) for m in _CONSTEXPR_DECL.finditer(text)}
    constants |= declared_constexpr
    for arr in arrays.values():  # a local array's size is a compile-time constant, whatever its name
        for d in arr.dims:
            constants |= {n for n in _IDENT.findall(d) if n not in _NEUTRAL and n not in runtime}
    loop_vars = {v for lp in k.loops for v in [_header(lp)[0]] if v}
    assigned: dict[str, list[str]] = {}
    for a in k.assigns:
        for t in a.targets:
            if re.fullmatch(r"[A-Za-z_]\w*", t):
                assigned.setdefault(t, []).append(a.value)
    types = getattr(k, "var_types", None) or {}
    values: dict[str, int] = {}
    names = _Names(constants, runtime, values, loop_vars)
    for _ in range(3):  # `const int half = kVec / 2;` after `constexpr int kVec = 8;`
        for name, vals in assigned.items():
            if len(vals) != 1 or name in runtime:
                continue
            const_decl = name in declared_constexpr or "const" in str(types.get(name, "")).split()
            if const_decl and _constant_expr(vals[0], names, assigned):
                constants.add(name)
                v = _int_value(vals[0], values)
                if v is not None:
                    values[name] = v
    # a name assigned in the kernel is a constant only by its declaration (above), never by its case
    names.runtime |= {n for n in assigned if n not in constants}
    return names


def _constant_expr(text: str, names: _Names, assigned: dict[str, list[str]] | None = None) -> bool:
    """Every name of ``text`` is compile-time: a template parameter, a local constexpr, a name
    sizing a local array, a qualified member (`WGMMA::kNumAccum`), a `kName`/`ALL_CAPS`
    constant not assigned at run time in the kernel; calls (`ceil_div(...)`) by their arguments."""
    for m in _IDENT.finditer(text):
        ident = m.group(0)
        if ident in _NEUTRAL or text[m.end():].lstrip().startswith("("):
            continue
        if ident in names.runtime:
            return False
        if ident in names.constants or "::" in ident:
            continue
        if _CONST_NAME.fullmatch(ident) and not (assigned and ident in assigned):
            continue
        return False
    return True


def _int_value(text: str, values: dict[str, int]) -> int | None:
    """The value of an integer expression of literals and known constants (`kVec / 2`, `4 * 8u`)."""
    t = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", text.strip())
    t = re.sub(r"\(\s*(?:u?int\d*_t|int|unsigned|size_t|long)\s*\)", "", t)
    t = re.sub(r"static_cast\s*<[^<>]*>", "", t)
    if not t or re.search(r"[^\w\s()+\-*/%<>]", t):
        return None
    try:
        node = ast.parse(t.replace("/", "//"), mode="eval").body
    except SyntaxError:
        return None
    return _eval(node, values)


def _eval(node: ast.AST, values: dict[str, int]) -> int | None:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, int) and not isinstance(node.value, bool) else None
    if isinstance(node, ast.Name):
        return values.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, values)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, values), _eval(node.right, values)
        if a is None or b is None:
            return None
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.FloorDiv: lambda: a // b if b else None, ast.Mod: lambda: a % b if b else None,
               ast.LShift: lambda: a << b if 0 <= b < 64 else None, ast.RShift: lambda: a >> b if b >= 0 else None}
        fn = ops.get(type(node.op))
        return fn() if fn is not None else None
    return None


# --- the loops ----------------------------------------------------------------------------

def _header(lp: Loop) -> tuple[str, str, str, str, str]:
    """(variable, start, comparison, bound, step) of a counted `for` — the step signed
    (`1`, `-1`, `2`, `-kStride`) — or empty strings when the loop is not one."""
    none = ("", "", "", "", "")
    if lp.kind != "for" or len(lp.args) < 3:
        return none
    init, cond, update = lp.args[0], lp.args[1], lp.args[2]
    mi = _INIT.match(init)
    if not mi or "," in mi.group(2):
        return none
    var = mi.group(1)
    if "&&" in cond or "||" in cond or "?" in cond:
        return none
    mc = _COND.match(cond)
    if not mc:
        return none
    left, op, right = mc.group(1).strip(), mc.group(2), mc.group(3).strip()
    if left != var:
        if right != var:
            return none
        left, right, op = right, left, {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "!=": "!="}[op]
    ms = _STEP.match(update)
    if not ms:
        return none
    if ms.group(1) or ms.group(4):
        v, sign, step = (ms.group(2), ms.group(1), "1") if ms.group(1) else (ms.group(3), ms.group(4), "1")
        sign = "+" if sign == "++" else "-"
    elif ms.group(5):
        v, sign, step = ms.group(5), ms.group(6), ms.group(7)
    else:
        if ms.group(8) != ms.group(9):
            return none
        v, sign, step = ms.group(8), ms.group(10), ms.group(11)
    if v != var:
        return none
    if (sign == "+") != (op in ("<", "<=", "!=")):
        return none  # counting away from the bound: not a counted loop we can read
    return var, mi.group(2).strip(), op, right, (step.strip() if sign == "+" else f"-({step.strip()})")


def _trip(start: int, op: str, bound: int, step: int) -> int | None:
    if step == 0:
        return None
    if step > 0:
        span = bound - start + (1 if op == "<=" else 0)
    else:
        span, step = start - bound + (1 if op == ">=" else 0), -step
    if op == "!=" and span % step:
        return None
    return max(0, -(-span // step))


@dataclass(frozen=True)
class ArrayLoop:
    """A counted loop whose variable indexes a per-thread array."""

    loop: Loop
    var: str
    header: tuple[str, str, str, str]  # start, comparison, bound, signed step: as written
    constant: bool  # a compile-time trip count
    trip: int | None  # when known (literal, or from local constants)
    names: tuple[str, ...]  # the constants an unknown trip count (or array size) is made of
    arrays: tuple[str, ...]  # the arrays its variable indexes
    size: int | None  # the smallest size of those arrays along the indexed dimension, when known
    size_text: str  # that dimension as written
    access_lines: tuple[int, ...]

    @property
    def bound(self) -> str:
        return self.header[2]

    def trip_at(self, sizes: dict[str, int]) -> int | None:
        """The trip count, with ``sizes`` (a workload's) filling in named constants."""
        if self.trip is not None:
            return self.trip
        start, bound, step = (_int_value(x, sizes) for x in (self.header[0], self.header[2], self.header[3]))
        if start is None or bound is None or step is None:
            return None
        return _trip(start, self.header[1], bound, step)

    def size_at(self, sizes: dict[str, int]) -> int | None:
        return self.size if self.size is not None else _int_value(self.size_text, sizes)


def _body_span(k: KernelFacts, text: str, starts: list[int], lp: Loop) -> tuple[int, int]:
    """(start, end) offsets of the loop's body in the unit's blanked source: from after the
    header's `)` to the end of its last line; (0, 0) for a folded helper's loop, whose text
    is not in this unit."""
    first, last = lp.line - k.line_start, lp.end_line - k.line_start
    if first < 0 or last + 1 >= len(starts):
        return 0, 0
    lo, hi = starts[first], starts[last + 1]
    m = _FOR.search(text, lo, hi)
    if not m:
        return 0, 0
    depth, i = 1, m.end()
    while i < hi and depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return i, hi


def _subscripts(text: str, names: list[str]) -> list[tuple[int, str, list[str]]]:
    """Each `name[i][j]` of the given arrays in ``text``: its offset, the array and its index
    texts, outermost first; in order of offset."""
    out: list[tuple[int, str, list[str]]] = []
    if not names:
        return out
    rx = re.compile(r"(?<![\w.>])(" + "|".join(map(re.escape, names)) + r")\s*\[")
    for m in rx.finditer(text):
        idx: list[str] = []
        i = m.end() - 1
        while i < len(text) and text[i] == "[":
            depth, j = 1, i + 1
            while j < len(text) and depth:
                depth += {"[": 1, "]": -1}.get(text[j], 0)
                j += 1
            idx.append(text[i + 1:j - 1])
            i = j
            while i < len(text) and text[i] in " \t":
                i += 1
        out.append((m.start(), m.group(1), idx))
    return out


#: the last units' answers (the unit is held, so its id cannot be reused while cached): a
#: condition over loops asks once per loop
_MEMO: OrderedDict[int, tuple[KernelFacts, tuple[int, int], list[ArrayLoop]]] = OrderedDict()
_MEMO_SIZE = 32


def array_loops(k: KernelFacts) -> list[ArrayLoop]:
    """Counted `for` loops of the kernel's own body whose variable indexes a per-thread array
    (with every other name in that index a constant or a loop variable), with what their trip
    count is made of. Unrolled or not: the caller looks at the pragma."""
    key = (len(k.loops), len(k.source or ""))
    hit = _MEMO.get(id(k))
    if hit is not None and hit[0] is k and hit[1] == key:
        return hit[2]
    out = _array_loops(k)
    _MEMO[id(k)] = (k, key, out)
    while len(_MEMO) > _MEMO_SIZE:
        _MEMO.popitem(last=False)
    return out


def _array_loops(k: KernelFacts) -> list[ArrayLoop]:
    arrays = local_arrays(k)
    if not arrays:
        return []
    names = _names(k, arrays)
    text = code(k)
    starts = [0] + [m.end() for m in re.finditer(r"\n", text)] + [len(text) + 1]
    subs = _subscripts(text, list(arrays))
    at = [s[0] for s in subs]
    fixed = {id(lp): _fixed_trip(lp, names) for lp in k.loops}
    out = []
    for lp in k.loops:
        var, start, op, bound, step = _header(lp)
        if not var:
            continue
        if names.loop_vars & {w for w in _IDENT.findall(bound)}:
            continue  # a triangular bound (`j < k`): fixed only once the loop around it is unrolled
        if any(not fixed[id(o)] for o in k.loops if o is not lp and lp.line <= o.line and o.end_line <= lp.end_line
               and (o.line, o.end_line) != (lp.line, lp.end_line)):
            continue  # a runtime loop inside: unrolled, it would be copied whole
        lo, hi = _body_span(k, text, starts, lp)
        if lo >= hi:
            continue
        hit: list[str] = []
        sizes: list[str] = []
        lines: list[int] = []
        for offset, name, idx in subs[bisect_left(at, lo):bisect_left(at, hi)]:
            for dim, ix in zip(arrays[name].dims, idx):
                words = {w for w in _IDENT.findall(ix) if w not in _NEUTRAL}
                if var not in words or "[" in ix:
                    continue
                others = words - {var} - names.loop_vars
                if any(not _constant_expr(w, names) for w in others):
                    continue  # a runtime name in the index: unrolling leaves it dynamic
                hit.append(name)
                sizes.append(dim)
                lines.append(line_of(k, text, offset))
        if not hit:
            continue
        if not (_constant_expr(start, names) and _constant_expr(step, names)):
            continue  # a thread-dependent start or a runtime stride: not a fixed count
        constant = _constant_expr(bound, names)
        s, b, st = _int_value(start, names.values), _int_value(bound, names.values), _int_value(step, names.values)
        trip = _trip(s, op, b, st) if s is not None and b is not None and st is not None else None
        known = [v for v in (_int_value(d, names.values) for d in sizes) if v is not None]
        size = min(known) if known else None
        unknown = [start, bound, step] if trip is None and constant else []
        unknown += [sizes[0]] if size is None else []
        named = tuple(sorted({w for x in unknown for w in _IDENT.findall(x) if w not in _NEUTRAL}))
        out.append(ArrayLoop(lp, var, (start, op, bound, step), constant, trip, named, tuple(dict.fromkeys(hit)),
                             size, sizes[0], tuple(sorted(set(lines)))))
    return out


def _fixed_trip(lp: Loop, names: _Names) -> bool:
    """A counted loop whose start, bound and step are all compile-time."""
    var, start, _, bound, step = _header(lp)
    return bool(var) and all(_constant_expr(x, names) for x in (start, bound, step))


def pragma_unrolled(lp: Loop) -> bool:
    """`#pragma unroll` or `#pragma unroll N` with N > 1 (`unroll 1` keeps it rolled)."""
    pragma = str(lp.kwargs.get("pragma", "")).strip()
    return pragma.startswith("unroll") and not re.fullmatch(r"unroll\s*\(?\s*1\s*\)?", pragma)


def _short(al: ArrayLoop) -> bool:
    """Short enough to unroll: a known trip of 2 … 32, or (unknown) an array of at most 32."""
    if al.trip is not None:
        return 2 <= al.trip <= MAX_TRIP
    return al.size is None or al.size <= MAX_TRIP


def rolled_array_loops(k: KernelFacts) -> list[ArrayLoop]:
    """The subject: loops left rolled (no pragma at all) that index a per-thread array, short,
    with a compile-time trip count or a runtime bound under a compile-time array size."""
    if not is_kernel(k):
        return []
    return [al for al in array_loops(k) if not al.loop.kwargs.get("pragma") and _short(al)]


# --- the payoff ---------------------------------------------------------------------------

def _nested(k: KernelFacts, lp: Loop) -> Loop | None:
    """The innermost other loop around ``lp``, or None."""
    around = [o for o in k.loops if o is not lp and o.line <= lp.line and lp.end_line <= o.end_line
              and (o.line, o.end_line) != (lp.line, lp.end_line)]
    return max(around, key=lambda o: o.line) if around else None


def local_memory_pays(k: KernelFacts, wl: Workload) -> Payoff:
    """A runtime-bound loop indexing a per-thread array inside another loop keeps that array in
    local memory for certain: pays. A constant-trip loop left rolled may already be unrolled
    by nvcc: unknown. A trip count (or array size) the sizes put above 32: does not pay."""
    loops = rolled_array_loops(k)
    if not loops:
        return Payoff(UNKNOWN, "no rolled loop indexing a per-thread array")
    sizes = dict(wl.sizes)
    unknown: list[str] = []
    needs: list[str] = []
    long: list[str] = []
    fixed: list[str] = []
    for al in loops:
        where = f"`{al.arrays[0]}[{al.var}]` (line {al.access_lines[0]})"
        if not al.constant:
            size = al.size_at(sizes)
            outer = _nested(k, al.loop)
            if size is not None and size > MAX_TRIP:
                long.append(f"{where}: unrolled to the array's {size} elements")
            elif outer is None:  # a size given could not change this: how hot the accesses are is no size
                unknown.append(f"{where} is in local memory (runtime bound `{al.bound}`) outside any loop: it pays "
                               "as far as the kernel's time goes into those accesses")
            elif size is not None:
                return Payoff(PAYS, f"{where} is indexed by a loop bound at run time (`{al.bound}`, line "
                              f"{al.loop.line}) inside the loop at line {outer.line}: nvcc cannot name the element "
                              f"at compile time, so `{al.arrays[0]}` lives in local memory — a load and a store "
                              f"through L1 per access, every trip of the outer loop; a compile-time trip of {size} "
                              "(the array's size) with `#pragma unroll` keeps it in registers")
            else:
                unknown.append(f"{where} is in local memory (runtime bound `{al.bound}`, inside the loop at line "
                               f"{outer.line}); unrolled to the array's size `{al.size_text}` it pays if that is at "
                               f"most {MAX_TRIP}")
                needs += [f"--shape {n}=N" for n in al.names]
            continue
        trip = al.trip_at(sizes)
        if trip is not None and trip > MAX_TRIP:
            long.append(f"{where}: a trip count of {trip} (from the sizes given)")
            continue
        # a size given here can only show it too long: whether nvcc unrolled it is not a size
        fixed.append(f"`{al.arrays[0]}[{al.var}]` (loop at line {al.loop.line}, trip `{al.bound}`)")
    if fixed:
        unknown.append(f"{', '.join(fixed[:3])} {'has a' if len(fixed) == 1 else 'have'} compile-time trip "
                       f"count{'' if len(fixed) == 1 else 's'}: nvcc unrolls many such loops by itself, so it pays "
                       "only where one was left rolled — `-Xptxas -v` printing a stack frame for this kernel (or "
                       "`LDL`/`STL` in its SASS) says so")
    if unknown:
        return Payoff(UNKNOWN, "; ".join(unknown[:2]), " ".join(dict.fromkeys(needs)))
    return Payoff(DOES_NOT_PAY, "; ".join(long[:2]) + f" — past {MAX_TRIP} trips unrolling grows the code and "
                  "the live registers, and spills (keep it rolled, or `#pragma unroll 4`)")
