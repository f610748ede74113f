"""Who calls a kernel in its repository, and the sizes they call it at — read, never run.

The workload model (``skel.kernels.workload``) takes sizes from ``--shape``, ``--workload``
and the literals at a kernel's own launches. A kernel in a repository is usually called,
somewhere, by a test or a benchmark with real sizes: ``torch.randn(bs, sl, hd)`` under
``@pytest.mark.parametrize("bs, sl, hd", [(2, 128, 512), ...])``. This module finds those
call sites and reads them *statically* (``ast``; nothing is imported or executed):

1. the repository: the folder above the kernel's file holding ``.git``,
   ``pyproject.toml`` or ``setup.py`` — or, in an installed package (``site-packages``),
   its top-level package folder (``repo_root``);
2. the files that may call it: tests (``is_test``: the miner's rule), benchmarks and
   examples, and the kernel's own file (its ``if __name__ == "__main__":`` block), those
   whose name holds the module's name first; at most ``MAX_FILES`` read, none over 1 MiB,
   ``.git``/``node_modules``/``build``/virtual environments pruned (``SKIP_DIRS``), and
   only those importing the kernel's module (``covers``: the miner's own test link) are
   parsed;
3. the entry points: the functions of the kernel's module that launch it
   (``kernel[grid](...)``) or call, to any depth, one that does, and the
   ``torch.autograd.Function`` classes whose ``forward`` does (called as ``Cls.apply``);
   a caller reaches them through what it imports from the module (``from pkg.ops import
   scale``, ``import pkg.ops as K``, or the jit kernel itself, launched in the test), the
   import statements read where they stand (a function importing the same name from
   another module does not count);
4. a small abstract interpreter follows each call site into the entry point and on to
   the launch with what is known: integer literals, module constants (``N = 2**16``), the
   largest value of every ``@pytest.mark.parametrize`` list and of a
   ``triton.testing.Benchmark``'s ``x_vals`` (the row with the largest product for several
   names at once: a row is a real run), literal loop lists, and tensor shapes through
   ``torch.randn/empty/zeros/...(dims)``, ``*_like``, ``.shape``, ``.view/.reshape`` (a
   ``-1`` solved), ``.size(i)``, ``.numel()``, ``triton.cdiv``; after an ``if`` a name keeps
   the larger of its two values, or the one that is known. At the launch, each kernel
   parameter gets the shape of the tensor passed for it (``x_ptr``) or its integer
   (``n_cols``), and a grid of known size gives ``programs``. Anything computed at run time
   (a fixture, an environment variable, a call outside the module) stays unknown, and a
   call into another module (an ``nn.Module`` wrapping the kernel's Function) is not
   followed.

Of every run found (one call site, at its largest parametrisation), the one with the
largest tensor is kept — a real run, not a mixture of maxima from different tests — and
becomes a ``Workload`` whose ``origin`` names the call site (``tests/test_k.py:42``). A
file that does not parse or is too large is skipped silently: one bad file never stops
``skel suggest``. The search stops after ``TIME_BUDGET_S`` with what it has (tens of
milliseconds a kernel file on liger-kernel's checkout, 156 candidate files read). Inside
an MCP server it never leaves the server's roots (``find(within=...)``). The files of
skel's own package (its catalog's examples) are never searched. The miner links tests to
kernels with the same rules (``is_test``, ``imports_of``, ``covers``).
"""

from __future__ import annotations

import ast
import math
import os
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from skel.kernels.workload import Workload

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

#: folders never entered (the miner's walk prunes the same)
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".tox", ".nox", ".venv", "venv",
             ".mypy_cache", ".pytest_cache", ".eggs", "build", "dist", "site-packages"}
TEST_FILE = re.compile(r"(^test_.*\.py$)|(.*_test\.py$)|(^conftest\.py$)")
#: at most this many candidate files are read, and none larger than MAX_FILE_BYTES
MAX_FILES = 200
MAX_FILE_BYTES = 1 << 20
#: the walk for candidates stops after this many folders (a monorepo is not read whole)
MAX_DIRS = 4000
#: the whole search stops after this many seconds, keeping what it found
TIME_BUDGET_S = 0.5
#: calls followed this many functions deep (test -> helper -> Function.apply -> launcher)
MAX_DEPTH = 5
#: a folder name or a file name part that marks a benchmark or an example
_CALLER_PART = re.compile(r"(?i)bench|example|perf|profil|demo|tutorial")
#: an origin this module writes: a file and a line ("tests/test_k.py:42")
ORIGIN = re.compile(r"^\S+\.py:\d+$")


# --- test files and their imports (shared with the miner) --------------------------------

