"""A small data-flow view of one kernel, for conditions that need to know how names
chain into a load's address, its mask or a ``tl.dot`` operand.

The extracted facts keep each assignment's text but not those chains; ``flow_of`` builds
them from the kernel's source (already in the facts) with Python's ``ast`` — cheap, and
cached per kernel. Memory-access and arithmetic skeletons share these helpers.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field

# ---------------------------------------------------------------------------------------
# A small data-flow view of one kernel (`flow_of`), built from its source with `ast`
# (cheap: the kernel text is already in the facts). The extracted facts keep each
# assignment's text but not how names chain into a load's address, its mask or a
# `tl.dot` operand, which most memory-access and arithmetic skeletons need; they import
# these helpers from here. A candidate to move next to conditions.py.
# ---------------------------------------------------------------------------------------

_NOT_VARS = {"tl", "triton", "None", "True", "False"}
_AUG_OPS = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/=", ast.FloorDiv: "//=", ast.Mod: "%="}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def call_name(node: ast.Call) -> str:
    """Canonical-ish name: ``tl.load``, ``exp2`` (bare helper), ``.to`` (method)."""
    name = _dotted(node.func)
    if name.startswith("triton.language."):
        name = "tl." + name[len("triton.language."):]
    if isinstance(node.func, ast.Attribute) and not name.startswith(("tl.", "triton.")):
        return "." + node.func.attr
    return name


def names_in(expr: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and n.id not in _NOT_VARS}


def calls_in(expr: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(expr) if isinstance(n, ast.Call)]


@dataclass
class LoopInfo:
    line: int
    end: int
    kind: str  # "range", "tl.range", "tl.static_range", "while", ...
    targets: set[str] = field(default_factory=set)
    bounds: ast.AST | None = None  # the iterator (`range(...)`) or the `while` test

    def holds(self, line: int) -> bool:
        return self.line <= line <= self.end


@dataclass
class Def:
    name: str
    value: ast.AST
    line: int
    loops: tuple[LoopInfo, ...]
    aug: bool = False  # `name += value`
    op: str = "="  # "=", or the augmented operator: "+=", "-=", ...


@dataclass
class CallInfo:
    node: ast.Call
    name: str
    line: int
    loops: tuple[LoopInfo, ...]
    targets: tuple[str, ...]  # names the enclosing assignment binds (its result lands there)
    branch: tuple[tuple[int, int], ...] = ()  # (if line, 0 body / 1 else) of enclosing ifs

    def exclusive_with(self, other: "CallInfo") -> bool:
        """The two calls sit in different arms of the same `if`: never both run."""
        mine = dict(self.branch)
        return any(line in mine and mine[line] != arm for line, arm in other.branch)

    def arg(self, i: int, kw: str) -> ast.AST | None:
        for k in self.node.keywords:
            if k.arg == kw:
                return k.value
        args = [a for a in self.node.args if not isinstance(a, ast.Starred)]
        return args[i] if len(args) > i else None

    def kwarg(self, kw: str) -> ast.AST | None:
        for k in self.node.keywords:
            if k.arg == kw:
                return k.value
        return None

    @property
    def in_loop(self) -> bool:
        return bool(self.loops)


class Flow:
    """Definitions, loops and calls of one kernel, with closures over name chains."""

    def __init__(self, source: str, line0: int) -> None:
        self.defs: dict[str, list[Def]] = {}
        self.calls: list[CallInfo] = []
        self.loops: list[LoopInfo] = []
        self.ok = False
        self._off = line0 - 1
        try:
            tree = ast.parse(textwrap.dedent(source))
        except (SyntaxError, ValueError, RecursionError):
            return
        fn = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if fn is None:
            return
        self.ok = True
        self._branch: tuple[tuple[int, int], ...] = ()
        self._body(fn.body, ())

    # --- collection -----------------------------------------------------------------------
    def _line(self, node: ast.AST) -> int:
        return getattr(node, "lineno", 0) + self._off

    def _scan(self, expr: ast.AST | None, loops, targets: tuple[str, ...] = ()) -> None:
        if expr is None:
            return
        for c in calls_in(expr):
            self.calls.append(CallInfo(c, call_name(c), self._line(c), loops, targets, self._branch))

    def _define(self, target: ast.AST, value: ast.AST, line: int, loops, op: str = "=") -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self._define(t, v, line, loops, op)
            return
        bound = tuple(sorted(names_in(target))) if not isinstance(target, (ast.Subscript, ast.Attribute)) else ()
        for n in bound:
            self.defs.setdefault(n, []).append(Def(n, value, line, loops, op != "=", op))
        self._scan(value, loops, bound)

    def _body(self, stmts: list[ast.stmt], loops: tuple[LoopInfo, ...]) -> None:
        for s in stmts:
            line = self._line(s)
            if isinstance(s, (ast.For, ast.AsyncFor)):
                kind = call_name(s.iter) if isinstance(s.iter, ast.Call) else "iter"
                lp = LoopInfo(line, getattr(s, "end_lineno", s.lineno) + self._off, kind, names_in(s.target), s.iter)
                self.loops.append(lp)
                self._scan(s.iter, loops)
                self._body(s.body, loops + (lp,))
                self._body(s.orelse, loops)
            elif isinstance(s, ast.While):
                lp = LoopInfo(line, getattr(s, "end_lineno", s.lineno) + self._off, "while", set(), s.test)
                self.loops.append(lp)
                self._scan(s.test, loops + (lp,))
                self._body(s.body, loops + (lp,))
                self._body(s.orelse, loops)
            elif isinstance(s, ast.If):
                self._scan(s.test, loops)
                outer = self._branch
                self._branch = outer + ((line, 0),)
                self._body(s.body, loops)
                self._branch = outer + ((line, 1),)
                self._body(s.orelse, loops)
                self._branch = outer
            elif isinstance(s, (ast.With, ast.AsyncWith)):
                self._body(s.body, loops)
            elif isinstance(s, ast.Try):
                for part in (s.body, s.orelse, s.finalbody, *[h.body for h in s.handlers]):
                    self._body(part, loops)
            elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._body(s.body, loops)
            elif isinstance(s, ast.Assign):
                for t in s.targets:
                    self._define(t, s.value, line, loops)
            elif isinstance(s, ast.AugAssign):
                self._define(s.target, s.value, line, loops, _AUG_OPS.get(type(s.op), "?="))
            elif isinstance(s, ast.AnnAssign) and s.value is not None:
                self._define(s.target, s.value, line, loops)
            else:
                for child in ast.iter_child_nodes(s):
                    if isinstance(child, ast.expr):
                        self._scan(child, loops)

    # --- queries ----------------------------------------------------------------------------
    def closure(self, expr: ast.AST, within: LoopInfo | None = None, hops: int = 64,
                follow_aug: bool = True) -> tuple[set[str], list[ast.AST]]:
        """Names ``expr`` reads, transitively through their definitions, and every
        expression met on the way (``expr`` first). ``within``: follow only definitions
        inside that loop (what is recomputed each iteration)."""
        seen: set[str] = set()
        exprs: list[ast.AST] = [expr]
        frontier = names_in(expr)
        for _ in range(hops):
            frontier -= seen
            if not frontier:
                break
            seen |= frontier
            nxt: set[str] = set()
            for n in frontier:
                for d in self.defs.get(n, ()):
                    if within is not None and not within.holds(d.line):
                        continue
                    if d.aug and not follow_aug:
                        continue
                    exprs.append(d.value)
                    nxt |= names_in(d.value)
            frontier = nxt
        return seen, exprs

    def named(self, *names: str) -> list[CallInfo]:
        return [c for c in self.calls if c.name in names]

    def loads(self) -> list[CallInfo]:
        return self.named("tl.load")

    def produced_by(self, call: CallInfo) -> set[str]:
        return set(call.targets)


_FLOWS: dict[tuple, Flow] = {}


def flow_of(k) -> Flow:
    """The (cached) data-flow view of a kernel's facts."""
    key = (k.path, k.name, k.line_start, hash(k.source))
    f = _FLOWS.get(key)
    if f is None:
        if len(_FLOWS) > 4096:
            _FLOWS.clear()
        f = _FLOWS[key] = Flow(k.source, k.line_start)
    return f


