"""The data-flow view of one kernel: how names chain into a load's address, its mask or a
``tl.dot`` operand.

The kernel's facts keep each assignment's text but not those chains. ``flow_of`` builds
them from the tree the extractor parsed (``KernelFacts.syntax``), so a kernel is parsed
once whatever its conditions ask. Nodes are libcst nodes; the helpers below answer the
questions skeletons ask of them (what a call is named, which names an expression reads,
which calls it makes), so skeletons never walk trees themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

from skel.kernels.tree import call_args, children, dotted, keyword_arg

_NOT_VARS = {"tl", "triton", "None", "True", "False"}
_AUG_OPS = {cst.AddAssign: "+=", cst.SubtractAssign: "-=", cst.MultiplyAssign: "*=", cst.DivideAssign: "/=",
            cst.FloorDivideAssign: "//=", cst.ModuloAssign: "%="}
Node = cst.CSTNode


def walk(node: Node) -> Iterator[Node]:
    """``node`` and everything below it, in source order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(children(n))))


def call_name(node: cst.Call) -> str:
    """Canonical-ish name: ``tl.load``, ``exp2`` (bare helper), ``.to`` (method)."""
    name = dotted(node.func)
    if name.startswith("triton.language."):
        name = "tl." + name[len("triton.language."):]
    if isinstance(node.func, cst.Attribute) and not name.startswith(("tl.", "triton.")):
        return "." + node.func.attr.value
    return name


def names_in(expr: Node) -> set[str]:
    """Variables ``expr`` reads (not attribute names, keywords or lambda parameters)."""
    out: set[str] = set()
    stack = [expr]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            if n.value not in _NOT_VARS:
                out.add(n.value)
        elif isinstance(n, cst.Attribute):
            stack.append(n.value)
        elif isinstance(n, cst.Arg):
            stack.append(n.value)
        elif isinstance(n, cst.Param):
            stack.extend(x for x in (n.default, n.annotation) if x is not None)
        else:
            stack.extend(children(n))
    return out


def calls_in(expr: Node) -> list[cst.Call]:
    """Every call in ``expr`` (itself included), in source order."""
    return [n for n in walk(expr) if isinstance(n, cst.Call)]


def args_of(call: cst.Call) -> list[cst.BaseExpression]:
    """A call's positional argument values."""
    return call_args(call)


NOT_CONSTANT = object()


def constant(node: Node) -> object:
    """The value of a literal (int, float, string, True/False/None), else ``NOT_CONSTANT``."""
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.Float):
        return float(node.value)
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    return NOT_CONSTANT


_BINARY = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.FloorDivide: "//",
           cst.Modulo: "%", cst.Power: "**", cst.MatrixMultiply: "@", cst.BitAnd: "&", cst.BitOr: "|",
           cst.BitXor: "^", cst.LeftShift: "<<", cst.RightShift: ">>"}
_COMPARE = {cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">", cst.GreaterThanEqual: ">=",
            cst.Equal: "==", cst.NotEqual: "!=", cst.In: "in", cst.NotIn: "not in", cst.Is: "is",
            cst.IsNot: "is not"}
ORDERING = ("<", "<=", ">", ">=")


def is_none(e: Node) -> bool:
    return isinstance(e, cst.Name) and e.value == "None"


def name_of(e: Node) -> str | None:
    """The variable ``e`` is, when it is a bare name."""
    return e.value if isinstance(e, cst.Name) else None


def is_call(e: Node, *names: str) -> bool:
    """``e`` is a call (of one of ``names``, when given)."""
    return isinstance(e, cst.Call) and (not names or call_name(e) in names)


def binary(e: Node, *ops: str) -> bool:
    """``e`` is a binary operation with one of ``ops`` ("+", "-", "//", "%", "&" ...)."""
    return isinstance(e, cst.BinaryOperation) and _BINARY.get(type(e.operator)) in ops


def operands(e: Node) -> tuple[Node, Node]:
    """Left and right operands of a binary operation (see :func:`binary`)."""
    assert isinstance(e, cst.BinaryOperation)
    return e.left, e.right


def comparison(e: Node) -> tuple[Node, str, Node] | None:
    """``(left, "<", right)`` for a single comparison ``a < b``, else None."""
    if isinstance(e, cst.Comparison) and len(e.comparisons) == 1:
        c = e.comparisons[0]
        return e.left, _COMPARE.get(type(c.operator), "?"), c.comparator
    return None


def negated(e: Node) -> Node | None:
    """The operand of a unary ``-x``, ``+x``, ``~x`` or ``not x``."""
    return e.expression if isinstance(e, cst.UnaryOperation) else None


