"""Reads the inline expectations in fixture files.

A comment line directly above a kernel (above its decorators) says what must happen::

    # skel: match <id>   the skeleton must be suggested for this kernel
    # skel: ok <id>      the skeleton must NOT be suggested: neither a full match nor, unless
                         a `near` line says it is one, a near miss
    # skel: uses <id>    the miner must detect the technique as already present
    # skel: near <id>    a near miss: not a full match, but suggested below the matches,
                         naming the one (soft) precondition that is missing
    # skel: refine <id>  the technique is present but incomplete: a refine suggestion
    # skel: complete <id> the technique is present and complete: no refine suggestion

C++/CUDA fixtures write the same markers as ``// skel: ...`` comments, above the unit's
``template <...>`` line when it has one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from skel.kernels.extract import extract

MARKER = re.compile(r"^\s*(?:#|//)\s*skel:\s*(match|ok|uses|near|refine|complete)\s+([a-z0-9-]+)\s*$")


@dataclass(frozen=True)
class Expectation:
    path: str
    kernel: str
    line: int
    kind: str  # match | ok | uses | near | refine | complete
    skeleton_id: str

    def __str__(self) -> str:
        p = Path(self.path)  # `online_softmax/fixtures.py`: every fixtures file has the same name
        return f"{p.parent.name}/{p.name}:{self.line}:{self.kernel} {self.kind} {self.skeleton_id}"


def read(path: Path) -> list[Expectation]:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    out: list[Expectation] = []
    for k in extract(source, str(path)):
        i = k.line_start - 2  # the line above the first decorator
        while i >= 0 and (lines[i].strip().startswith(("#", "//")) or not lines[i].strip()):
            m = MARKER.match(lines[i])
            if m:
                out.append(Expectation(str(path), k.name, k.line_start, m.group(1), m.group(2)))
            if not lines[i].strip() and out and out[-1].kernel != k.name:
                break
            i -= 1
    return out


def kernels_by_name(path: Path) -> dict:
    return {k.name: k for k in extract(path.read_text(encoding="utf-8"), str(path))}
