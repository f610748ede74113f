"""The data-flow view of one kernel: how names chain into a load's address, its mask or a
``tl.dot`` operand.

The kernel's facts keep each assignment's text but not those chains. ``flow_of`` builds
them from the tree the extractor parsed (``KernelFacts.syntax``), so a kernel is parsed
once whatever its conditions ask. Nodes are libcst nodes; the helpers below answer the
questions skeletons ask of them (what a call is named, which names an expression reads,
which calls it makes), so skeletons never walk trees themselves.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from skel.kernels import tree
from skel.kernels.tree import call_args, children, dotted, keyword_arg

_NOT_VARS = {"tl", "triton", "None", "True", "False"}
_AUG_OPS = {cst.AddAssign: "+=", cst.SubtractAssign: "-=", cst.MultiplyAssign: "*=", cst.DivideAssign: "/=",
            cst.FloorDivideAssign: "//=", cst.ModuloAssign: "%="}
Node = cst.CSTNode


def call_name(node: cst.Call) -> str:
    """Canonical-ish name: ``tl.load``, ``exp2`` (bare helper), ``.to`` (method)."""
    name = dotted(node.func)
    if name.startswith("triton.language."):
        name = "tl." + name[len("triton.language."):]
    if type(node.func) is cst.Attribute and not name.startswith(("tl.", "triton.")):
        return "." + node.func.attr.value
    return name


# Conditions ask the same questions of the same expressions many times (every closure
# walks a definition's value again), so the answers are kept per node. A node is
# immutable, and the cache holds the node itself, so its id cannot be reused while cached.
_MEMO: dict[tuple[str, int], tuple[Node, object]] = {}
_MEMO_LIMIT = 400_000


def _memo(kind: str, node: Node, compute):
    key = (kind, id(node))
    hit = _MEMO.get(key)
    if hit is not None:
        return hit[1]
    if len(_MEMO) > _MEMO_LIMIT:
        _MEMO.clear()
    value = compute(node)
    _MEMO[key] = (node, value)
    return value


def forget() -> None:
    """Drop the kept answers. They hold their nodes, and so the trees those belong to: a
    mine's parser worker calls this after each file, so it does not carry every tree it
    has analysed (memory, and the garbage collector's walks over it)."""
    _MEMO.clear()


def names_in(expr: Node) -> set[str]:
    """Variables ``expr`` reads (not attribute names, keywords or lambda parameters)."""
    return set(_memo("names", expr, _names_in))


def _names_in(expr: Node) -> frozenset[str]:
    out: set[str] = set()
    stack: list[Any] = [expr]
    while stack:
        n = stack.pop()
        t = type(n)  # exact types: isinstance on libcst's ABC-based classes is slow
        if t is cst.Name:
            if n.value not in _NOT_VARS:
                out.add(n.value)
        elif t is cst.Attribute or t is cst.Arg:
            stack.append(n.value)
        elif t is cst.Param:
            stack.extend(x for x in (n.default, n.annotation) if x is not None)
        else:
            stack.extend(children(n))
    return frozenset(out)


def walk(expr: Node) -> tuple[Node, ...]:
    """``expr`` and every node below it, in source order (kept per node, as above: the
    conditions walk the same addresses, masks and their definitions again and again)."""
    return _memo("nodes", expr, _nodes)


def _nodes(expr: Node) -> tuple[Node, ...]:
    return tuple(tree.walk(expr))


def calls_in(expr: Node) -> list[cst.Call]:
    """Every call in ``expr`` (itself included), in source order."""
    return list(_memo("calls", expr, _calls_in))


def _calls_in(expr: Node) -> tuple[cst.Call, ...]:
    # a walk of its own keeping only the calls: most expressions asked for their calls are
    # never walked whole, and keeping every node of each would cost more than the walk
    return tuple(tree.descendants(expr, cst.Call))


def args_of(call: cst.Call) -> list[cst.BaseExpression]:
    """A call's positional argument values."""
    return call_args(call)


NOT_CONSTANT = object()

# The helpers below run millions of times over a kernel's expressions: they test exact
# node types (``type(e) is cst.Name``), which is what ``isinstance`` means for these leaf
# classes (libcst never subclasses them) without its slow ABC instance check.


def constant(node: Node) -> object:
    """The value of a literal (int, float, string, True/False/None), else ``NOT_CONSTANT``."""
    if type(node) is cst.Integer:
        return int(node.value, 0)
    if type(node) is cst.Float:
        return float(node.value)
    if type(node) is cst.Name and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if type(node) is cst.SimpleString:
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
    return type(e) is cst.Name and e.value == "None"


def name_of(e: Node) -> str | None:
    """The variable ``e`` is, when it is a bare name."""
    return e.value if type(e) is cst.Name else None


def is_call(e: Node, *names: str) -> bool:
    """``e`` is a call (of one of ``names``, when given)."""
    return type(e) is cst.Call and (not names or call_name(e) in names)


def binary(e: Node, *ops: str) -> bool:
    """``e`` is a binary operation with one of ``ops`` ("+", "-", "//", "%", "&" ...)."""
    return type(e) is cst.BinaryOperation and _BINARY.get(type(e.operator)) in ops


def operands(e: Node) -> tuple[Node, Node]:
    """Left and right operands of a binary operation (see :func:`binary`)."""
    assert type(e) is cst.BinaryOperation
    return e.left, e.right


def comparison(e: Node) -> tuple[Node, str, Node] | None:
    """``(left, "<", right)`` for a single comparison ``a < b``, else None."""
    if type(e) is cst.Comparison and len(e.comparisons) == 1:
        c = e.comparisons[0]
        return e.left, _COMPARE.get(type(c.operator), "?"), c.comparator
    return None


def negated(e: Node) -> Node | None:
    """The operand of a unary ``-x``, ``+x``, ``~x`` or ``not x``."""
    return e.expression if type(e) is cst.UnaryOperation else None


def is_not(e: Node) -> bool:
    return type(e) is cst.UnaryOperation and type(e.operator) is cst.Not


def receiver(call: cst.Call) -> Node | None:
    """The object a method is called on: ``x`` in ``x.to(tl.float32)``."""
    return call.func.value if type(call.func) is cst.Attribute else None


def kwarg(call: cst.Call, name: str) -> Node | None:
    """The value passed as keyword ``name``."""
    return keyword_arg(call, name)


def has_kwarg(call: cst.Call, *names: str) -> bool:
    return any(a.keyword is not None and a.keyword.value in names for a in call.args)


def is_comparison(e: Node) -> bool:
    return type(e) is cst.Comparison


def elements(e: Node) -> list[Node] | None:
    """The items of a tuple or list literal, else None."""
    if type(e) is cst.Tuple or type(e) is cst.List:
        return [el.value for el in e.elements]
    return None


def positional(call: cst.Call) -> list[Node]:
    """Positional arguments without ``*`` or ``**`` ones (what ``f(a, b)`` indexes)."""
    return [a.value for a in call.args if a.keyword is None and not a.star]


def keywords(call: cst.Call) -> list[Node]:
    """The values of a call's keyword arguments, in order."""
    return [a.value for a in call.args if a.keyword is not None]


def branches(e: Node) -> tuple[Node, Node] | None:
    """``(then, else)`` values of a conditional expression ``a if c else b``."""
    return (e.body, e.orelse) if type(e) is cst.IfExp else None


def is_slice(e: Node) -> bool:
    return type(e) is cst.Slice


def subscripted(e: Node) -> Node:
    """The ``x`` of ``x[...]``."""
    assert type(e) is cst.Subscript
    return e.value


def subscript_pair(e: Node) -> tuple[Node, Node] | None:
    """The two index parts of ``x[a, b]``: ``cst.Slice`` for ``:``, else the index value."""
    if type(e) is cst.Subscript and len(e.slice) == 2:
        parts = []
        for el in e.slice:
            parts.append(el.slice.value if type(el.slice) is cst.Index else el.slice)
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
        args = positional(self.node)
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
        self.memo: dict[str, object] = {}  # views derived by shared predicates, computed once
        self._closures: dict[tuple, tuple] = {}  # see `closure`
        self.ok = syntax is not None
        if syntax is None:
            return
        helpers = list(getattr(syntax, "helpers", ()) or ())
        self._pos = _Joined([syntax.positions] + [pos for _, pos in helpers]) if helpers else syntax.positions
        self._branch: tuple[tuple[int, int], ...] = ()
        self._body(syntax.node.body, ())
        self._inline(helpers)

    def _inline(self, helpers) -> None:
        """Device helpers the kernel calls (``KernelFacts.folded``), walked as if inlined:
        each parameter is defined as what the first call site passes, and the helper's
        statements sit in the loops around that call (lines stay the helper's own)."""
        seen: set[str] = set()
        for node, _ in helpers:
            name = node.name.value
            site = next((c for c in self.calls if c.name == name), None)
            if site is None or name in seen:
                continue
            seen.add(name)
            params = [p.name.value for p in node.params.params]
            bound = dict(zip(params, positional(site.node)))
            bound.update({a.keyword.value: a.value for a in site.node.args
                          if a.keyword is not None and a.keyword.value in params})
            for param, value in bound.items():
                if not (isinstance(value, cst.Name) and value.value == param):
                    self.defs.setdefault(param, []).append(Def(param, value, site.line, site.loops))
            self._branch = site.branch
            self._body(node.body, site.loops)
            self._branch = ()

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
        inside that loop (what is recomputed each iteration).

        Many conditions ask for the closure of the same address or mask: each answer is
        kept (with the nodes it was asked of, so their ids stay theirs) and handed out as
        fresh copies, which callers may change."""
        key = (id(expr), id(within), hops, follow_aug)
        kept = self._closures.get(key)
        if kept is None:
            kept = self._closures[key] = (expr, within, *self._closure(expr, within, hops, follow_aug))
        return set(kept[2]), list(kept[3])

    def _closure(self, expr: Node, within: LoopInfo | None, hops: int,
                 follow_aug: bool) -> tuple[set[str], list[Node]]:
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
                    nxt |= _memo("names", d.value, _names_in)  # read only: no copy needed
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


class _Joined:
    """The positions of a kernel and of the helpers inlined into its flow: each node's
    lines and text come from the tree it belongs to."""

    def __init__(self, parts: list) -> None:
        self.parts = parts

    def _of(self, node: Node):
        key = id(node)
        for p in self.parts:
            if key in p.spans:
                return p
        return self.parts[0]

    def line(self, node: Node) -> int:
        return self._of(node).line(node)

    def last_line(self, node: Node) -> int:
        return self._of(node).last_line(node)

    def source(self, node: Node) -> str:
        return self._of(node).source(node)


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
    kernels in the process that parsed them). That source holds the kernel alone, so such a
    view does not inline its device helpers (the facts still hold their folded calls)."""
    syntax = k.syntax
    if syntax is None:
        syntax = k.syntax = _reparse(k)
    if syntax.flow is None:
        syntax.flow = Flow(syntax)
    return syntax.flow


def _reparse(k):
    # the rest of the Triton extractor: 18 ms beyond libcst; only facts read back without
    # their tree (the cache, the store) are parsed again
    from skel.kernels.triton import ParseError, extract_file

    try:
        found = extract_file(textwrap.dedent(k.source), k.path, helpers=True)
    except ParseError:
        return None
    for other in found:
        if other.name == k.name and other.syntax is not None:
            other.syntax.positions.offset += k.line_start - 1  # the snippet starts at line_start
            return other.syntax
    return None


# --- queries over expressions (the predicates skeletons share build on these) -----------


def broadcast_axes(exprs: list[Node]) -> set[str]:
    """{"col", "row"} for `x[:, None]` (a column vector) and `x[None, :]` (a row)."""
    out: set[str] = set()
    for e in exprs:
        out |= _memo("axes", e, _axes)
    return out


def _axes(e: Node) -> frozenset[str]:
    out: set[str] = set()
    for n in walk(e):
        pair = subscript_pair(n)
        if pair is None:
            continue
        a, b = pair
        if isinstance(a, cst.Slice) and is_none(b):
            out.add("col")
        elif is_none(a) and isinstance(b, cst.Slice):
            out.add("row")
    return frozenset(out)


def has_call(exprs: list[Node], *names: str) -> bool:
    return any(not _memo("call-names", e, _call_names).isdisjoint(names) for e in exprs)


def _call_names(expr: Node) -> frozenset[str]:
    # has_call asks the same expressions again and again (every fixpoint sweep over a
    # kernel's definitions): their call names are kept per node, like their calls
    return frozenset(call_name(c) for c in _memo("calls", expr, _calls_in))


def contains_call(expr: Node, node: cst.Call) -> bool:
    return any(c is node for c in calls_in(expr))
