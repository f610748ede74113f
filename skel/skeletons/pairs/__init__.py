"""Reading the runnable before → after pairs: ``catalog/<id>/example.py``, one per skeleton.

Each pair is a problem in skel's **harness format** (the same format ``skel verify``
accepts for a user's kernels, documented in the README) with two launchers, ``before`` and
``after``. The template that ``skel skeletons show`` and ``skel suggest`` display is *derived
from this file*, so a template shown is always one that ran:

- every top-level function or ``@triton.jit`` kernel whose name starts with ``before`` is the
  "before" side, every one starting with ``after`` the "after" side; in the template the
  prefix is dropped (``before_kernel`` and ``after_kernel`` both show as ``kernel``), so the
  diff between the two is the change the skeleton makes;
- a CUDA C++ skeleton keeps its two sides as strings, ``before_cuda = r"..."`` and
  ``after_cuda = r"..."``: the template shows the strings' text (the C++), and the
  harness around them, where there is one, compiles them (``torch.utils.cpp_extension``);
- everything else (inputs, reference, shared helpers) is harness and is not shown.

This package only *reads* the files (as text); importing one runs Triton and torch, which is
the verifier's business. No skeleton imports an example; CUDA pairs import ``pairs.cuda``.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CATALOG_DIR = Path(__file__).parent.parent / "catalog"
SIDES = ("before", "after")


def example_path(skeleton_id: str) -> Path:
    """``catalog/<id_with_underscores>/example.py``."""
    return CATALOG_DIR / skeleton_id.replace("-", "_") / "example.py"


def module_name(skeleton_id: str) -> str:
    """The name a pair is imported under: ``skel.skeletons.catalog.<id>.example``."""
    return f"skel.skeletons.catalog.{skeleton_id.replace('-', '_')}.example"


@dataclass(frozen=True)
class Template:
    """The shown template of one skeleton: each side's source (prefix dropped) and the diff."""

    before: str
    after: str
    path: Path

    def diff(self) -> str:
        lines = difflib.unified_diff(self.before.splitlines(), self.after.splitlines(), "before", "after",
                                     lineterm="", n=3)
        return "\n".join(lines)


def _short(name: str, side: str) -> str:
    """``before_kernel`` -> ``kernel``; the bare launcher ``before`` -> ``launch``."""
    return name[len(side):].lstrip("_") or "launch"


def _strip_prefix(src: str, side: str, names: list[str]) -> str:
    for name in names:
        src = re.sub(rf"\b{re.escape(name)}\b", _short(name, side), src)
    return src


def _realign_signature(chunk: list[str], def_at: int, body_at: int, shift: int) -> list[str]:
    """Continuation lines of a ``def`` aligned under its opening parenthesis move left by as
    much as the name shrinks when its prefix is dropped, so ``before_`` and ``after_`` sides
    line up and the diff shows only the technique."""
    if shift <= 0:
        return chunk
    indent = len(chunk[def_at]) - len(chunk[def_at].lstrip())
    out = list(chunk)
    for i in range(def_at + 1, min(body_at, len(out))):
        line = out[i]
        lead = len(line) - len(line.lstrip(" "))
        if lead > indent + 4 and line[:shift].strip() == "":  # aligned, not a hanging indent
            out[i] = line[shift:]
    return out


def _cuda_side(tree: ast.Module, side: str) -> str | None:
    """The C++ source of a CUDA example's side (``before_cuda = r"..."``), shown as
    it is; None for a Triton example."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == f"{side}_cuda"
                                                for t in node.targets) \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return node.value.value.strip("\n")
    return None


def _side(tree: ast.Module, lines: list[str], side: str) -> str:
    cuda = _cuda_side(tree, side)
    if cuda is not None:
        return cuda
    chunks: list[str] = []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.Assign)):
            name = node.name if isinstance(node, ast.FunctionDef) else \
                next((t.id for t in node.targets if isinstance(t, ast.Name)), "")
            if not name.startswith(side):
                continue
            start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
            chunk = lines[start - 1:node.end_lineno]
            if isinstance(node, ast.FunctionDef) and node.body:
                chunk = _realign_signature(chunk, node.lineno - start, node.body[0].lineno - start,
                                           len(name) - len(_short(name, side)))
            chunks.append("\n".join(chunk))
            names.append(name)
    # longest names first so `before_kernel_inner` is not half-rewritten by `before_kernel`
    return _strip_prefix("\n\n\n".join(chunks), side, sorted(names, key=len, reverse=True))


@lru_cache(maxsize=None)
def template(skeleton_id: str) -> Template | None:
    """The template derived from the skeleton's example, or None when it has no example."""
    path = example_path(skeleton_id)
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    lines = text.splitlines()
    before, after = (_side(tree, lines, side) for side in SIDES)
    return Template(before=before, after=after, path=path)
