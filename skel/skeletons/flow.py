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