def is_not(e: Node) -> bool:
    return isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Not)


def receiver(call: cst.Call) -> Node | None:
    """The object a method is called on: ``x`` in ``x.to(tl.float32)``."""
    return call.func.value if isinstance(call.func, cst.Attribute) else None


def kwarg(call: cst.Call, name: str) -> Node | None:
    """The value passed as keyword ``name``."""
    return keyword_arg(call, name)


def has_kwarg(call: cst.Call, *names: str) -> bool:
    return any(a.keyword is not None and a.keyword.value in names for a in call.args)


def keywords(call: cst.Call) -> list[Node]:
    """The values of a call's keyword arguments, in order."""
    return [a.value for a in call.args if a.keyword is not None]


def branches(e: Node) -> tuple[Node, Node] | None:
    """``(then, else)`` values of a conditional expression ``a if c else b``."""
    return (e.body, e.orelse) if isinstance(e, cst.IfExp) else None


def is_slice(e: Node) -> bool:
    return isinstance(e, cst.Slice)


def subscript_pair(e: Node) -> tuple[Node, Node] | None:
    """The two index parts of ``x[a, b]``: ``cst.Slice`` for ``:``, else the index value."""
    if isinstance(e, cst.Subscript) and len(e.slice) == 2:
        parts = []
        for el in e.slice:
            parts.append(el.slice.value if isinstance(el.slice, cst.Index) else el.slice)
        return parts[0], parts[1]
    return None


@dataclass
class LoopInfo:
    line: int
    end: int
    kind: str  # "range", "tl.range", "tl.static_range", "while", ...
    targets: set[str] = field(default_factory=set)
    bounds: Node | None = None  # the iterator (`range(...)`) or the `while` test

    def holds(self, line: int) -> bool:
        return self.line <= line <= self.end


@dataclass
class Def:
    name: str
    value: Node
    line: int
    loops: tuple[LoopInfo, ...]
    aug: bool = False  # `name += value`
    op: str = "="  # "=", or the augmented operator: "+=", "-=", ...


@dataclass
class CallInfo:
    node: cst.Call
    name: str
    line: int
    loops: tuple[LoopInfo, ...]
    targets: tuple[str, ...]  # names the enclosing assignment binds (its result lands there)
    branch: tuple[tuple[int, int], ...] = ()  # (if line, 0 body / 1 else) of enclosing ifs

    def exclusive_with(self, other: "CallInfo") -> bool:
        """The two calls sit in different arms of the same `if`: never both run."""
        mine = dict(self.branch)
        return any(line in mine and mine[line] != arm for line, arm in other.branch)

    def arg(self, i: int, kw: str) -> Node | None:
        """The argument passed as keyword ``kw``, else the ``i``-th positional one."""
        value = keyword_arg(self.node, kw)
        if value is not None:
            return value
        args = [a.value for a in self.node.args if a.keyword is None and not a.star]
        return args[i] if len(args) > i else None

    @property
    def in_loop(self) -> bool:
        return bool(self.loops)