def is_test(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return bool(TEST_FILE.match(name)) or "/tests/" in f"/{rel}" or "/test/" in f"/{rel}"


_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+\(?([^)#\n]*)|import\s+([\w., ]+))", re.M)


def imports_of(text: str) -> tuple[set[str], set[str]]:
    """(modules, names) imported by a file — a regex pass; tests rarely import oddly."""
    modules: set[str] = set()
    names: set[str] = set()
    for m in _IMPORT.finditer(text):
        if m.group(1):
            modules.add(m.group(1))
            for n in m.group(2).split(","):
                n = n.strip().split(" as ")[0].strip()
                if n:
                    names.add(n)
                    modules.add(f"{m.group(1)}.{n}")
        else:
            for n in m.group(3).split(","):
                n = n.strip().split(" as ")[0].strip()
                if n:
                    modules.add(n)
    return modules, names


def covers(module: str, entries: set[str], modules: set[str], names: set[str]) -> bool:
    """A file importing ``modules`` and ``names`` (``imports_of``) reaches the kernel module
    ``module``: it imports the module itself (by its full name or a dotted tail of it:
    ``ops.rms_norm`` in a checkout whose tests put ``src`` on the path), or imports one of
    its ``entries`` (launchers) from a parent package that re-exports it."""
    if any(_same(m, module) for m in modules):
        return True
    return bool(entries & names) and any(module.startswith(m + ".") for m in modules)


# --- the repository and its candidate files ----------------------------------------------

def repo_root(path: str | os.PathLike) -> tuple[Path, str] | None:
    """(the repository's root, the kernel module's dotted name in it), or None for a file
    in no repository. The root is the nearest folder above the file holding ``.git``,
    ``pyproject.toml`` or ``setup.py``; without one, the folder holding the file's
    top-level package (the highest folder with an ``__init__.py``); inside
    ``site-packages`` (an installed wheel) that package's own folder (its tests, if
    shipped, are inside it). The module name leaves out a leading ``src``/``python``/``lib``
    folder (``src/pkg/ops.py`` is ``pkg.ops``)."""
    p = Path(path).resolve()
    home = Path.home()
    top = None  # the highest folder holding an __init__.py
    for folder in list(p.parents)[:12]:
        if folder == home or folder == folder.parent:
            break
        if folder.name in ("site-packages", "dist-packages"):
            return (top, _dotted(p.relative_to(top.parent))) if top is not None else None
        if (folder / "__init__.py").is_file():
            top = folder
        if any((folder / marker).exists() for marker in (".git", "pyproject.toml", "setup.py")):
            return folder, _dotted(p.relative_to(top.parent if top is not None else folder))
    return (top.parent, _dotted(p.relative_to(top.parent))) if top is not None else None


def _dotted(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    if len(parts) > 1 and parts[0] in ("src", "python", "lib"):
        parts = parts[1:]
    return ".".join(parts)


def _wanted(rel: str) -> bool:
    return is_test(rel) or bool(_CALLER_PART.search(rel))


def candidate_files(root: Path, stem: str, deadline: float) -> list[str]:
    """Paths (relative to ``root``) of the files that may call a kernel of module ``stem``:
    tests, benchmarks and examples, those whose path names ``stem`` first; at most
    ``MAX_FILES``."""
    found: list[str] = []
    dirs_seen = 0
    cut = len(str(root)) + 1
    for folder, dirs, files in os.walk(root):
        dirs_seen += 1
        if dirs_seen > MAX_DIRS or time.perf_counter() > deadline:
            break
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".") and not d.endswith(
            ".egg-info"))
        rel_folder = folder[cut:].replace(os.sep, "/")
        for name in files:
            if name.endswith(".py"):
                rel = f"{rel_folder}/{name}" if rel_folder else name
                if _wanted(rel):
                    found.append(rel)
    found.sort(key=lambda rel: (stem not in rel.rsplit("/", 1)[-1], stem not in rel, rel))
    return found[:MAX_FILES]


# --- the abstract interpreter ------------------------------------------------------------

class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "?"


class _Null:
    """Python's ``None`` as a value: no tensor, but not an unknown one either (a test that
    passes ``w = None`` in one branch and a tensor in the other)."""

    __slots__ = ()


@dataclass(frozen=True)
class _Ref:
    """A name a caller imported from the kernel's module: one of its functions, classes or
    kernels (``fn``), or the module itself (``module``)."""

    name: str
    module: bool = False


UNK: Any = _Unknown()
NULL: Any = _Null()
#: a value is an int, a shape (a tuple of ints: a tensor, or a `.shape`), NULL or UNK
_MAKERS = {"randn", "rand", "empty", "zeros", "ones", "full", "normal", "empty_strided", "randint", "randperm",
           "arange"}
_LIKE = {"randn_like", "rand_like", "empty_like", "zeros_like", "ones_like", "full_like", "randint_like",
         "clone", "contiguous", "to", "float", "half", "bfloat16", "double", "cuda", "cpu", "detach",
         "requires_grad_", "type", "type_as", "abs", "exp", "neg", "sigmoid", "relu", "softmax", "log_softmax",
         "normal_", "uniform_", "fill_", "zero_", "copy_", "mul", "add", "sub", "div", "clamp", "pin_memory"}
_NEW = {"new_empty", "new_zeros", "new_ones", "new_full"}
#: launch keywords that are compiler options, not kernel parameters
_LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu",
                             "matrix_instr_nonkdim", "kpack", "enable_fp_fusion", "launch_pdl", "grid"})
_BIG = 1 << 62  # past this an integer is not a size (a seed, a mask): unknown


def _mag(v: Any) -> int:
    """How big a value is, to pick the largest: an int itself, a shape its elements."""
    if isinstance(v, bool):
        return 0
    if isinstance(v, int):
        return v
    if isinstance(v, tuple):
        return math.prod(v)
    return -1


def _ok(v: Any) -> Any:
    if isinstance(v, int) and not isinstance(v, bool):
        return v if abs(v) < _BIG else UNK
    if isinstance(v, tuple):
        return v if all(isinstance(d, int) and 0 <= d < _BIG for d in v) and math.prod(v) < _BIG else UNK
    return v


@dataclass
class Run:
    """One launch of a kernel reached from a call site: what each parameter got."""

    kernel: str
    origin: str  # the call site: "tests/test_k.py:42"
    sizes: dict[str, int] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    programs: int | None = None

    def key(self) -> tuple[int, int, int]:
        """Largest tensor, then all tensors, then the scalars: what "the largest run" means."""
        tensors = [math.prod(s) for s in self.shapes.values()]
        return (max(tensors, default=0), sum(tensors), len(self.sizes) + len(self.shapes))


@dataclass
class _Fn:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    rel: str  # the file it is in
    skip: int = 0  # leading parameters bound to nothing (`ctx` of an autograd forward)
    module: bool = False  # in the kernel's module (an entry point), not the caller's file
    reaches: bool = False  # (in the module) launches a kernel asked about, or calls what does


