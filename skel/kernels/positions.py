"""Line numbers and source text for the nodes of a libcst tree, from one code-generation
pass.

libcst nodes carry no positions. Its ``PositionProvider`` computes them by generating the
code again while splitting every token on newlines and building a position object per
node, which costs several times the parse. We hook the same code-generation callbacks but
only keep a running character offset per node (two integers); lines are derived on demand
from the generated text by bisecting its newline offsets, and a node's source text is a
slice of that text. The ranges are exactly libcst's (syntactic positions, the same hooks),
which a test checks against ``PositionProvider`` on real kernels.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate

import libcst as cst
from libcst._nodes.internal import CodegenState  # the codegen hooks PositionProvider uses

_NEWLINE = re.compile(r"\r\n?|\n")


class _OffsetState(CodegenState):
    """Code generation that records each node's (start, end) position.

    Positions are counted in tokens (the number generated before), not characters: then a
    token is recorded by ``list.append`` itself, with no Python call per token (there are
    millions over a package), and :class:`Positions` turns the few it is asked about into
    character offsets."""

    def __init__(self, module_like: cst.Module) -> None:
        super().__init__(default_indent=module_like.default_indent,
                         default_newline=module_like.default_newline)
        self.add_token = self.tokens.append  # type: ignore[method-assign, assignment]
        # keyed by id(node): libcst nodes hash in Python, ids are free (the tree outlives us).
        # A node's line comes from its syntactic range when libcst records one (inside its
        # parentheses and owned whitespace), else from its span, as PositionProvider does.
        self.ranges: dict[int, tuple[int, int]] = {}  # syntactic
        self.spans: dict[int, tuple[int, int]] = {}  # with owned parens and whitespace
        self._stack: list[int] = []
        self._open: list[tuple] = []  # syntactic ranges not yet closed (see _Syntactic)
        self._syntactic = _Syntactic(self)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append(len(self.tokens))

    def after_codegen(self, node: cst.CSTNode) -> None:
        self.spans[id(node)] = (self._stack.pop(), len(self.tokens))

    def range_of(self, node: cst.CSTNode) -> tuple[int, int]:
        key = id(node)
        return self.ranges.get(key) or self.spans[key]

    def record_syntactic_position(  # type: ignore[override]  # any context manager does
            self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
            end_node: cst.CSTNode | None = None) -> _Syntactic:
        self._open.append((node, start_node, end_node, len(self.tokens)))
        return self._syntactic


class _Syntactic:
    """The context libcst opens around a node's own tokens (parentheses and owned
    whitespace outside it). A plain class (a generator-based context manager costs several
    times more), and one per state: ranges nest, so the one closing is the latest opened."""

    __slots__ = ("state",)

    def __init__(self, state: _OffsetState) -> None:
        self.state = state

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        state = self.state
        node, start_node, end_node, start = state._open.pop()
        end = len(state.tokens)
        if start_node is not None:
            start = state.range_of(start_node)[0]
        if end_node is not None:
            end = state.range_of(end_node)[1]
        state.ranges[id(node)] = (start, end)


class Positions:
    """Where each node of one generated subtree sits: lines (1-based, shifted by
    ``offset`` so they match the file) and the node's source text."""

    def __init__(self, node: cst.CSTNode, module_like: cst.Module, offset: int = 0) -> None:
        state = _OffsetState(module_like)
        node._codegen(state)
        self.text = "".join(state.tokens)
        self.ranges = state.ranges  # in tokens: see _OffsetState
        self.spans = state.spans
        self.offset = offset
        self._newlines = [m.end() for m in _NEWLINE.finditer(self.text)]
        # the character offset at which each token starts (and the text's end)
        self._chars = list(accumulate(map(len, state.tokens), initial=0))
        state._syntactic.state = None  # type: ignore[assignment]  # a cycle: refcounting frees the state now

    def _range(self, node: cst.CSTNode) -> tuple[int, int]:
        key = id(node)
        start, end = self.ranges.get(key) or self.spans[key]
        return self._chars[start], self._chars[end]

    def _line_at(self, char: int) -> int:
        return bisect_right(self._newlines, char) + 1 + self.offset

    def line(self, node: cst.CSTNode) -> int:
        return self._line_at(self._range(node)[0])

    def end_line(self, node: cst.CSTNode) -> int:
        return self._line_at(self._range(node)[1])

    def last_line(self, node: cst.CSTNode) -> int:
        """Line of the node's last character (``ast``'s ``end_lineno``)."""
        start, end = self._range(node)
        body = self.text[start:end].rstrip()
        return self._line_at(start + len(body) - 1) if body else self._line_at(start)

    def source(self, node: cst.CSTNode) -> str:
        """The node's code as written, with the parentheses, whitespace and comments it
        owns (what ``Module.code_for_node`` gives)."""
        start, end = self.spans[id(node)]
        return self.text[self._chars[start]:self._chars[end]]