# --- expression predicates used by several skeletons ------------------------------------


def _is_none(e: ast.AST) -> bool:
    return isinstance(e, ast.Constant) and e.value is None


def broadcast_axes(exprs: list[ast.AST]) -> set[str]:
    """{"col", "row"} for `x[:, None]` (a column vector) and `x[None, :]` (a row)."""
    out: set[str] = set()
    for e in exprs:
        for n in ast.walk(e):
            if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Tuple) and len(n.slice.elts) == 2:
                a, b = n.slice.elts
                if isinstance(a, ast.Slice) and _is_none(b):
                    out.add("col")
                elif _is_none(a) and isinstance(b, ast.Slice):
                    out.add("row")
    return out


def has_call(exprs: list[ast.AST], *names: str) -> bool:
    return any(call_name(c) in names for e in exprs for c in calls_in(e))


def contains_call(expr: ast.AST, node: ast.Call) -> bool:
    return any(c is node for c in calls_in(expr))


BLOCK_PTR_MAKERS = ("tl.make_block_ptr", "tl.advance")
BLOCK_PTR_HELPER = re.compile(r"\w*block_ptr")


def is_block_ptr_address(fl: Flow, addr: ast.AST) -> bool:
    """The address is (a name bound to) a block pointer."""
    if isinstance(addr, ast.Call) and call_name(addr) in BLOCK_PTR_MAKERS:
        return True
    if isinstance(addr, ast.Name):
        return any(isinstance(d.value, ast.Call) and (call_name(d.value) in BLOCK_PTR_MAKERS
                                                     or BLOCK_PTR_HELPER.fullmatch(call_name(d.value)))
                   for d in fl.defs.get(addr.id, ()))
    return False


