"""Cheap walks over libcst trees: children, descendants, dotted names, variable reads.

libcst's own visitor dispatch costs more than the parse itself (it calls hooks for every
field of every node). A plain walk over dataclass fields is several times cheaper and is
all skel needs: it never transforms a tree. Whitespace, parentheses and punctuation fields
are skipped: they hold no names, calls or literals.
"""

from __future__ import annotations

import dataclasses
import threading
import typing
from typing import Any

import libcst as cst

_SKIP_FIELDS = ("whitespace", "lpar", "rpar", "comma", "semicolon", "leading_lines",
                "lines_after", "header", "footer", "colon", "equal", "star", "dot",
                "operator", "newline", "indent", "asynchronous")
_FIELDS: dict[type, tuple[str, ...]] = {}
# `isinstance(x, cst.CSTNode)` goes through ABC machinery; walks ask it for every field of
# every node, so the answer is cached per type
_IS_NODE: dict[type, bool] = {}


def _is_node(t: type) -> bool:
    known = _IS_NODE.get(t)
    if known is None:
        known = _IS_NODE[t] = issubclass(t, cst.CSTNode)
    return known


def _text_field(f: dataclasses.Field) -> bool:
    """A field declared to hold text (``Name.value``, ``Arg.star``), never a node: leaving
    it out spares walks a lookup per name and literal, the most common nodes."""
    return f.type is str or typing.get_origin(f.type) is typing.Literal


_VALIDATE = cst.CSTNode.__post_init__  # the hook by which every node validates itself
_PARSING = threading.Lock()


def _unchecked(self: cst.CSTNode) -> None:
    return None


def parse_module(source: str) -> cst.Module:
    """``libcst.parse_module`` without the per-node validation. Every node libcst builds
    checks its own fields as it is constructed (whitespace against a pattern, operators
    against their operands); a tree the parser built from source is well formed by
    construction, as libcst's own comment on that hook says. On fla-core and
    liger-kernel's kernel files the checks are about a tenth of the parse
    (``benchmarks/performance/parse_validation.py``), and the tree is the same (a test compares).
    The hook is swapped for the parse only, under a lock, and always put back: a node
    another thread builds meanwhile skips the checks too, which changes nothing else."""
    with _PARSING:
        cst.CSTNode.__post_init__ = _unchecked  # type: ignore[method-assign]
        try:
            return cst.parse_module(source)
        finally:
            cst.CSTNode.__post_init__ = _VALIDATE  # type: ignore[method-assign]


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The node's children that can hold code, in field order."""
    t = type(node)
    names = _FIELDS.get(t)
    if names is None:
        names = _FIELDS[t] = tuple(
            f.name for f in dataclasses.fields(t) if not f.name.startswith(_SKIP_FIELDS) and not _text_field(f))
    out: list[cst.CSTNode] = []
    for n in names:
        v = getattr(node, n)
        vt = type(v)
        if vt is list or vt is tuple:
            out.extend(v)  # libcst declares every sequence field as one of nodes
        else:
            known = _IS_NODE.get(vt)
            if known is None:
                known = _is_node(vt)
            if known:
                out.append(v)
    return out


def descendants(node: cst.CSTNode, kind: type | tuple[type, ...]) -> list:
    """Every node of ``kind`` below ``node`` (and ``node`` itself), in source order."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    out, stack = [], [node]
    if not any(k.__subclasses__() for k in kinds):
        # concrete classes (`cst.Call`): an exact-type test says the same, without the slow
        # ABC instance check libcst's classes get
        while stack:
            n = stack.pop()
            if type(n) in kinds:
                out.append(n)
            kids = children(n)
            kids.reverse()
            stack.extend(kids)
        return out
    while stack:
        n = stack.pop()
        if isinstance(n, kind):
            out.append(n)
        kids = children(n)
        kids.reverse()
        stack.extend(kids)
    return out


def dotted(node: cst.CSTNode) -> str:
    """``a.b.c`` for Name/Attribute chains, "" otherwise."""
    n: Any = node  # Any: the exact-type tests below narrow what mypy cannot see
    t = type(n)  # exact types: libcst never subclasses these, and isinstance is slow
    if t is cst.Name:
        return n.value
    if t is cst.Attribute:
        base = dotted(n.value)
        return f"{base}.{n.attr.value}" if base else ""
    return ""


def name_reads(node: cst.CSTNode) -> list[cst.Name]:
    """Variable reads below ``node``: Names, but not the ``attr`` of ``a.attr``, the keyword
    of ``f(k=v)`` or a lambda's parameter names."""
    found: list[cst.Name] = []
    stack: list[Any] = [node]  # Any: the exact-type tests below narrow what mypy cannot see
    while stack:
        n = stack.pop()
        t = type(n)  # exact types, as in `dotted`
        if t is cst.Name:
            found.append(n)
        elif t is cst.Attribute:
            stack.append(n.value)
        elif t is cst.Arg:  # `mask=m`: the keyword is not a variable read
            stack.append(n.value)
        elif t is cst.Param:
            stack.extend(x for x in (n.default, n.annotation) if x is not None)
        else:
            stack.extend(children(n))
    return found


def call_args(call: cst.Call) -> list[cst.BaseExpression]:
    """The positional arguments' values (``*xs`` included, keywords and ``**kw`` not)."""
    return [a.value for a in call.args if a.keyword is None and a.star != "**"]


def keyword_arg(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None


class Walker:
    """Calls ``visit_<Type>`` (return False to skip children) and ``leave_<Type>``.

    The hooks are looked up once per (walker class, node type) and kept as plain functions
    on the class: kept per instance as bound methods they would tie the instance into a
    reference cycle, and everything it holds (a kernel's facts and tree) would then wait
    for the cyclic garbage collector instead of going as soon as it is dropped."""

    _hooks: dict[type, tuple[Any, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._hooks = {}

    def walk(self, node: cst.CSTNode) -> None:
        t = type(node)
        pair = self._hooks.get(t)
        if pair is None:
            cls, name = type(self), t.__name__
            pair = self._hooks[t] = (getattr(cls, "visit_" + name, None), getattr(cls, "leave_" + name, None))
        visit, leave = pair
        if visit is None or visit(self, node) is not False:
            for c in children(node):
                self.walk(c)
        if leave is not None:
            leave(self, node)


def walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node`` and everything below it, in source order (a list: no generator frame per
    node, and the data-flow view keeps it)."""
    out: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        n = stack.pop()
        out.append(n)
        kids = children(n)
        if kids:
            kids.reverse()
            stack.extend(kids)
    return out