class Flow:
    """Definitions, loops and calls of one kernel, with closures over name chains."""

    def __init__(self, syntax) -> None:
        self.defs: dict[str, list[Def]] = {}
        self.calls: list[CallInfo] = []
        self.loops: list[LoopInfo] = []
        self.vector_cache: set[str] | None = None  # see vector_names
        self.ok = syntax is not None
        if syntax is None:
            return
        self._pos = syntax.positions
        self._branch: tuple[tuple[int, int], ...] = ()
        self._body(syntax.node.body, ())

    # --- collection -----------------------------------------------------------------------
    def _line(self, node: Node) -> int:
        return self._pos.line(node)

    def _end(self, stmt: Node) -> int:
        """Last line of a statement's code (its last body statement for compound ones)."""
        while True:
            block = _last_block(stmt)
            if block is None:
                break
            stmt = block.body[-1] if isinstance(block, cst.IndentedBlock) else block
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            stmt = stmt.body[-1]
        return self._pos.last_line(stmt)

    def _scan(self, expr: Node | None, loops, targets: tuple[str, ...] = ()) -> None:
        if expr is None:
            return
        for c in calls_in(expr):
            self.calls.append(CallInfo(c, call_name(c), self._line(c), loops, targets, self._branch))

    def _define(self, target: Node, value: Node, line: int, loops, op: str = "=") -> None:
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
                and len(target.elements) == len(value.elements):
            for t, v in zip(target.elements, value.elements):
                self._define(t.value, v.value, line, loops, op)
            return
        bound = tuple(sorted(names_in(target))) if not isinstance(target, (cst.Subscript, cst.Attribute)) else ()
        for n in bound:
            self.defs.setdefault(n, []).append(Def(n, value, line, loops, op != "=", op))
        self._scan(value, loops, bound)

    def _body(self, block: Node, loops: tuple[LoopInfo, ...]) -> None:
        stmts = block.body if isinstance(block, (cst.IndentedBlock, cst.SimpleStatementSuite)) else [block]
        for s in stmts:
            if isinstance(s, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                for small in s.body:
                    self._small(small, loops)
            else:
                self._compound(s, loops)

    def _compound(self, s: Node, loops: tuple[LoopInfo, ...]) -> None:
        line = self._line(s)
        if isinstance(s, cst.For):
            kind = call_name(s.iter) if isinstance(s.iter, cst.Call) else "iter"
            lp = LoopInfo(line, self._end(s), kind, names_in(s.target), s.iter)
            self.loops.append(lp)
            self._scan(s.iter, loops)
            self._body(s.body, loops + (lp,))
            if s.orelse is not None:
                self._body(s.orelse.body, loops)
        elif isinstance(s, cst.While):
            lp = LoopInfo(line, self._end(s), "while", set(), s.test)
            self.loops.append(lp)
            self._scan(s.test, loops + (lp,))
            self._body(s.body, loops + (lp,))
            if s.orelse is not None:
                self._body(s.orelse.body, loops)
        elif isinstance(s, cst.If):
            self._scan(s.test, loops)
            outer = self._branch
            self._branch = outer + ((line, 0),)
            self._body(s.body, loops)
            self._branch = outer + ((line, 1),)
            if isinstance(s.orelse, cst.Else):
                self._body(s.orelse.body, loops)
            elif isinstance(s.orelse, cst.If):  # `elif`: an `if` inside the else arm
                self._compound(s.orelse, loops)
            self._branch = outer
        elif isinstance(s, (cst.With, cst.FunctionDef)):
            self._body(s.body, loops)
        elif isinstance(s, (cst.Try, cst.TryStar)):
            self._body(s.body, loops)
            if s.orelse is not None:
                self._body(s.orelse.body, loops)
            if s.finalbody is not None:
                self._body(s.finalbody.body, loops)
            for h in s.handlers:
                self._body(h.body, loops)

    def _small(self, s: Node, loops: tuple[LoopInfo, ...]) -> None:
        line = self._line(s)
        if isinstance(s, cst.Assign):
            for t in s.targets:
                self._define(t.target, s.value, line, loops)
        elif isinstance(s, cst.AugAssign):
            self._define(s.target, s.value, line, loops, _AUG_OPS.get(type(s.operator), "?="))
        elif isinstance(s, cst.AnnAssign) and s.value is not None:
            self._define(s.target, s.value, line, loops)
        else:
            for child in children(s):
                if isinstance(child, cst.BaseExpression):
                    self._scan(child, loops)

    # --- queries ----------------------------------------------------------------------------
    def closure(self, expr: Node, within: LoopInfo | None = None, hops: int = 64,
                follow_aug: bool = True) -> tuple[set[str], list[Node]]:
        """Names ``expr`` reads, transitively through their definitions, and every
        expression met on the way (``expr`` first). ``within``: follow only definitions
        inside that loop (what is recomputed each iteration)."""
        seen: set[str] = set()
        exprs: list[Node] = [expr]
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

    def text(self, node: Node) -> str:
        """An expression's source as written, whitespace collapsed."""
        return " ".join(self._pos.source(node).split())

    def key(self, node: Node) -> str:
        """An expression's source without any whitespace: equal keys, same expression."""
        return "".join(self._pos.source(node).split())

    def named(self, *names: str) -> list[CallInfo]:
        return [c for c in self.calls if c.name in names]

    def loads(self) -> list[CallInfo]:
        return self.named("tl.load")


def _last_block(stmt: Node):
    """The block a compound statement ends with (its `else`/`finally` when present)."""
    if isinstance(stmt, (cst.For, cst.While)):
        return (stmt.orelse.body if stmt.orelse is not None else stmt.body)
    if isinstance(stmt, cst.If):
        if isinstance(stmt.orelse, cst.If):
            return stmt.orelse
        return stmt.orelse.body if stmt.orelse is not None else stmt.body
    if isinstance(stmt, (cst.Try, cst.TryStar)):
        for part in (stmt.finalbody, stmt.orelse):
            if part is not None:
                return part.body
        return stmt.handlers[-1].body if stmt.handlers else stmt.body
    if isinstance(stmt, (cst.With, cst.FunctionDef, cst.ClassDef)):
        return stmt.body
    return None


def flow_of(k) -> Flow:
    """The data-flow view of a kernel, built once from the tree its extractor parsed.

    Facts read back from the cache or the store carry no tree; for them the kernel's own
    source is parsed again (the only second parse, and one the miner never needs: it tags
    kernels in the process that parsed them)."""
    syntax = k.syntax
    if syntax is None:
        syntax = k.syntax = _reparse(k)
    if syntax.flow is None:
        syntax.flow = Flow(syntax)
    return syntax.flow


def _reparse(k):
    import textwrap

    from skel.kernels.triton import ParseError, extract_file

    try:
        found = extract_file(textwrap.dedent(k.source), k.path)
    except ParseError:
        return None
    for other in found:
        if other.name == k.name and other.syntax is not None:
            other.syntax.positions.offset += k.line_start - 1  # the snippet starts at line_start
            return other.syntax
    return None


# --- expression predicates used by several skeletons ------------------------------------


def broadcast_axes(exprs: list[Node]) -> set[str]:
    """{"col", "row"} for `x[:, None]` (a column vector) and `x[None, :]` (a row)."""
    out: set[str] = set()
    for e in exprs:
        for n in walk(e):
            pair = subscript_pair(n)
            if pair is None:
                continue
            a, b = pair
            if isinstance(a, cst.Slice) and is_none(b):
                out.add("col")
            elif is_none(a) and isinstance(b, cst.Slice):
                out.add("row")
    return out


def has_call(exprs: list[Node], *names: str) -> bool:
    return any(call_name(c) in names for e in exprs for c in calls_in(e))


def contains_call(expr: Node, node: cst.Call) -> bool:
    return any(c is node for c in calls_in(expr))


BLOCK_PTR_MAKERS = ("tl.make_block_ptr", "tl.advance")
BLOCK_PTR_HELPER = re.compile(r"\w*block_ptr")


def is_block_ptr_address(fl: Flow, addr: Node) -> bool:
    """The address is (a name bound to) a block pointer."""
    if isinstance(addr, cst.Call) and call_name(addr) in BLOCK_PTR_MAKERS:
        return True
    if isinstance(addr, cst.Name):
        return any(isinstance(d.value, cst.Call) and (call_name(d.value) in BLOCK_PTR_MAKERS
                                                      or BLOCK_PTR_HELPER.fullmatch(call_name(d.value)))
                   for d in fl.defs.get(addr.value, ()))
    return False


def manual_2d_address(fl: Flow, addr: Node) -> bool:
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
        defs = fl.defs.get(addr.value, ()) if isinstance(addr, cst.Name) else ()
        for d in defs:
            if isinstance(d.value, cst.Call) and call_name(d.value) == "tl.make_block_ptr":
                args = args_of(d.value)
                shape = args[4] if len(args) > 4 else keyword_arg(d.value, "block_shape")
                if isinstance(shape, (cst.Tuple, cst.List)) and len(shape.elements) >= 2:
                    return True
        return False
    return manual_2d_address(fl, addr)


def vector_names(fl: Flow) -> set[str]:
    """Names holding tensors derived from `tl.arange` (offsets, masks, index vectors)."""
    cached = fl.vector_cache
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
    fl.vector_cache = vec
    return vec


def is_vector_expr(fl: Flow, e: Node) -> bool:
    return has_call([e], "tl.arange") or bool(names_in(e) & vector_names(fl))


def bounds_mask(fl: Flow, mask: Node) -> bool:
    """The mask only compares offsets against scalar limits (`offs < N`), the kind a
    block pointer's `boundary_check` or a tensor descriptor's bounds replace."""
    names, exprs = fl.closure(mask)
    if gathered(fl, names):
        return False  # a mask read from memory is data, not bounds
    seen = False
    for e in exprs:
        for n in walk(e):
            if not isinstance(n, cst.Comparison):
                continue
            cmp = comparison(n)
            if cmp is None or cmp[1] not in ORDERING:
                return False
            if is_vector_expr(fl, cmp[0]) and is_vector_expr(fl, cmp[2]):
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


def gathered_address(fl: Flow, addr: Node) -> list[int]:
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


def depends_on_loop(fl: Flow, expr: Node, loop: LoopInfo) -> bool:
    """``expr`` changes with ``loop``'s index: it reads the index directly or through names
    (re)defined inside the loop from it. Names the loop redefines from loop-invariant
    values only (`m_t = o_t < T` recomputed each iteration) do not count."""
    names, _ = fl.closure(expr, within=loop)
    return bool(names & loop.targets)


def stepped_in_loop(fl: Flow, expr: Node, loop: LoopInfo) -> list[int]:
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
                    d.op == "=" and binary(v, "+", "-") and name_of(operands(v)[0]) == n) or (
                    isinstance(v, cst.Call) and call_name(v) == "tl.advance"):
                lines.append(d.line)
    return lines