def manual_2d_address(fl: Flow, addr: ast.AST) -> bool:
    """`base + rows[:, None] * stride + cols[None, :]`, directly or through names."""
    if is_block_ptr_address(fl, addr):
        return False
    _, exprs = fl.closure(addr)
    return broadcast_axes(exprs) == {"col", "row"}


def tile_load_2d(fl: Flow, c: CallInfo) -> bool:
    """A load of a 2-D tile, by manual offsets or through a 2-D block pointer."""
    addr = c.arg(0, "pointer")
    if addr is None:
        return False
    if is_block_ptr_address(fl, addr):
        defs = fl.defs.get(addr.id, ()) if isinstance(addr, ast.Name) else ()
        for d in defs:
            if isinstance(d.value, ast.Call) and call_name(d.value) == "tl.make_block_ptr":
                args = d.value.args
                shape = args[4] if len(args) > 4 else next(
                    (k.value for k in d.value.keywords if k.arg == "block_shape"), None)
                if isinstance(shape, (ast.Tuple, ast.List)) and len(shape.elts) >= 2:
                    return True
        return False
    return manual_2d_address(fl, addr)


def vector_names(fl: Flow) -> set[str]:
    """Names holding tensors derived from `tl.arange` (offsets, masks, index vectors)."""
    cached = getattr(fl, "_vector", None)
    if cached is not None:
        return cached
    vec: set[str] = set()
    changed = True
    while changed:
        changed = False
        for n, defs in fl.defs.items():
            if n in vec:
                continue
            if any(has_call([d.value], "tl.arange") or names_in(d.value) & vec for d in defs):
                vec.add(n)
                changed = True
    fl._vector = vec
    return vec


