"""Small text-to-HTML helpers for pages generated from skeleton docstrings: paragraphs,
bullets, `code` and links, escaped first. No markdown library: the docstrings use only
these, and a reader must never run markup a mined repository wrote."""

from __future__ import annotations

import difflib
import html
import re

from markupsafe import Markup

_URL = re.compile(r"https?://[^\s<>()\"']+[^\s<>()\"'.,;:]")
_CODE = re.compile(r"`([^`]+)`")


def inline(text: str) -> Markup:
    """Escape, then `code` and bare URLs."""
    out = html.escape(text, quote=False)
    out = _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", out)
    out = _URL.sub(lambda m: f'<a href="{m.group(0)}">{m.group(0)}</a>', out)
    return Markup(out)


def blocks(text: str) -> Markup:
    """Paragraphs and "- " bullet lists (continuation lines indented)."""
    parts: list[str] = []
    para: list[str] = []
    items: list[list[str]] = []

    def flush_para() -> None:
        if para:
            parts.append(f"<p>{inline(' '.join(para))}</p>")
            para.clear()

    def flush_items() -> None:
        if items:
            parts.append("<ul>" + "".join(f"<li>{inline(' '.join(i))}</li>" for i in items) + "</ul>")
            items.clear()

    code: list[str] = []

    def flush_code() -> None:
        if code:
            body = html.escape("\n".join(c[4:] if c.startswith("    ") else c.lstrip() for c in code), quote=False)
            parts.append(f"<pre><code>{body}</code></pre>")
            code.clear()

    for raw in text.splitlines():
        line = raw.strip()
        # an indented block after a blank line (or another such line) is code, as in markdown
        if line and raw.startswith("    ") and (code or (not para and not items)):
            code.append(raw)
            continue
        flush_code()
        if not line:
            flush_para()
            flush_items()
        elif line.startswith(("- ", "* ")):
            flush_para()
            items.append([line[2:]])
        elif items and raw.startswith((" ", "\t")):
            items[-1].append(line)
        else:
            flush_items()
            para.append(line)
    flush_code()
    flush_para()
    flush_items()
    return Markup("\n".join(parts))


def diff(before: str, after: str, name: str = "kernel.py") -> Markup:
    """A unified diff of a template, as lines marked for colour (and for screen readers:
    each changed line says whether it was removed or added)."""
    rows = []
    lines = difflib.unified_diff(before.strip("\n").splitlines(), after.strip("\n").splitlines(),
                                 f"before/{name}", f"after/{name}", n=3, lineterm="")
    for line in lines:
        kind = ("meta" if line.startswith(("---", "+++", "@@")) else
                "add" if line.startswith("+") else "del" if line.startswith("-") else "ctx")
        label = {"add": '<span class="sr">added: </span>', "del": '<span class="sr">removed: </span>'}.get(kind, "")
        rows.append(f'<span class="d-{kind}">{label}{html.escape(line, quote=False)}</span>')
    # the spans are blocks (one line each, coloured to the edge): no newline between them
    return Markup("<pre class=\"diff\"><code>" + "".join(rows) + "</code></pre>")


def slug(name: str) -> str:
    """A file name for a source or skeleton page: lower case, [a-z0-9._-] only."""
    s = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-.")
    return s or "unnamed"
