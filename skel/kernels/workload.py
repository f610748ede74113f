"""The sizes a kernel runs at: what decides whether a technique pays for *this* kernel.

A technique's conditions say whether it *can* be applied; whether it *pays* depends on the
sizes: int64 offsets matter only when some offset can pass 2**31, several rows per program
only when rows are short and many, a persistent grid only when programs far outnumber the
SMs. Those sizes come from, in order of trust (a later source never overrides an earlier
one):

1. ``--shape NAME=VALUE`` flags (``Workload.parse``);
2. a workload file (``--workload FILE``): JSON ``{"NAME": VALUE}``, or a Python file read
   *statically* — never run — for its module-level integer constants and the tensors its
   ``get_inputs()`` builds (a KernelBench problem: ``batch_size = 16``, ``dim = 16384``,
   ``return [torch.randn(batch_size, dim)]``);
3. the repository's own tests and benchmarks that call the kernel, read statically
   (``skel.kernels.callers``): the largest run they make, its ``origin`` the call site
   (``tests/test_rmsnorm.py:42``);
4. literals at the kernel's own launches (``BLOCK_SIZE=1024``) and the module's integer
   constants.

NAME is a kernel parameter (a scalar ``n_cols=4096``, or a pointer and its tensor's shape
``x_ptr=8192x4096``) or one of the quantities techniques reason about: ``rows``, ``cols``
(a row-wise kernel's row count and width), ``programs`` (the grid's size), ``elements``
(the largest tensor the kernel indexes) and ``sms`` (the target's SM count; default the
H100/H200's 132). A VALUE is an integer, a product (``8192*152064``) or a shape
(``8192x152064``, its elements the product).

What is not known stays unknown: every question here answers ``None`` then, and a
technique whose payoff needs it becomes a *conditional* suggestion naming the flag to give.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from skel.errors import UsageError

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

#: SMs of the default target (H100 SXM and H200: 132)
DEFAULT_SMS = 132
#: the quantities a --shape may name besides the kernel's parameters
QUANTITIES = ("rows", "cols", "programs", "elements", "sms")
INT32_LIMIT = 2**31
_VALUE = re.compile(r"^\s*\d+(\s*[x*]\s*\d+)*\s*$")
#: a workload file larger than this is not a workload description
_MAX_FILE_BYTES = 1 << 20


@dataclass
class Workload:
    """Sizes by name: scalars in ``sizes``, tensor shapes in ``shapes``; ``origin`` says
    where each came from (for the reader: "--shape", "workload.py", "launch at line 88")."""

    sizes: dict[str, int] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    # shapes with no name (the tensors a KernelBench problem's get_inputs builds)
    inputs: list[tuple[int, ...]] = field(default_factory=list)

    @classmethod
    def parse(cls, items: tuple[str, ...] | list[str], origin: str = "--shape") -> Workload:
        """``NAME=VALUE`` items (the CLI's repeated ``--shape``). Raises UsageError on a
        malformed one, naming it."""
        wl = cls()
        for item in items:
            name, sep, value = item.partition("=")
            name = name.strip()
            if not sep or not name.isidentifier() or not _VALUE.match(value):
                raise UsageError(f"--shape {item!r}: expected NAME=VALUE, VALUE an integer, a product (8192*4096) "
                                 "or a shape (8192x4096)")
            wl._put(name, value, origin)
        return wl

    @classmethod
    def read(cls, path: str | Path) -> Workload:
        """A workload file: JSON (an object of NAME: VALUE, VALUE a number, a string as for
        --shape, or a list of dimensions) or a Python file read statically. Raises
        UsageError with the reason when it cannot be read."""
        p = Path(path)
        try:
            if not p.is_file():
                raise UsageError(f"--workload {p}: no such file")
            data = p.read_bytes()
            if len(data) > _MAX_FILE_BYTES:
                raise UsageError(f"--workload {p}: too large for a workload description (over 1 MiB)")
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"--workload {p}: not UTF-8 (byte {exc.start})") from exc
        except OSError as exc:
            raise UsageError(f"--workload {p}: unreadable: {exc.strerror or exc}") from exc
        wl = cls()
        if p.suffix == ".json":
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise UsageError(f"--workload {p}: not JSON: {exc}") from exc
            if not isinstance(obj, dict):
                raise UsageError(f"--workload {p}: expected a JSON object of NAME: VALUE")
            for name, value in obj.items():
                if isinstance(value, list):
                    value = "x".join(str(v) for v in value)
                if not (isinstance(name, str) and name.isidentifier() and _VALUE.match(str(value))):
                    raise UsageError(f"--workload {p}: {name!r}: {value!r} is not a size or a shape")
                wl._put(name, str(value), p.name)
            return wl
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            raise UsageError(f"--workload {p}: not JSON nor Python that parses (line {exc.lineno})") from exc
        consts = _module_ints(tree)
        for name, v in consts.items():
            wl.sizes.setdefault(name, v)
            wl.origin.setdefault(name, p.name)
        wl.inputs = _input_shapes(tree, consts)
        return wl

    def _put(self, name: str, value: str, origin: str) -> None:
        dims = tuple(int(d) for d in re.split(r"\s*[x]\s*", value.strip()) if d) if "x" in value else ()
        if dims:
            self.shapes[name] = dims
        else:
            self.sizes[name] = math.prod(int(d) for d in value.split("*"))
        self.origin[name] = origin

    def merged(self, other: Workload) -> Workload:
        """This workload with what ``other`` adds (``self`` wins where both know a name)."""
        out = Workload(dict(other.sizes), dict(other.shapes), dict(other.origin), list(other.inputs))
        out.sizes.update(self.sizes)
        out.shapes.update(self.shapes)
        out.origin.update(self.origin)
        out.inputs = self.inputs + [s for s in other.inputs if s not in self.inputs]
        return out

    def __bool__(self) -> bool:
        return bool(self.sizes or self.shapes or self.inputs)

    # --- questions techniques ask ------------------------------------------------------

    def size(self, name: str) -> int | None:
        if name in self.sizes:
            return self.sizes[name]
        if name in self.shapes:
            return math.prod(self.shapes[name])
        return None

    @property
    def sms(self) -> int:
        return self.sizes.get("sms", DEFAULT_SMS)

    def where(self, name: str) -> str:
        return self.origin.get(name, "")

    def largest_elements(self, kf: KernelFacts | None = None) -> tuple[int | None, str]:
        """The most elements any tensor the kernel indexes holds, and its name: bounds every
        in-bounds linear offset. None when no tensor's size is known."""
        best: tuple[int | None, str] = (None, "")
        pointers = {p.name for p in kf.params if not p.constexpr} if kf is not None else set()
        candidates = [(math.prod(s), n) for n, s in self.shapes.items() if not pointers or n in pointers
                      or n == "elements"]
        candidates += [(math.prod(s), "an input") for s in self.inputs]
        if "elements" in self.sizes:
            candidates.append((self.sizes["elements"], "elements"))
        for n, name in candidates:
            if best[0] is None or n > best[0]:
                best = (n, name)
        return best

    def all_tensors_known(self, kf: KernelFacts) -> bool:
        """Every pointer parameter of the kernel has a known shape (or an explicit bound on
        the largest tensor was given): then "no offset passes 2**31" can be said."""
        if "elements" in self.sizes or "elements" in self.shapes:
            return True
        pointers = [p.name for p in kf.params if not p.constexpr and _looks_pointer(p.name, p.annotation)]
        return bool(pointers) and all(n in self.shapes for n in pointers)

    def describe(self) -> str:
        parts = [f"{n}={v}" for n, v in sorted(self.sizes.items())]
        parts += [f"{n}={'x'.join(map(str, s))}" for n, s in sorted(self.shapes.items())]
        parts += ["input " + "x".join(map(str, s)) for s in self.inputs]
        return ", ".join(parts)


def _looks_pointer(name: str, annotation: str) -> bool:
    """A parameter that is a tensor (by Triton's conventions: `x_ptr`, `X`, `out`, an
    annotation naming a pointer): integers named like sizes and strides are not."""
    if "pointer" in annotation or "ptr" in annotation.lower():
        return True
    if re.search(r"(?i)(^|_)(stride|n|num|size|len|dim|eps|scale|seed|offset|count)s?($|_)", name):
        return False
    return bool(re.search(r"(?i)ptr$|^[A-Z]$|^(x|y|out|output|input|weight|bias|q|k|v|o)$", name))


def from_launches(kf: KernelFacts) -> Workload:
    """Integer literals the kernel's own launches pass by keyword (`BLOCK_SIZE=1024`), and
    its module's integer constants: the lowest-trust source."""
    wl = Workload()
    for name, value in (getattr(kf, "module_constants", None) or {}).items():
        if isinstance(value, str) and value.strip().isdigit():
            wl.sizes.setdefault(name, int(value))
            wl.origin.setdefault(name, "module constant")
    for launch in kf.launches:
        for name, value in launch.kwargs.items():
            if value.strip().isdigit() and name not in _LAUNCH_OPTIONS:
                wl.sizes[name] = int(value)
                wl.origin[name] = f"launch at line {launch.line}"
    return wl


def _module_ints(tree: ast.Module) -> dict[str, int]:
    """Module-level `NAME = <integer expression of earlier constants>`."""
    out: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = _int_of(node.value, out)
            if v is not None:
                out[node.targets[0].id] = v
    return out


def _int_of(node: ast.expr, env: dict[str, int]) -> int | None:
    """The value of a small integer expression (literals, known names, + - * // **), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.BinOp):
        a, b = _int_of(node.left, env), _int_of(node.right, env)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, ast.FloorDiv) and b:
            return a // b
        if isinstance(node.op, ast.Pow) and 0 <= b <= 64:
            return a ** b
    return None


#: launch keywords that are compiler options, not sizes
_LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu", "matrix_instr_nonkdim",
                             "kpack", "enable_fp_fusion", "launch_pdl"})

_TENSOR_MAKERS = {"randn", "rand", "empty", "zeros", "ones", "randint", "full", "randn_like"}


def _input_shapes(tree: ast.Module, consts: dict[str, int]) -> list[tuple[int, ...]]:
    """Shapes of the tensors ``get_inputs()`` builds with torch.randn/rand/empty/zeros/ones
    (dimensions from literals and module constants)."""
    shapes: list[tuple[int, ...]] = []
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name == "get_inputs"):
            continue
        env = dict(consts)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name):
                v = _int_of(sub.value, env)
                if v is not None:
                    env[sub.targets[0].id] = v
        for sub in ast.walk(node):
            if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr in _TENSOR_MAKERS):
                continue
            args: Sequence[ast.expr] = list(sub.args)
            if sub.func.attr == "randint":
                args = [a for a in args if isinstance(a, (ast.Tuple, ast.List))][:1]
            if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
                args = list(args[0].elts)
            if sub.func.attr == "full" and args and isinstance(args[0], (ast.Tuple, ast.List)):
                args = list(args[0].elts)
            dims = [_int_of(a, env) for a in args]
            if dims and all(d is not None and d > 0 for d in dims):
                shapes.append(tuple(d for d in dims if d is not None))
    return shapes