def _is_vector_expr(fl: Flow, e: ast.AST) -> bool:
    return has_call([e], "tl.arange") or bool(names_in(e) & vector_names(fl))


def bounds_mask(fl: Flow, mask: ast.AST) -> bool:
    """The mask only compares offsets against scalar limits (`offs < N`), the kind a
    block pointer's `boundary_check` or a tensor descriptor's bounds replace."""
    names, exprs = fl.closure(mask)
    if gathered(fl, names):
        return False  # a mask read from memory is data, not bounds
    seen = False
    for e in exprs:
        for n in ast.walk(e):
            if not isinstance(n, ast.Compare):
                continue
            if len(n.ops) != 1 or not isinstance(n.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
                return False
            if _is_vector_expr(fl, n.left) and _is_vector_expr(fl, n.comparators[0]):
                return False  # offsets against offsets: causal/triangular, not bounds
            seen = True
    return seen


def runtime_trip_count(fl: Flow, k, loop: LoopInfo) -> bool:
    """The loop's trip count depends on a runtime argument or on data (a sequence length,
    K, n_cols), not only on constexpr parameters and literals."""
    if loop.bounds is None:
        return False
    constexprs = {p.name for p in k.params if p.constexpr}
    params = {p.name for p in k.params}
    names, exprs = fl.closure(loop.bounds)
    return bool((names & params) - constexprs) or has_call(exprs, "tl.load", "tl.program_id")


def gathered_address(fl: Flow, addr: ast.AST) -> list[int]:
    """Lines of vector loads whose values feed ``addr`` (an index-tensor gather)."""
    return gathered(fl, fl.closure(addr)[0])


def gathered(fl: Flow, names: set[str]) -> list[int]:
    """Lines of vector (tile) loads whose results are among ``names``."""
    lines = []
    for c in fl.loads():
        if set(c.targets) & names:
            src = c.arg(0, "pointer")
            if src is not None and has_call(fl.closure(src)[1], "tl.arange"):
                lines.append(c.line)
    return lines




# --- loop-relative helpers (how an expression moves with a loop's index) -----------------


def depends_on_loop(fl: Flow, expr: ast.AST, loop: LoopInfo) -> bool:
    """``expr`` changes with ``loop``'s index: it reads the index directly or through names
    (re)defined inside the loop from it. Names the loop redefines from loop-invariant
    values only (`m_t = o_t < T` recomputed each iteration) do not count."""
    names, _ = fl.closure(expr, within=loop)
    return bool(names & loop.targets)


def stepped_in_loop(fl: Flow, expr: ast.AST, loop: LoopInfo) -> list[int]:
    """Lines where a name ``expr`` reads is stepped inside ``loop`` (`p += step`,
    `p = p + step`, `p = tl.advance(p, ...)`): the address is already strength-reduced."""
    names, _ = fl.closure(expr)
    lines = []
    for n in names:
        for d in fl.defs.get(n, ()):
            if not loop.holds(d.line):
                continue
            v = d.value
            if d.op in ("+=", "-=") or (
                    d.op == "=" and isinstance(v, ast.BinOp) and isinstance(v.op, (ast.Add, ast.Sub))
                    and isinstance(v.left, ast.Name) and v.left.id == n) or (
                    isinstance(v, ast.Call) and call_name(v) == "tl.advance"):
                lines.append(d.line)
    return lines


def affine_in_loop(fl: Flow, expr: ast.AST, loop: LoopInfo) -> bool:
    """``expr`` moves by a constant step per iteration of ``loop``: what is recomputed
    inside the loop reads no memory (no gathered or paged index), never divides or
    wraps a loop-dependent value (`block_idx // grid_n`, `% n`: a grid-stride walk over
    flattened tiles) and never clamps or selects it (`tl.minimum(idx, n - 1)`)."""
    _, exprs = fl.closure(expr, within=loop)
    if has_call(exprs, "tl.load"):
        return False
    for e in exprs:
        for n in ast.walk(e):
            if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.FloorDiv, ast.Mod)) \
                    and depends_on_loop(fl, n.left, loop):
                return False
            if isinstance(n, ast.Call) and call_name(n) in _CLAMPS \
                    and any(depends_on_loop(fl, a, loop) for a in n.args):
                return False  # a clamped or selected index: the step is not constant at the edges
    return True


