"""What the extractors must never be handed: sources a parser cannot survive.

libcst's native parser overflows its stack and kills the process (SIGSEGV, nothing on
stderr) on about 1,500 nested brackets; CPython itself refuses more than 200, so no
runnable kernel comes near. ``refusal`` is the cheap check run before any parse, in the
miner and in ``skel suggest`` alike: it says why a text is refused, or None. What slips
past it is contained elsewhere (the miner parses in worker processes whose death is a
skipped file; a RecursionError from a very long expression is caught by both callers).
"""

from __future__ import annotations

import ast
import signal
import threading
from contextlib import contextmanager
from itertools import accumulate
from typing import Iterator

#: larger sources are generated tables, not kernels; parsing one costs minutes and GBs
MAX_BYTES = 2 * 1024 * 1024
#: CPython's own limit on nested brackets (MAXLEVEL in its tokenizer)
MAX_NESTING = 200
#: a logical line longer than this is checked by CPython's parser first (libcst dies on
#: ~5,000 chained `lambda:` — 40,000 characters on one line — with no bracket in sight)
LONG_LINE = 2000
_DEPTH = {ord(c): d for c, d in zip("([{)]}", (1, 1, 1, -1, -1, -1))}
_KEEP = "([{)]}"


def bracket_depth(text: str) -> int:
    """The deepest bracket nesting in ``text``, strings and comments included (an
    over-estimate only for brackets inside strings, which real code does not stack 200 deep)."""
    only = "".join(c for c in text if c in _KEEP) if len(text) < 4096 else _strip(text)
    return max(accumulate(_DEPTH[ord(c)] for c in only), default=0)


def longest_line(text: str) -> int:
    """Length of the longest logical line (backslash continuations joined)."""
    return max(map(len, text.replace("\\\n", "").splitlines()), default=0)


def _strip(text: str) -> str:
    # bytes.translate with delete runs in C: far faster than a Python loop on 2 MB
    raw = text.encode("utf-8", "surrogatepass")
    return raw.translate(None, _DROP).decode("ascii")


_DROP = bytes(b for b in range(256) if chr(b) not in _KEEP)


def refusal(text: str, path: str, language: str) -> str | None:
    """Why ``text`` must not be parsed, or None when it is safe to hand to the extractor."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        return f"too large ({size // 1024} KiB > {MAX_BYTES // 1024} KiB)"
    if language != "triton":
        return None  # tree-sitter is iterative: 100,000 nested brackets parse fine
    depth = bracket_depth(text)
    if depth > MAX_NESTING:
        return f"too deeply nested ({depth} levels of brackets; Python allows {MAX_NESTING})"
    if longest_line(text) <= LONG_LINE:
        return None  # without brackets, only one very long (logical) line nests deep
    try:  # CPython's parser guards its stack: what it cannot hold, libcst must not try
        tree = compile(text, path, "exec", ast.PyCF_ONLY_AST)
    except SyntaxError as exc:
        if "too many nested" in str(exc) or "too complex" in str(exc):
            return f"too deeply nested ({exc.msg})"
        return None
    except (MemoryError, RecursionError):
        return "too deeply nested (beyond what Python's own parser holds)"
    except ValueError:
        return None  # NUL bytes: the extractor reports its own error
    # CPython 3.12's parser holds chains (`a + a + ...`, `x.a.a...`) thousands deep that
    # libcst's does not (a 9,000-term sum kills it; found by the fuzz run on Python 3.12)
    depth = ast_depth(tree, MAX_AST_DEPTH)
    if depth > MAX_AST_DEPTH:
        return f"too deeply nested (an expression over {MAX_AST_DEPTH} levels deep)"
    return None


#: deeper syntax trees are refused: libcst survives ~6,000 chained operators, no kernel nears 100
MAX_AST_DEPTH = 1000


def ast_depth(tree: ast.AST, stop: int) -> int:
    """The depth of ``tree``, walked without recursion; stops counting past ``stop``."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > stop:
                break
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


class TooSlow(BaseException):
    """The analysis of one source ran past its time limit. A BaseException, like
    KeyboardInterrupt: it arrives asynchronously, and the extractors' own catch-alls
    (one bad kernel never aborts a file) must not swallow it."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``TooSlow`` in this block after ``seconds`` of wall time. An analysis can be
    quadratic in a nesting no real kernel has (50,000 nested `if`s in a .cu file ran for
    hours): one file must not hang `skel suggest`. Works in the main thread (a signal
    timer); elsewhere, or with ``seconds`` <= 0, it does nothing. The miner uses it when it
    parses in its own process (one job); its parser workers are killed at their deadline."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(_signum, _frame):
        raise TooSlow(f"analysis took over {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
