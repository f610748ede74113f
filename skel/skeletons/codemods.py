"""Mechanical rewrites: a skeleton's technique applied to one kernel of a user's file (``skel apply``).

A skeleton whose template can be applied without judgement ships a codemod beside its rule:
``catalog/<id>/codemod.py`` exposes ::

    def apply(module: libcst.Module, kernel: str, facts: KernelFacts) -> libcst.Module

It returns the module with the technique applied to the ``@triton.jit`` function ``kernel``
(its launches too, where the technique lives there) and raises
``skel.errors.NothingToRewriteError`` when the kernel holds nothing it rewrites. The
kernel's function node in ``module`` *is* ``facts.syntax.node``, so the nodes of
``skel.kernels.flow.flow_of(facts)`` (calls, definitions, loop iterators) are nodes of
``module``: a codemod finds what to rewrite with the skeleton's own predicates and replaces
those nodes by identity.

This module holds what every codemod shares: reading the file (UTF-8 only), parsing it,
finding the kernel by name, refusing a kernel that already shows the technique (the
skeleton's own ``present`` condition, so ``skel apply`` and ``skel suggest`` agree), running
the codemod, and checking that the skeleton's detector sees the technique in the result.
The candidate is only a candidate: ``skel verify`` checks that it computes the same results.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import libcst as cst

from skel.errors import AlreadyPresentError, InputError, NoCodemodError, NoSuchKernelError, NothingToRewriteError, \
    SkeletonError
from skel.kernels.extract import extract, language_of
from skel.kernels.guard import MAX_BYTES, refusal
from skel.kernels.model import KernelFacts, ParseError
from skel.kernels.tree import parse_module
from skel.skeletons import registry


@dataclass
class Applied:
    """A candidate: ``source`` is the whole file with the technique applied to ``kernel``."""

    skeleton: str
    kernel: str
    path: str
    original: str
    source: str
    changed_lines: list[int] = field(default_factory=list)  # lines of ``source`` added or changed (1-based)

    def diff(self) -> str:
        """The change as a unified diff (original → candidate)."""
        return "".join(difflib.unified_diff(self.original.splitlines(keepends=True),
                                            self.source.splitlines(keepends=True),
                                            fromfile=self.path, tofile=f"{self.path} ({self.skeleton})"))


def read_source(path: str | Path) -> str:
    """The text of a kernel file. Raises InputError (missing, a folder, not a regular file,
    too large, binary, not UTF-8, unreadable)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.is_dir():
        raise InputError(f"{p}: is a directory (give the .py file holding the @triton.jit kernel)")
    if not p.is_file():
        raise InputError(f"{p}: not a regular file")
    try:
        with p.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{p}: unreadable: {exc.strerror or exc}") from exc
    if len(data) > MAX_BYTES:
        raise InputError(f"{p}: too large (over {MAX_BYTES // 1024} KiB; kernel files are smaller)")
    if b"\0" in data:
        raise InputError(f"{p}: binary (NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not UTF-8 (byte {exc.start}); skel apply reads and writes UTF-8 Python") from exc


def kernel_facts(source: str, path: str, kernel: str) -> KernelFacts:
    """The facts of the Triton kernel ``kernel`` in ``source``, with its parsed tree. Raises
    InputError (not Python, does not parse) or NoSuchKernelError."""
    if language_of(path) != "triton":
        raise InputError(f"{path}: skel apply rewrites Triton kernels in .py files, not CUDA C++")
    if reason := refusal(source, path, "triton"):
        raise InputError(f"{path}: cannot be rewritten: {reason}")
    try:
        kernels = {k.name: k for k in extract(source, path)}
        if kernel in kernels and kernels[kernel].syntax is not None:
            return kernels[kernel]
        helpers = [k.name for k in extract(source, path, helpers=True) if k.name not in kernels]
    except ParseError as exc:
        raise InputError(f"{path}: does not parse: {exc}") from exc
    except (RecursionError, MemoryError) as exc:
        raise InputError(f"{path}: cannot be analysed: an expression is too deeply nested") from exc
    if kernel in helpers:
        callers = [k.name for k in kernels.values() if kernel in k.folded]
        raise NoSuchKernelError(f"{path}: {kernel!r} is a @triton.jit device helper, not a launched kernel; "
                                f"apply to the kernel that calls it ({', '.join(callers) or 'none found'})")
    names = ", ".join(sorted(kernels)) or "none"
    raise NoSuchKernelError(f"{path}: no Triton kernel named {kernel!r} (found: {names})")