_CLAMPS = ("tl.minimum", "tl.maximum", "min", "max", "tl.where", "tl.clamp")


def conjuncts(fl: Flow, expr: ast.AST, depth: int = 8) -> list[ast.AST]:
    """The `&`-separated parts of a mask, through names bound once, broadcasts
    (`m[:, None]`) and casts (`.to(tl.int1)`)."""
    if depth <= 0:
        return [expr]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitAnd):
        return conjuncts(fl, expr.left, depth - 1) + conjuncts(fl, expr.right, depth - 1)
    if isinstance(expr, ast.Subscript) and broadcast_axes([expr]) and isinstance(expr.slice, ast.Tuple):
        return conjuncts(fl, expr.value, depth - 1)
    if isinstance(expr, ast.Call) and call_name(expr) == ".to" and isinstance(expr.func, ast.Attribute):
        return conjuncts(fl, expr.func.value, depth - 1)
    if isinstance(expr, ast.Name):
        defs = fl.defs.get(expr.id, ())
        if len(defs) == 1 and not defs[0].aug:
            return conjuncts(fl, defs[0].value, depth - 1)
    return [expr]


def _zero_one(fl: Flow, k, e: ast.AST, depth: int = 4) -> bool:
    """``e`` can only be 0 or 1 (False/True): a literal, a comparison, `tl.where(c, 1, 0)`,
    a name bound only to such values, or a constexpr flag parameter (bool default, or a
    flag-like name such as `IS_*`, `USE_*`, `HAS_*`)."""
    if depth <= 0:
        return False
    if isinstance(e, ast.Constant):
        return e.value in (0, 1) and not isinstance(e.value, float)
    if isinstance(e, ast.Compare) or (isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not)):
        return True
    if isinstance(e, ast.Call) and call_name(e) == "tl.where" and len(e.args) == 3:
        return all(_zero_one(fl, k, a, depth - 1) for a in e.args[1:])
    if isinstance(e, ast.Call) and call_name(e) == ".to" and isinstance(e.func, ast.Attribute):
        return _zero_one(fl, k, e.func.value, depth - 1)
    if isinstance(e, ast.Name):
        p = next((p for p in k.params if p.name == e.id), None)
        if p is not None:
            return p.constexpr and (p.default.strip() in ("True", "False", "0", "1")
                                    or bool(re.match(r"(IS|USE|HAS|ENABLE|DO|WITH)_", p.name)))
        defs = fl.defs.get(e.id, ())
        return bool(defs) and all(not d.aug and _zero_one(fl, k, d.value, depth - 1) for d in defs)
    return False


def at_most_one_trip(fl: Flow, k, loop: LoopInfo) -> bool:
    """A `for` used as a guard: `range(0, flag, 1)` / `range(flag)` whose stop is 0 or 1 by
    construction (a 0/1 value, a comparison, a constexpr flag), so the body runs at most
    once. A runtime stop of unknown range is not assumed to be a flag."""
    b = loop.bounds
    if not (isinstance(b, ast.Call) and call_name(b) in ("range", "tl.range", "tl.static_range")):
        return False
    args = [a for a in b.args if not isinstance(a, ast.Starred)]
    if not args or len(args) > 3:
        return False
    start, stop, step = (ast.Constant(0), args[0], ast.Constant(1)) if len(args) == 1 else (
        args[0], args[1], args[2] if len(args) == 3 else ast.Constant(1))
    if not (isinstance(start, ast.Constant) and start.value == 0
            and isinstance(step, ast.Constant) and step.value == 1):
        return False
    return _zero_one(fl, k, stop)