def affine_in_loop(fl: Flow, expr: Node, loop: LoopInfo) -> bool:
    """``expr`` moves by a constant step per iteration of ``loop``: what is recomputed
    inside the loop reads no memory (no gathered or paged index), never divides or
    wraps a loop-dependent value (`block_idx // grid_n`, `% n`: a grid-stride walk over
    flattened tiles) and never clamps or selects it (`tl.minimum(idx, n - 1)`)."""
    _, exprs = fl.closure(expr, within=loop)
    if has_call(exprs, "tl.load"):
        return False
    for e in exprs:
        for n in walk(e):
            if binary(n, "//", "%") and depends_on_loop(fl, operands(n)[0], loop):
                return False
            if isinstance(n, cst.Call) and call_name(n) in _CLAMPS \
                    and any(depends_on_loop(fl, a, loop) for a in args_of(n)):
                return False  # a clamped or selected index: the step is not constant at the edges
    return True


_CLAMPS = ("tl.minimum", "tl.maximum", "min", "max", "tl.where", "tl.clamp")


def conjuncts(fl: Flow, expr: Node, depth: int = 8) -> list[Node]:
    """The `&`-separated parts of a mask, through names bound once, broadcasts
    (`m[:, None]`) and casts (`.to(tl.int1)`)."""
    if depth <= 0:
        return [expr]
    if binary(expr, "&"):
        left, right = operands(expr)
        return conjuncts(fl, left, depth - 1) + conjuncts(fl, right, depth - 1)
    if isinstance(expr, cst.Subscript) and subscript_pair(expr) is not None and broadcast_axes([expr]):
        return conjuncts(fl, expr.value, depth - 1)
    if isinstance(expr, cst.Call) and call_name(expr) == ".to" and isinstance(expr.func, cst.Attribute):
        return conjuncts(fl, expr.func.value, depth - 1)
    if isinstance(expr, cst.Name):
        defs = fl.defs.get(expr.value, ())
        if len(defs) == 1 and not defs[0].aug:
            return conjuncts(fl, defs[0].value, depth - 1)
    return [expr]


