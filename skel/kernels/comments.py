"""Comments and docstrings of a Python file, with their lines, from one pass over its lines.

Authors write down what they ruled out ("num_stages > 1 miscompiles on MI300", "do not
autotune: the kernel updates in place", "TMA is slower for these shapes"); the skeletons
read those notes to drop a suggestion the authors already rejected. The scan is a line
scanner, not a tokenizer: it tracks triple-quoted strings across lines and quotes within a
line, which is all a comment or a docstring needs, at a fraction of a tokenizer's cost on
large files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# characters kept of one note: a module's header comment can run to a page, and the line that
# rules a technique out is often its last ("Kernels aren't autotuned -- the decode-shape
# workload is too small", after a table of shapes in sglang's LoRA kernels)
_MAX_TEXT = 2000
_DOC_START = re.compile(r"""^[rRuUbBfF]{0,2}("""+'"""'+r"""|''')""")


@dataclass(frozen=True)
class Note:
    """A comment block (consecutive ``#`` lines), a trailing comment or a docstring."""

    line: int  # first line
    end: int  # last line
    text: str
    indent: int  # column of its first character: 0 for module-level notes


def _comment_start(line: str) -> int:
    """Index of a ``#`` that starts a comment (outside single-line string literals), or -1."""
    if "#" not in line:
        return -1
    quote = ""
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return i
        i += 1
    return -1


def notes_of(source: str) -> list[Note]:
    """Every comment block and statement-level string (docstring) of ``source``."""
    out: list[Note] = []
    lines = source.splitlines()
    closing = ""  # the triple quote that ends the string we are inside
    record = False  # that string is a docstring (recorded), not a value
    start, indent, buf = 0, 0, []  # the open docstring or comment block
    block: list[str] = []
    block_start = block_end = block_indent = 0

    def flush_block() -> None:
        nonlocal block
        if block:
            out.append(Note(block_start, block_end, " ".join(block)[:_MAX_TEXT], block_indent))
            block = []

    for n, line in enumerate(lines, 1):
        if closing:
            j = line.find(closing)
            if j < 0:
                if record:
                    buf.append(line.strip())
                continue
            if record:
                buf.append(line[:j].strip())
                out.append(Note(start, n, " ".join(x for x in buf if x)[:_MAX_TEXT], indent))
            closing, record = "", False
            line = " " * (j + 3) + line[j + 3:]  # what follows the string on its last line
            if not line.strip():
                continue
        stripped = line.lstrip()
        col = len(line) - len(stripped)
        if stripped.startswith("#"):
            if block and n == block_end + 1 and col == block_indent:
                block.append(stripped.lstrip("#").strip())
                block_end = n
            else:
                flush_block()
                block, block_start, block_end, block_indent = [stripped.lstrip("#").strip()], n, n, col
            continue
        flush_block()
        m = _DOC_START.match(stripped)
        if m:  # a string statement: a docstring
            q = m.group(1)
            body = stripped[m.end():]
            k = body.find(q)
            if k >= 0:
                out.append(Note(n, n, body[:k].strip()[:_MAX_TEXT], col))
                continue
            closing, record, start, indent, buf = q, True, n, col, [body.strip()]
            continue
        # a triple-quoted value opened on this line and left open: skip its lines
        for q in ('"""', "'''"):
            if line.count(q) % 2 == 1:
                closing, record = q, False
                line = line[:line.find(q)]
                break
        c = _comment_start(line)
        if c >= 0:
            out.append(Note(n, n, line[c + 1:].strip()[:_MAX_TEXT], col))
    flush_block()
    return [x for x in out if x.text]


def block_end(lines: list[str], def_line: int) -> int:
    """Last line of the function or class whose ``def`` is at ``def_line`` (1-based): the
    line before the next non-blank, non-comment line indented no deeper than the ``def``."""
    head = lines[def_line - 1]
    depth = len(head) - len(head.lstrip())
    last = def_line
    for n in range(def_line + 1, len(lines) + 1):
        text = lines[n - 1]
        stripped = text.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        if len(text) - len(stripped) <= depth and not stripped.startswith((")", "]", "}")):
            break
        last = n
    return last