class _Interp:
    """Runs a caller file's functions over known sizes, inlining calls into the kernel's
    module and recording each launch of a kernel of ``kernels`` it reaches."""

    def __init__(self, kernels: dict[str, list[str]], module_fns: dict[str, _Fn], module_env: dict[str, Any],
                 deadline: float) -> None:
        self.kernels = kernels  # kernel name -> its parameter names, in order
        self.module_fns = module_fns
        self.module_env = module_env
        self.deadline = deadline
        self.runs: list[Run] = []
        self.entered = 0  # calls into the module followed
        self.local_fns: dict[str, _Fn] = {}
        self.rel = ""
        self.module = ""  # the kernel module's dotted name
        self.names: set[str] = set()  # the names a caller may import from it

    # statements
    def block(self, stmts: list[ast.stmt], env: dict[str, Any], ctx: _Ctx) -> None:
        for st in stmts:
            if time.perf_counter() > self.deadline:
                return
            if isinstance(st, (ast.Import, ast.ImportFrom)):
                if not ctx.in_module:
                    self.imports(st, env)
                continue
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(st, ast.Assign):
                self.calls(st.value, env, ctx)
                for t in st.targets:
                    self.bind(t, st.value, env)
            elif isinstance(st, ast.AnnAssign):
                if st.value is not None:
                    self.calls(st.value, env, ctx)
                    self.bind(st.target, st.value, env)
            elif isinstance(st, ast.AugAssign):
                self.calls(st.value, env, ctx)
                if isinstance(st.target, ast.Name):
                    env[st.target.id] = _ok(_binop(st.op, self.eval(st.target, env), self.eval(st.value, env)))
            elif isinstance(st, (ast.Expr, ast.Return)):
                if st.value is not None:
                    self.calls(st.value, env, ctx)
            elif isinstance(st, ast.If):
                self.calls(st.test, env, ctx)
                a, b = dict(env), dict(env)
                self.block(st.body, a, ctx)
                self.block(st.orelse, b, ctx)
                env.clear()
                env.update(_merge(a, b))
            elif isinstance(st, (ast.For, ast.AsyncFor)):
                self.calls(st.iter, env, ctx)
                self.bind_value(st.target, self.loop_value(st.iter, env), env)
                self.block(st.body, env, ctx)
                self.block(st.orelse, env, ctx)
            elif isinstance(st, ast.While):
                self.block(st.body, env, ctx)
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                for item in st.items:
                    self.calls(item.context_expr, env, ctx)
                self.block(st.body, env, ctx)
            elif isinstance(st, ast.Try):
                self.block(st.body, env, ctx)
                self.block(st.orelse, env, ctx)
                self.block(st.finalbody, env, ctx)

    def bind(self, target: ast.expr, value: ast.expr, env: dict[str, Any]) -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self.bind(t, v, env)
            return
        self.bind_value(target, self.eval(value, env), env)

    def bind_value(self, target: ast.expr, v: Any, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = v
        elif isinstance(target, (ast.Tuple, ast.List)):
            elts = target.elts
            if isinstance(v, tuple) and len(v) == len(elts) and not any(isinstance(e, ast.Starred) for e in elts):
                for t, d in zip(elts, v):
                    self.bind_value(t, d, env)
            else:
                for t in elts:
                    self.bind_value(t.value if isinstance(t, ast.Starred) else t, UNK, env)

    def loop_value(self, it: ast.expr, env: dict[str, Any]) -> Any:
        """The largest value a loop's target takes: over a literal list, or a `range`."""
        if isinstance(it, (ast.List, ast.Tuple, ast.Set)):
            vals = [self.eval(e, env) for e in it.elts]
            known = [v for v in vals if _mag(v) >= 0]
            return max(known, key=_mag) if known and len(known) == len(vals) else UNK
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and it.args:
            r = _range(self, it, env)
            return r[-1] if r else UNK
        v = self.eval(it, env)
        if isinstance(v, list) and v:
            return max(v, key=_mag)
        return UNK

    # calls: launches and entry points
    def calls(self, expr: ast.expr, env: dict[str, Any], ctx: _Ctx) -> None:
        for node in _walk_calls(expr):
            f = node.func
            if isinstance(f, ast.Subscript):
                name = self.kernel_at(f, env, ctx)
                if name:
                    self.launch(name, node, f.slice, env, ctx.origin or f"{self.rel}:{node.lineno}")
                continue
            fn = self.resolve(f, env, ctx)
            if fn is not None and (fn.reaches or not fn.module) and ctx.depth < MAX_DEPTH \
                    and id(fn.node) not in ctx.stack:
                self.inline(fn, node, env, ctx)

    def imports(self, st: ast.Import | ast.ImportFrom, env: dict[str, Any]) -> None:
        """Bind what an import statement brings: a name of the kernel's module (imported from
        it, or from a parent package that re-exports it) or the module itself becomes a
        reference; any other import hides an earlier one of the same name."""
        if isinstance(st, ast.ImportFrom):
            source = _absolute(self.rel, st.level, st.module or "")
            for a in st.names:
                local = a.asname or a.name
                if _same(f"{source}.{a.name}", self.module):
                    env[local] = _Ref(a.name, module=True)
                elif a.name in self.names and (_same(source, self.module) or self.module.startswith(source + ".")):
                    env[local] = _Ref(a.name)
                else:
                    env[local] = UNK
            return
        for a in st.names:
            if a.asname:
                env[a.asname] = _Ref(a.name, module=True) if _same(a.name, self.module) else UNK
            # `import pkg.ops` binds `pkg`: its calls are read by their dotted name (`resolve`)

    def resolve(self, f: ast.expr, env: dict[str, Any], ctx: _Ctx) -> _Fn | None:
        """The function a call enters: in the kernel's module, any function or method of it
        by name; in a caller's file, its own functions and what it imported from the module
        (``from pkg.ops import Fn as F``; ``import pkg.ops as K`` then ``K.fn``)."""
        if ctx.in_module:
            if isinstance(f, ast.Name):
                return self.module_fns.get(f.id)
            if isinstance(f, ast.Attribute):
                return self.module_fns.get(f"{_last_name(f.value)}.{f.attr}")
            return None
        if isinstance(f, ast.Name):
            ref = env.get(f.id)
            if isinstance(ref, _Ref) and not ref.module:
                return self.module_fns.get(ref.name)
            return self.local_fns.get(f.id) if f.id not in env else None
        if isinstance(f, ast.Attribute):
            ref = self.eval_ref(f.value, env)
            if ref is not None:
                return self.module_fns.get(f.attr if ref.module else f"{ref.name}.{f.attr}")
        return None

    def eval_ref(self, node: ast.expr, env: dict[str, Any]) -> _Ref | None:
        """The module or module name an expression stands for: a bound reference, or the
        module written out (`pkg.ops.fn` after `import pkg.ops`)."""
        if isinstance(node, ast.Name):
            ref = env.get(node.id)
            return ref if isinstance(ref, _Ref) else None
        dotted = _dotted_name(node)
        if dotted and _same(dotted, self.module):
            return _Ref(dotted, module=True)
        if isinstance(node, ast.Attribute):
            owner = self.eval_ref(node.value, env)
            if owner is not None and owner.module and node.attr in self.names:
                return _Ref(node.attr)
        return None

    def kernel_at(self, f: ast.Subscript, env: dict[str, Any], ctx: _Ctx) -> str:
        """The kernel a ``name[grid](...)`` launches, if one of ours: in the module by its
        name; in a caller's file as imported (`from pkg.ops import add_kernel`)."""
        if ctx.in_module:
            name = _last_name(f.value)
            return name if name in self.kernels else ""
        ref = self.eval_ref(f.value, env)
        return ref.name if ref is not None and not ref.module and ref.name in self.kernels else ""

    def inline(self, fn: _Fn, call: ast.Call, env: dict[str, Any], ctx: _Ctx) -> None:
        args = fn.node.args
        params = [a.arg for a in args.posonlyargs + args.args][fn.skip:]
        inner: dict[str, Any] = dict(self.module_env) if fn.module else dict(ctx.globals)
        defaults = (args.posonlyargs + args.args)[len(args.posonlyargs + args.args) - len(args.defaults):]
        home = self.module_env if fn.module else ctx.globals
        for param, default in zip(defaults, args.defaults):
            inner[param.arg] = self.eval(default, home)
        for param, kw_default in zip(args.kwonlyargs, args.kw_defaults):
            if kw_default is not None:
                inner[param.arg] = self.eval(kw_default, home)
        for i, a in enumerate(call.args):
            if isinstance(a, ast.Starred):
                for p in params[i:]:
                    inner[p] = UNK
                break
            if i < len(params):
                inner[params[i]] = self.eval(a, env)
        for kw in call.keywords:
            if kw.arg is None:  # **kwargs: whatever it holds is unknown
                for p in params:
                    inner.setdefault(p, UNK)
            else:
                inner[kw.arg] = self.eval(kw.value, env)
        origin = ctx.origin
        if fn.module and not origin:
            origin = f"{self.rel}:{call.lineno}"
            self.entered += 1
        sub = _Ctx(origin=origin, depth=ctx.depth + 1, stack=ctx.stack | {id(fn.node)},
                   globals=self.module_env if fn.module else ctx.globals, in_module=fn.module)
        self.block(fn.node.body, inner, sub)

    def launch(self, kernel: str, call: ast.Call, grid: ast.expr, env: dict[str, Any], origin: str) -> None:
        params = self.kernels[kernel]
        run = Run(kernel, origin)
        passed = [(params[i], a) for i, a in enumerate(call.args[:len(params)])]
        if any(isinstance(a, ast.Starred) for a in call.args):
            passed = passed[:next(i for i, a in enumerate(call.args) if isinstance(a, ast.Starred))]
        # a keyword literal (`BLOCK=1024`) is the launch literals' own (``workload.from_launches``)
        passed += [(kw.arg, kw.value) for kw in call.keywords
                   if kw.arg is not None and kw.arg not in _LAUNCH_OPTIONS and not isinstance(kw.value, ast.Constant)]
        told = False  # a value the caller's sizes decided (not a literal written at the launch)
        for name, a in passed:
            v = self.eval(a, env)
            _put(run, name, v)
            told = told or (_mag(v) >= 0 and not isinstance(a, ast.Constant))
        g = self.eval(grid, env)
        if isinstance(g, int) and not isinstance(g, bool) and g > 0:
            run.programs = g
        elif isinstance(g, tuple) and g:
            run.programs = math.prod(g)
        if told:
            self.runs.append(run)

    # expressions
    def eval(self, node: ast.expr, env: dict[str, Any]) -> Any:
        try:
            return _ok(self._eval(node, env))
        except (ArithmeticError, ValueError, TypeError, IndexError, RecursionError, OverflowError):
            return UNK

    def _eval(self, node: ast.expr, env: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            if node.value is None:
                return NULL
            return node.value if isinstance(node.value, int) and not isinstance(node.value, bool) else UNK
        if isinstance(node, ast.Name):
            return env.get(node.id, UNK)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.eval(node.operand, env)
            return -v if isinstance(v, int) else UNK
        if isinstance(node, ast.BinOp):
            return _binop(node.op, self.eval(node.left, env), self.eval(node.right, env))
        if isinstance(node, (ast.Tuple, ast.List)):
            dims: list[int] = []
            for e in node.elts:
                v = self.eval(e.value if isinstance(e, ast.Starred) else e, env)
                if isinstance(e, ast.Starred) and isinstance(v, tuple):
                    dims.extend(v)
                elif isinstance(v, int) and not isinstance(e, ast.Starred):
                    dims.append(v)
                else:
                    return self._list(node, env)
            return tuple(dims)
        if isinstance(node, ast.ListComp):
            return self._comp(node, env)
        if isinstance(node, ast.Subscript):
            base = self.eval(node.value, env)
            if isinstance(base, (tuple, list)):
                if isinstance(node.slice, ast.Slice):
                    lo = self.eval(node.slice.lower, env) if node.slice.lower else None
                    hi = self.eval(node.slice.upper, env) if node.slice.upper else None
                    if (lo is None or isinstance(lo, int)) and (hi is None or isinstance(hi, int)) \
                            and node.slice.step is None:
                        return base[lo:hi]
                    return UNK
                i = self.eval(node.slice, env)
                return base[i] if isinstance(i, int) else UNK
            return UNK
        if isinstance(node, ast.Attribute):
            base = self.eval(node.value, env)
            if isinstance(base, tuple):
                if node.attr in ("shape", "data"):
                    return base
                if node.attr in ("T", "mT") and len(base) >= 2:
                    return base[:-2] + (base[-1], base[-2])
                if node.attr == "ndim":
                    return len(base)
            return UNK
        if isinstance(node, ast.IfExp):  # both arms known: the larger; else unknown
            a, b = self.eval(node.body, env), self.eval(node.orelse, env)
            return _larger(a, b) if UNK not in (a, b) else UNK
        if isinstance(node, ast.Call):
            return self._call(node, env)
        return UNK

    def _list(self, node: ast.Tuple | ast.List, env: dict[str, Any]) -> Any:
        """A literal list of values that are not all integers (shapes: ``[(2, 8), (4, 16)]``)."""
        vals = [self.eval(e, env) for e in node.elts if not isinstance(e, ast.Starred)]
        if vals and len(vals) == len(node.elts) and all(_mag(v) >= 0 for v in vals):
            return list(vals)
        return UNK

    def _comp(self, node: ast.ListComp, env: dict[str, Any]) -> Any:
        """``[2**i for i in range(10, 16)]``: one generator over a range, no conditions."""
        if len(node.generators) != 1 or node.generators[0].ifs or not isinstance(node.generators[0].target, ast.Name):
            return UNK
        gen = node.generators[0]
        assert isinstance(gen.target, ast.Name)
        var = gen.target.id
        it = gen.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
            vals = self.eval(it, env)
            if not isinstance(vals, (tuple, list)):
                return UNK
        else:
            vals = _range(self, it, env)
        out = []
        for v in list(vals)[:1000]:
            x = self.eval(node.elt, {**env, var: v})
            if _mag(x) < 0:
                return UNK
            out.append(x)
        return out if out else UNK

    def _call(self, node: ast.Call, env: dict[str, Any]) -> Any:
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        args = [self.eval(a, env) for a in node.args if not isinstance(a, ast.Starred)]
        if any(isinstance(a, ast.Starred) for a in node.args):
            star = [a for a in node.args if isinstance(a, ast.Starred)]
            if len(star) == 1 and node.args[-1] is star[0]:
                v = self.eval(star[0].value, env)
                if not isinstance(v, tuple):
                    return UNK
                args = args + list(v)
            else:
                return UNK
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        receiver = self.eval(f.value, env) if isinstance(f, ast.Attribute) else UNK
        if isinstance(receiver, tuple):  # a method of a tensor (or of a shape)
            return _method(name, receiver, args, kw, self, env)
        if name in _MAKERS and (not isinstance(f, ast.Attribute) or _last_name(f.value) in ("torch", "np", "numpy")):
            return _maker(name, args, kw, self, env)
        if name in ("randn_like", "rand_like", "empty_like", "zeros_like", "ones_like", "full_like",
                    "randint_like") and args:
            return args[0] if isinstance(args[0], tuple) else UNK
        ints = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
        if len(ints) != len(args) or kw:
            if name == "len" and len(args) == 1 and isinstance(args[0], (tuple, list)):
                return len(args[0])
            if name in ("prod", "numel") and len(args) == 1 and isinstance(args[0], tuple):
                return math.prod(args[0])
            return UNK
        if name == "cdiv" and len(ints) == 2 and ints[1]:
            return -(-ints[0] // ints[1])
        if name == "next_power_of_2" and len(ints) == 1:
            return 1 << max(0, ints[0] - 1).bit_length()
        if name in ("max", "min") and ints:
            return max(ints) if name == "max" else min(ints)
        if name in ("int", "abs") and len(ints) == 1:
            return abs(ints[0]) if name == "abs" else ints[0]
        return UNK


@dataclass
class _Ctx:
    origin: str  # the call site in the caller file, once a call entered the kernel's module
    depth: int
    stack: frozenset[int]  # the functions being run (no recursion)
    globals: dict[str, Any]  # the module environment of the function running
    in_module: bool = False  # running the kernel's module's code, not a caller's


def _put(run: Run, name: str, v: Any) -> None:
    if isinstance(v, tuple) and v:
        run.shapes[name] = v
    elif isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        run.sizes[name] = v


def _range(interp: _Interp, call: ast.Call, env: dict[str, Any]) -> list[int]:
    a = [interp.eval(x, env) for x in call.args]
    if not all(isinstance(x, int) for x in a) or not 1 <= len(a) <= 3:
        return []
    r = range(*a)
    return list(r[:1000]) if len(r) <= 1000 else list(r[:1]) + [r[-1]]


def _binop(op: ast.operator, a: Any, b: Any) -> Any:
    if not (isinstance(a, int) and isinstance(b, int)) or isinstance(a, bool) or isinstance(b, bool):
        if isinstance(op, ast.Add) and isinstance(a, tuple) and isinstance(b, tuple):
            return a + b  # shape + (k,)
        return UNK
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult):
        return a * b
    if isinstance(op, ast.FloorDiv) and b:
        return a // b
    if isinstance(op, ast.Mod) and b:
        return a % b
    if isinstance(op, ast.Pow) and 0 <= b <= 64 and abs(a) < 1 << 16:
        return a ** b
    if isinstance(op, ast.LShift) and 0 <= b <= 62:
        return a << b
    return UNK


def _maker(name: str, args: list[Any], kw: dict[str, ast.expr], interp: _Interp, env: dict[str, Any]) -> Any:
    """The shape of the tensor a torch factory builds."""
    if "size" in kw:
        v = interp.eval(kw["size"], env)
        return (v,) if isinstance(v, int) else v if isinstance(v, tuple) else UNK
    if name == "randint":  # randint(high, size) / randint(low, high, size)
        dims = [a for a in args if isinstance(a, tuple)]
        return dims[0] if dims else UNK
    if name == "randperm":
        return (args[0],) if args and isinstance(args[0], int) else UNK
    if name == "arange":
        if not args or not all(isinstance(a, int) for a in args):
            return UNK
        r = range(*args[:3])
        return (len(r),)
    if name in ("full", "empty_strided", "normal"):
        return args[0] if args and isinstance(args[0], tuple) else UNK
    if len(args) == 1 and isinstance(args[0], tuple):
        return args[0]
    if args and all(isinstance(a, int) for a in args):
        return tuple(args)
    return UNK


def _method(name: str, t: tuple[int, ...], args: list[Any], kw: dict[str, ast.expr], interp: _Interp,
            env: dict[str, Any]) -> Any:
    """A method called on a tensor (or a shape) of shape ``t``."""
    ints = [a for a in args if isinstance(a, int)]
    if name == "size":
        if not args:
            return t
        return t[args[0]] if len(ints) == 1 and -len(t) <= args[0] < len(t) else UNK
    if name == "numel":
        return math.prod(t)
    if name in ("dim", "ndimension", "__len__"):
        return len(t)
    if name in _LIKE:
        return t
    if name in _NEW:
        if args and isinstance(args[0], tuple):
            return args[0]
        return tuple(args) if args and len(ints) == len(args) else UNK
    if name in ("view", "reshape", "expand") and args:
        dims = list(args[0]) if len(args) == 1 and isinstance(args[0], tuple) else args
        if not all(isinstance(d, int) for d in dims):
            return UNK  # .view(torch.float8): a dtype view changes the element size
        if name == "expand":
            return tuple(t[i - len(dims) + len(t)] if d == -1 and i - len(dims) + len(t) >= 0 else d
                         for i, d in enumerate(dims))
        if dims.count(-1) == 1:
            rest = math.prod(d for d in dims if d != -1)
            if not rest or math.prod(t) % rest:
                return UNK
            dims[dims.index(-1)] = math.prod(t) // rest
        return tuple(dims) if math.prod(dims) == math.prod(t) else UNK
    if name in ("view_as", "reshape_as", "expand_as"):
        return args[0] if args and isinstance(args[0], tuple) else UNK
    if name == "flatten" and not args:
        return (math.prod(t),)
    if name in ("t",) and len(t) == 2:
        return (t[1], t[0])
    if name == "transpose" and len(ints) == 2 and len(t) >= 2:
        d = list(t)
        try:
            d[ints[0]], d[ints[1]] = d[ints[1]], d[ints[0]]
        except IndexError:
            return UNK
        return tuple(d)
    if name == "permute":
        perm = list(args[0]) if len(args) == 1 and isinstance(args[0], tuple) else ints
        if sorted(perm) == list(range(len(t))):
            return tuple(t[i] for i in perm)
        return UNK
    if name == "unsqueeze" and len(ints) == 1:
        i = ints[0] if ints[0] >= 0 else len(t) + 1 + ints[0]
        return t[:i] + (1,) + t[i:] if 0 <= i <= len(t) else UNK
    if name == "index" and args:  # a shape tuple's .index: not a size
        return UNK
    return UNK


def _larger(a: Any, b: Any) -> Any:
    """Of two values a name may hold after an `if`, the one to keep: a known one over an
    unknown one or ``None``, the larger of two known ones."""
    known_a, known_b = a is not UNK and a is not NULL, b is not UNK and b is not NULL
    if known_a and known_b:
        return (a if _mag(a) >= _mag(b) else b) if type(a) is type(b) else UNK
    if known_a or known_b:
        return a if known_a else b
    return NULL if a is NULL and b is NULL else UNK


_ABSENT = object()


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The environment after an `if`: a name both branches agree on keeps its value; where
    they differ the larger (a size bound asks what any run can reach), and a known value
    over ``None`` or an unknown one (`if isinstance(X, DTensor): X = X.full_tensor()`: the
    branch that can be read is taken; a reshape keeps the elements either way)."""
    out = {}
    for name in a.keys() | b.keys():
        va, vb = a.get(name, _ABSENT), b.get(name, _ABSENT)
        if va is _ABSENT or vb is _ABSENT:
            out[name] = vb if va is _ABSENT else va
        elif va is vb or va == vb:
            out[name] = va
        elif isinstance(va, list) or isinstance(vb, list):
            out[name] = UNK
        else:
            out[name] = _larger(va, vb)
    return out


def _walk_calls(expr: ast.expr) -> list[ast.Call]:
    """The calls in an expression, outermost last (arguments are evaluated first), not
    inside a lambda; kept on the node, as a module's functions are run once per call site."""
    cached = getattr(expr, "_skel_calls", None)
    if cached is not None:
        return cached
    out: list[ast.Call] = []
    stack: list[ast.AST] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.Call):
            out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    out.reverse()
    expr._skel_calls = out  # type: ignore[attr-defined]
    return out


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _dotted_name(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([node.id] + parts[::-1])


def _same(a: str, b: str) -> bool:
    """Two dotted module names for one module: equal, or one a dotted tail of the other of
    two parts or more (`ops.rms_norm` in a checkout whose tests put `src/pkg` on the path)."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return "." in short and long.endswith("." + short)


def _absolute(rel: str, level: int, module: str) -> str:
    """A relative import's module made absolute from the importing file's path."""
    if not level:
        return module
    package = rel.split("/")[:-1]
    if level > 1:
        package = package[:len(package) - (level - 1)]
    dotted = _dotted(Path(*package, "x.py")).rpartition(".")[0] if package else ""
    return ".".join(p for p in (dotted, module) if p)


# --- parametrize -------------------------------------------------------------------------

def _parametrized(decorators: list[ast.expr], interp: _Interp, env: dict[str, Any]) -> dict[str, Any]:
    """The values ``@pytest.mark.parametrize`` gives a test (on the function or its class),
    or ``triton.testing.Benchmark(x_names=..., x_vals=...)`` a benchmark: the largest of each
    list; for several names at once, the row with the largest product (a row is one run)."""
    out: dict[str, Any] = {}
    for dec in decorators:
        for call in (n for n in ast.walk(dec) if isinstance(n, ast.Call)):
            kw = {k.arg: k.value for k in call.keywords if k.arg}
            if _last_name(call.func) == "parametrize" and len(call.args) >= 2:
                names_node, values_node = call.args[0], call.args[1]
            elif _last_name(call.func) == "Benchmark" and "x_names" in kw and "x_vals" in kw:
                names_node, values_node = kw["x_names"], kw["x_vals"]
            else:
                continue
            if isinstance(names_node, ast.Constant) and isinstance(names_node.value, str):
                names = [n.strip() for n in names_node.value.split(",") if n.strip()]
            elif isinstance(names_node, (ast.List, ast.Tuple)):
                names = [e.value for e in names_node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            else:
                continue
            rows = _rows(values_node, len(names), interp, env) if names else []
            if len(names) == 1:
                known = [r[0] for r in rows if _mag(r[0]) >= 0]
                if known:
                    out[names[0]] = max(known, key=_mag)
            elif rows:
                best = max(rows, key=lambda r: math.prod(max(_mag(v), 1) for v in r))
                out.update((n, v) for n, v in zip(names, best) if _mag(v) >= 0)
    return out


def _rows(node: ast.expr, width: int, interp: _Interp, env: dict[str, Any]) -> list[list[Any]]:
    if not isinstance(node, (ast.List, ast.Tuple)):
        v = interp.eval(node, env)  # a module constant list, a comprehension
        if isinstance(v, list):
            return [[x] for x in v] if width == 1 else [list(x) for x in v if isinstance(x, tuple)
                                                         and len(x) == width]
        return []
    rows = []
    for item in node.elts:
        if isinstance(item, ast.Call) and _last_name(item.func) == "param":  # pytest.param(v1, v2, marks=...)
            vals = item.args
        elif width > 1 and isinstance(item, (ast.Tuple, ast.List)):
            vals = item.elts
        else:
            vals = [item]
        if len(vals) != width:
            continue
        rows.append([interp.eval(v, env) for v in vals])
    return rows


# --- the kernel's module: its entry points -----------------------------------------------

def _entries(tree: ast.Module, rel: str, kernels: set[str]) -> dict[str, _Fn]:
    """The functions of the kernel's module a caller may enter by: every top-level function
    and method (the interpreter follows calls between them), keyed by name, by
    ``Class.method`` and, for a class with a ``forward``, by ``Class.apply``."""
    out: dict[str, _Fn] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_jit(node):
            out[node.name] = _Fn(node, rel, module=True)
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    static = any(_last_name(d) == "staticmethod" for d in sub.decorator_list)
                    skip = 0 if static else 1
                    out[f"{node.name}.{sub.name}"] = _Fn(sub, rel, skip=skip, module=True)
                    if sub.name == "forward":
                        # `Cls.apply(x, ...)` runs `forward(ctx, x, ...)`; `module(x)` runs `forward(self, x)`
                        out[f"{node.name}.apply"] = _Fn(sub, rel, skip=1, module=True)
    return out


def _is_jit(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(_last_name(d.func if isinstance(d, ast.Call) else d) in ("jit", "autotune", "heuristics")
               for d in node.decorator_list)


def _launchers(entries: dict[str, _Fn], kernels: set[str]) -> set[str]:
    """Marks the functions of the module that launch a kernel of ``kernels``, or call one
    that does (to any depth), as ``reaches``: only those are followed into. Returns the
    names a caller imports to reach a kernel (the functions, and the classes of the
    methods, that reach one)."""
    called: dict[str, set[str]] = {}
    for key, fn in entries.items():
        names = set()
        for node in ast.walk(fn.node):
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Subscript) and _last_name(node.func.value) in kernels:
                    fn.reaches = True
                names.add(_last_name(node.func))
        called[key] = names
    changed = True
    while changed:
        reaching = {k.rpartition(".")[2] for k, fn in entries.items() if fn.reaches}
        changed = False
        for key, fn in entries.items():
            if not fn.reaches and called[key] & reaching:
                fn.reaches = changed = True
    return {k.partition(".")[0] for k, fn in entries.items() if fn.reaches}


# --- the search --------------------------------------------------------------------------

@dataclass
class Found:
    """What the repository says about the kernels of one file."""

    root: str = ""
    module: str = ""
    files_read: int = 0  # candidate files read
    files_parsed: int = 0  # of those, the ones importing the module (parsed)
    call_sites: int = 0  # calls into the module followed
    seconds: float = 0.0
    runs: dict[str, list[Run]] = field(default_factory=dict)  # kernel -> runs found

    def largest(self, kernel: str) -> Run | None:
        runs = self.runs.get(kernel, [])
        return max(runs, key=Run.key) if runs else None

    def workload(self, kernel: str) -> Workload:
        """The sizes of ``kernel``'s largest run found, its origin the call site."""
        wl = Workload()
        run = self.largest(kernel)
        if run is None:
            return wl
        for name, v in run.sizes.items():
            wl.sizes[name] = v
            wl.origin[name] = run.origin
        for name, s in run.shapes.items():
            wl.shapes[name] = s
            wl.origin[name] = run.origin
        if run.programs is not None and "programs" not in wl.sizes:
            wl.sizes["programs"] = run.programs
            wl.origin["programs"] = run.origin
        return wl


# parsed caller files, by (path, mtime, size): a warm process (the MCP server) reads a
# repository's tests once; None for a file that does not parse
_PARSED: OrderedDict[tuple[str, int, int], ast.Module | None] = OrderedDict()
_KEEP_PARSED = 256


def _read(full: Path) -> tuple[bytes, tuple[str, int, int]] | None:
    """A file's bytes and its cache key; None when it cannot be read or is too large."""
    try:
        st = full.stat()
        if st.st_size > MAX_FILE_BYTES:
            return None
        return full.read_bytes(), (str(full), st.st_mtime_ns, st.st_size)
    except OSError:
        return None


def _parse(key: tuple[str, int, int], text: str) -> ast.Module | None:
    if key in _PARSED:
        _PARSED.move_to_end(key)
        return _PARSED[key]
    try:
        tree: ast.Module | None = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    _PARSED[key] = tree
    while len(_PARSED) > _KEEP_PARSED:
        _PARSED.popitem(last=False)
    return tree


def find(path: str | os.PathLike, kernels: list[KernelFacts], budget_s: float = TIME_BUDGET_S,
         within: Iterable[str | os.PathLike] | None = None) -> Found:
    """Runs of ``kernels`` (all from the file ``path``) found in the tests, benchmarks and
    examples of the repository holding ``path`` (and the file's own `__main__` block); an
    empty ``Found`` for a file in no repository. Never raises for a bad file, and stops
    after ``budget_s`` seconds with what it has. ``within``: folders the search may not
    leave (an MCP server's roots): a repository reaching above the one holding ``path`` is
    searched inside it only, and a file linking out of it is not read."""
    start = time.perf_counter()
    found = Found()
    fences = None if within is None else [Path(d).resolve() for d in within]
    try:
        _find(Path(path), kernels, start + budget_s, found, fences)
    except (OSError, RecursionError, MemoryError, ValueError):
        pass
    found.seconds = time.perf_counter() - start
    return found


#: skel's own package: its catalog's examples and fixtures are not a user's repository
_SKEL = Path(__file__).resolve().parents[1]


def _find(path: Path, kernels: list[KernelFacts], deadline: float, found: Found, fences: list[Path] | None) -> None:
    triton = [k for k in kernels if k.language == "triton"]
    inside_skel = path.resolve().is_relative_to(_SKEL)
    where = repo_root(path) if triton and path.suffix == ".py" and not inside_skel else None
    if where is None:
        return
    root, module = where
    fence = None
    if fences is not None:
        fence = next((d for d in fences if path.resolve().is_relative_to(d)), None)
        if fence is None:
            return
        if not root.resolve().is_relative_to(fence):
            root = fence
    found.root, found.module = str(root), module
    got = _read(path)
    if got is None:
        return
    own_tree = _parse(got[1], got[0].decode("utf-8", "replace"))
    if own_tree is None:
        return
    own_rel = path.resolve().relative_to(root).as_posix()
    names = {k.name for k in triton}
    entries = _entries(own_tree, own_rel, names)
    reach = _launchers(entries, names) | names  # what a caller imports to reach a kernel
    stem = module.rpartition(".")[2]
    needles = [n.encode() for n in {stem} | reach]
    interp = _Interp({k.name: [p.name for p in k.params] for k in triton}, entries, {}, deadline)
    interp.module = module
    interp.names = {k.partition(".")[0] for k in entries} | names
    interp.block([s for s in own_tree.body if isinstance(s, (ast.Assign, ast.AnnAssign))], interp.module_env,
                 _Ctx("", 0, frozenset(), interp.module_env, in_module=True))
    files = candidate_files(root, stem, deadline)
    files = [own_rel] + [f for f in files if f != own_rel]
    for rel in files:
        if time.perf_counter() > deadline:
            break
        found.files_read += 1
        if rel == own_rel:
            tree: ast.Module | None = own_tree
        else:
            if fence is not None and not (root / rel).resolve().is_relative_to(fence):
                continue  # a link leading out of the folders the search may read
            got = _read(root / rel)
            if got is None:
                continue
            data, key = got
            if b"\0" in data or not any(n in data for n in needles):
                continue
            text = data.decode("utf-8", "replace")
            if not covers(module, reach, *imports_of(text)):
                continue
            tree = _parse(key, text)
        if tree is None:
            continue  # does not parse: skipped, silently
        found.files_parsed += 1
        _run_file(interp, tree, rel, own=rel == own_rel)
    found.call_sites = interp.entered
    for run in interp.runs:
        found.runs.setdefault(run.kernel, []).append(run)


def _run_file(interp: _Interp, tree: ast.Module, rel: str, own: bool) -> None:
    """Every function of a caller file (tests, test classes' methods, helpers) and its
    module body, over its module constants and parametrised values. In the kernel's own
    file only its ``if __name__ == "__main__":`` block and its test and benchmark
    functions are callers: its other functions are the entry points themselves."""
    interp.rel = rel
    interp.local_fns = {}
    if own:  # the module's names are its own: each a reference to itself
        env: dict[str, Any] = {**interp.module_env, **{n: _Ref(n) for n in interp.names}}
    else:
        env = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                interp.local_fns[node.name] = _Fn(node, rel)
    body = [s for s in tree.body if isinstance(s, (ast.Assign, ast.AnnAssign)) or _is_main(s)] if own else tree.body
    interp.block(body, env, _Ctx("", 0, frozenset(), env))  # module-level code (and constants) first
    roots: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[ast.expr]]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not own or _CALLER_FN.match(node.name):
                roots.append((node, node.decorator_list))
        elif isinstance(node, ast.ClassDef) and not own:
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    roots.append((sub, node.decorator_list + sub.decorator_list))
    for fn, decorators in roots:
        if time.perf_counter() > interp.deadline:
            return
        local = dict(env)
        local.update(_parametrized(decorators, interp, env))
        interp.block(fn.body, local, _Ctx("", 1, frozenset({id(fn)}), env))


#: a function of the kernel's own file that calls it rather than being called
_CALLER_FN = re.compile(r"(?i)^(test|bench|run_|main$|profile|demo|example)")


def _is_main(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and isinstance(node.test.left, ast.Name) \
        and node.test.left.id == "__name__"