def _module_with(source: str, facts: KernelFacts) -> cst.Module:
    """``source`` parsed, with the kernel's function node swapped for ``facts.syntax.node``
    (the same code), so that the facts' data-flow nodes are the module's nodes."""
    kernel = facts.syntax.node if facts.syntax is not None else None
    if not isinstance(kernel, cst.FunctionDef):
        raise InputError(f"{facts.path}: {facts.name}: no parsed tree for the kernel")
    node: cst.FunctionDef = kernel
    module = parse_module(source)
    found: list[cst.FunctionDef] = []

    class _Find(cst.CSTVisitor):
        def visit_FunctionDef(self, f: cst.FunctionDef) -> bool:
            if f.name.value == facts.name and f.deep_equals(node):
                found.append(f)
            return True

    module.visit(_Find())
    if not found:  # the extractor and this parse disagree: never expected for the same text
        raise SkeletonError(f"{facts.path}: {facts.name}: the kernel's tree is not in the parsed file")
    return cast(cst.Module, module.deep_replace(found[0], node))


def changed_lines(before: str, after: str) -> list[int]:
    """Lines of ``after`` (1-based) that are new or changed relative to ``before``."""
    a, b = before.splitlines(), after.splitlines()
    out: list[int] = []
    for op, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op in ("replace", "insert"):
            out.extend(range(j1 + 1, j2 + 1))
    return out


def apply_source(skeleton_id: str, source: str, kernel: str, path: str = "<string>") -> Applied:
    """``skeleton_id``'s codemod applied to the kernel ``kernel`` of ``source``: the
    rewritten file, or an error saying why there is none.

    Raises NotFoundError (unknown skeleton), NoCodemodError (the skeleton has no codemod),
    InputError (not Triton, does not parse), NoSuchKernelError, AlreadyPresentError (the
    skeleton's detector already sees the technique in the kernel), NothingToRewriteError
    (the kernel has nothing the codemod rewrites). The result is checked: the skeleton's
    detector sees the technique in the rewritten kernel (else SkeletonError: a codemod bug)."""
    sk = registry.get(skeleton_id)
    mod = registry.codemod_of(skeleton_id)
    if mod is None:
        have = ", ".join(registry.with_codemod())
        raise NoCodemodError(f"skeleton {skeleton_id} has no mechanical codemod: apply its template by hand "
                             f"(`skel skeletons show {skeleton_id}`); skeletons with one: {have}")
    facts = kernel_facts(source, path, kernel)
    hits = sk.present.check(facts)
    if hits is not None:
        where = "; ".join(f"{h.detail}" + (f" (line {', '.join(map(str, h.lines))})" if h.lines else "")
                          for h in hits[:3])
        raise AlreadyPresentError(f"{path}: {kernel}: {skeleton_id} is already present: {where}")
    rewritten = mod.apply(_module_with(source, facts), kernel, facts)
    code = rewritten.code
    if code == source:
        raise NothingToRewriteError(f"{path}: {kernel}: the {skeleton_id} codemod found nothing to rewrite")
    after = kernel_facts(code, path, kernel)
    if sk.present.check(after) is None:
        raise SkeletonError(f"catalog/{skeleton_id.replace('-', '_')}/codemod.py rewrote {kernel} but the skeleton's "
                            "detector does not see the technique in the result (a bug in the codemod)")
    return Applied(skeleton_id, kernel, path, source, code, changed_lines(source, code))


def apply_file(skeleton_id: str, path: str | Path, kernel: str) -> Applied:
    """``apply_source`` on a file's text (read as UTF-8; see ``read_source``)."""
    registry.get(skeleton_id)  # an unknown id fails before the file is read
    return apply_source(skeleton_id, read_source(path), kernel, str(path))