def _zero_one(fl: Flow, k, e: Node, depth: int = 4) -> bool:
    """``e`` can only be 0 or 1 (False/True): a literal, a comparison, `tl.where(c, 1, 0)`,
    a name bound only to such values, or a constexpr flag parameter (bool default, or a
    flag-like name such as `IS_*`, `USE_*`, `HAS_*`)."""
    if depth <= 0:
        return False
    value = constant(e)
    if value is not NOT_CONSTANT:
        return value in (0, 1) and not isinstance(value, float)
    if isinstance(e, cst.Comparison) or (isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Not)):
        return True
    if isinstance(e, cst.Call) and call_name(e) == "tl.where" and len(args_of(e)) == 3:
        return all(_zero_one(fl, k, a, depth - 1) for a in args_of(e)[1:])
    if isinstance(e, cst.Call) and call_name(e) == ".to" and isinstance(e.func, cst.Attribute):
        return _zero_one(fl, k, e.func.value, depth - 1)
    if isinstance(e, cst.Name):
        p = next((p for p in k.params if p.name == e.value), None)
        if p is not None:
            return p.constexpr and (p.default.strip() in ("True", "False", "0", "1")
                                    or bool(re.match(r"(IS|USE|HAS|ENABLE|DO|WITH)_", p.name)))
        defs = fl.defs.get(e.value, ())
        return bool(defs) and all(not d.aug and _zero_one(fl, k, d.value, depth - 1) for d in defs)
    return False


def at_most_one_trip(fl: Flow, k, loop: LoopInfo) -> bool:
    """A `for` used as a guard: `range(0, flag, 1)` / `range(flag)` whose stop is 0 or 1 by
    construction (a 0/1 value, a comparison, a constexpr flag), so the body runs at most
    once. A runtime stop of unknown range is not assumed to be a flag."""
    b = loop.bounds
    if not (isinstance(b, cst.Call) and call_name(b) in ("range", "tl.range", "tl.static_range")):
        return False
    args = [a.value for a in b.args if a.keyword is None and not a.star]
    if not args or len(args) > 3:
        return False
    start, stop = (0, args[0]) if len(args) == 1 else (constant(args[0]), args[1])
    step = constant(args[2]) if len(args) == 3 else 1
    if not (start == 0 and not isinstance(start, str) and step == 1 and not isinstance(step, str)):
        return False
    return _zero_one(fl, k, stop)
