"""How the parts of one suggestion are worded, the same in every output format: the
template as a diff, a why-line's detail and lines, and the evidence, verification and
hand-checked lines.

The formats (render.py: text, markdown, JSON; prompt.py: the budgeted block; sarif.py:
code scanning) all import from here, and render.py dispatches to the other two.
"""

from __future__ import annotations

import difflib
import re

from skel.retriever.suggest import Suggestion


def template_diff(s: Suggestion) -> str:
    """The before → after template as a unified diff: the change, not two copies."""
    lines = difflib.unified_diff(s.before.splitlines(), s.after.splitlines(), "before", "after",
                                 lineterm="", n=2)
    return "\n".join(list(lines)[2:])  # drop the ---/+++ header


_WHY_LINES = re.compile(r"^(?P<detail>.*?)(?: \(line (?P<lines>\d+(?:, \d+)*)\))?$", re.S)


def split_why(why: str) -> tuple[str, list[int]]:
    """A why-line's detail and its line numbers: ``Hit.__str__`` (skeletons.conditions)
    writes them as a trailing "(line 29, 30, 31)"; none when the fact has no line."""
    m = _WHY_LINES.match(why)
    assert m is not None  # the pattern matches any string
    return m["detail"], [int(n) for n in (m["lines"] or "").split(", ") if n]


def evidence_line(s: Suggestion) -> str:
    if not s.occurrences:
        line = "no mined kernel uses it yet"
    else:
        where = ", ".join(s.sources[:4])
        line = f"used by {s.occurrences} mined kernel{'s' if s.occurrences != 1 else ''} in {where}"
    return f"{line}; {s.history}" if s.history else line


def verified_line(s: Suggestion) -> str:
    """What the verification runs say, in one line ("validated: 1.42x on NVIDIA H200, Triton 3.6: 3 kernels")."""
    return f"{s.status}: {s.verification.line}"


def checked_line(s: Suggestion) -> str:
    """How often people judged this skeleton's suggestions right on real kernels, or ""."""
    return s.track_record["line"] if s.track_record else ""
