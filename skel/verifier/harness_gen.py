"""``skel harness KERNEL.py --kernel NAME -o harness.py``: a harness written from the kernel itself.

``skel verify`` needs a harness (docs/harness.md) to know how to run a kernel; a kernel
taken from a project has none. This writes one:

1. **Imports.** The kernel's module is imported as its package would import it (the package
   root on ``sys.path``). When that fails, the kernel's parent packages are made bare and each
   module its own imports name is imported for real where it can be, else stubbed
   (:mod:`skel.verifier.harness_rt` says what a stub does). The plan is written into the
   harness (``BARE_PACKAGES``, ``STUBS``).
2. **How to run it.** With a host launcher in the file (the function that does
   ``NAME[grid](...)``), that function is called: each parameter without a default becomes a
   tensor (when the function reads ``.shape``, ``.stride``, ``.view``... of it), an index
   tensor (``target``, ``labels``, ``ids``...), a size, or a literal (``eps`` = 1e-6 ...).
   Without one, the jit kernel is launched directly from its signature: pointers are tensors,
   strides and sizes come from them, block sizes are powers of two above the sizes, and the
   grid is one program per row. Sizes come from ``--shape`` (a parameter's shape ``X=4x4096``
   or a size ``cols=4096``), else small defaults; values from ``--arg NAME=LITERAL``.
3. **Probing.** Where the layout is a guess (a weight the width of a row, or of the whole
   input; an unknown scalar; a chunk size), the layouts are tried in order on the CPU
   interpreter; those under which the original runs and launches NAME are self-checked in
   turn (step 5), and the first that passes is kept: a layout can run and still be wrong (a
   tensor smaller than the launcher views it as, so the kernel reads past it). The kernel
   runs under :func:`skel.verifier.harness_rt.interpreter_shims` (float arguments as fp32
   scalars, libdevice, autotuners, every access inside the kernel's tensors).
4. **The reference** is the original, run on the same inputs; outputs are what the launcher
   returns and every tensor argument after the call. Tolerances are per dtype.
5. **Self-check.** The harness is loaded back and the original is verified against itself
   through the same-results stage ``skel verify`` runs (fresh shapes included); a harness
   that cannot pass that is reported, not trusted.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import itertools
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from skel.errors import InputError, UsageError
from skel.kernels.model import KernelFacts
from skel.kernels.workload import Workload, from_launches
from skel.verifier import correctness
from skel.verifier import harness_rt as rt
from skel.verifier.correctness import dtype_of
from skel.verifier.harness import Harness

#: tolerances (atol, rtol) against the original in the same dtype
TOLERANCES = {"float32": (2e-5, 2e-5), "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2), "float64": (1e-10, 1e-10)}
#: default sizes by a tensor's rank (small: the CPU interpreter runs them), names by position
RANK_DIMS = {1: (("cols", 100),), 2: (("rows", 5), ("cols", 100)), 3: (("batch", 2), ("rows", 5), ("cols", 100)),
             4: (("batch", 2), ("seq", 37), ("heads", 2), ("dim", 32))}
GPU_SCALE = 40  # the GPU shape: every size not FIXED, times this (a guess: edit SHAPES)
MAX_PROBES = 48
MAX_CHECKED = 8  # layouts that run, self-checked in turn until one passes

_TENSOR_ATTRS = {"shape", "stride", "size", "dtype", "device", "view", "reshape", "contiguous", "numel", "dim", "ndim",
                 "is_contiguous", "data_ptr", "new_empty", "new_zeros", "new_ones", "element_size", "flatten", "t",
                 "transpose", "unsqueeze", "squeeze", "to", "float", "half", "expand", "permute", "is_cuda", "clone",
                 "view_as", "reshape_as", "T", "mT", "storage_offset"}
_INDEX = re.compile(r"(?i)(target|label|ids?$|indices|index|idx|positions?$|token_ids|mapping|slot)")
_WEIGHT = re.compile(r"(?i)^(w|b|weight|bias|gamma|beta|scale|shift|g)(_.*)?$|_(weight|bias|w|b)$")
_ROWS = re.compile(r"(?i)^(n_?rows?|rows?|m|b|bs|batch(_size)?|num_tokens|n_tokens|t|seq_?len|num_rows)$")
_STRIDE = re.compile(r"(?i)stride")
_LAST_AXIS = re.compile(r"(?i)(col|_n|_d|_k|_h|1)$")
_SIZE = re.compile(r"(?i)(^n_|^num_|_size$|^n$|^[a-z]$|len|dim|cols?$|width|hidden|^d$|^k$|^v$|^h$)")
_COUNT = re.compile(r"(?i)(^|_)(chunk|block|group|tile|page|window)(_?size)?$|"
                    r"^(num|n)_?(groups?|chunks?|blocks?|heads?|channels?)$|_size$|^size$")
_VALUE = re.compile(r"(?i)eps|softcap|cap$|offset|scale|alpha|beta|gamma|temperature|multiplier|factor|coef|"
                    r"lambda|smoothing|ignore_index")
_BOOL = re.compile(r"(?i)^(is_|use_|has_|do_|enable|return_|in_?place|training|reverse|HAS_|USE_|IS_)")


@dataclass
class SelfCheck:
    passed: bool
    detail: str
    cases: list[str] = field(default_factory=list)


@dataclass
class GeneratedHarness:
    """What ``skel harness`` wrote, and what it found out doing so."""

    path: Path
    kernel_file: Path
    kernel: str
    launcher: str | None
    args: list[dict[str, Any]]
    shapes: dict[str, dict[str, int]]
    launched: list[str]
    bare: bool
    stubs: list[str]
    notes: list[str] = field(default_factory=list)
    check: SelfCheck | None = None

    @property
    def verify_hint(self) -> str:
        return f"skel verify {self.kernel_file} CANDIDATE.py --harness {self.path} --kernel {self.kernel}"


# ---- the kernel and its module --------------------------------------------------------------

def _kernel_facts(path: Path, name: str | None) -> KernelFacts:
    from skel.kernels.triton import extract_file  # the Triton extractor: 130 ms to import (libcst)

    try:
        found = [k for k in extract_file(path.read_text(encoding="utf-8"), str(path)) if k.language == "triton"]
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as e:
        raise InputError(f"{path}: cannot be read as a Triton file: {e}") from e
    if not found:
        raise InputError(f"{path}: no @triton.jit kernel in it")
    if name is None:
        if len(found) > 1:
            raise UsageError(f"{path} has {len(found)} kernels: give --kernel NAME (one of "
                             f"{', '.join(k.name for k in found)})")
        return found[0]
    for k in found:
        if k.name == name:
            return k
    raise UsageError(f"{path}: no kernel named {name!r} (it has {', '.join(k.name for k in found)})")


def _direct_imports(tree: ast.Module, dotted: str) -> list[str]:
    """Modules the file's own import statements name (relative ones resolved against ``dotted``)."""
    package = dotted.rsplit(".", 1)[0] if "." in dotted else ""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[:len(parts) - node.level + 1] if node.level > 1 else parts
                base = ".".join([*parts, *([base] if base else [])])
            if base:
                out.append(base)
    return list(dict.fromkeys(out))


def _forget(names: set[str], top: str) -> None:
    """Drop what a failed import of the kernel's package left half-done (its own modules
    only: a library such as Triton, imported on the way, stays as it is)."""
    for name in names:
        if name == top or name.startswith(top + "."):
            sys.modules.pop(name, None)


def plan_imports(path: Path, notes: list[str]) -> tuple[Any, bool, list[str]]:
    """(the kernel's module, bare parents?, stubbed modules): see the module docstring."""
    before = set(sys.modules)
    try:
        return rt.load_kernel_module(path), False, []
    except InputError as first:
        root, dotted = rt.package_root(path)
        top = dotted.split(".")[0]
        _forget(set(sys.modules) - before, top)
        rt._LOADED.pop(str(path.resolve()), None)
        why = str(first).split(": ", 1)[-1]
    stubs: list[str] = []
    if root is not None:
        rt.bare_packages(root, dotted)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for name in _direct_imports(tree, dotted):
        if name.split(".")[0] in ("torch", "triton") or name in sys.modules:
            continue
        inside = root is not None and name.split(".")[0] == top
        if not inside and rt.module_importable(name.split(".")[0]):
            continue
        mark = set(sys.modules)
        try:
            if inside:
                _with_leaf_stubs(functools.partial(__import__, name), top, stubs, root=root)
            else:
                raise ImportError(f"No module named {name.split('.')[0]!r}")
        except Exception:  # noqa: BLE001 - whatever stops it importing, a stub stands in
            _forget(set(sys.modules) - mark, top)
            stubs.append(name)
            rt.install_stubs([name], root)
    try:
        mod = _with_leaf_stubs(functools.partial(rt.load_kernel_module, path, bare=root is not None, stubs=stubs),
                               top, stubs, path, root)
    except InputError as e:
        raise InputError(f"{path}: cannot import it, even with its package's failing imports stubbed ({why}); "
                         f"then: {str(e).split(': ', 1)[-1]}") from e
    notes.append(f"importing it failed ({why}); imported with {'its parent packages bare and ' if root else ''}"
                 f"{len(stubs)} module(s) stubbed: {', '.join(stubs) or 'none'}")
    return mod, root is not None, stubs


MAX_LEAF_STUBS = 12


def _missing_leaf(e: BaseException | None, top: str) -> str | None:
    """The module a failed import misses, when it is not installed and not the kernel's own
    package (``psutil``, ``IPython``, ``einops``): a stub can stand in for it."""
    seen = 0
    while e is not None and seen < 16:
        if isinstance(e, ModuleNotFoundError) and e.name:
            first = e.name.split(".")[0]
            if first in (top, "torch", "triton") or rt.module_importable(first) and "." not in e.name:
                return None
            return e.name
        e, seen = e.__cause__ or e.__context__, seen + 1
    return None


def _with_leaf_stubs(do: Callable[[], Any], top: str, stubs: list[str], path: Path | None = None,
                     root: Path | None = None) -> Any:
    """``do()``, with each third-party module it misses stubbed (added to ``stubs``) and
    tried again: a module of the package whose import chain reaches an uninstalled
    dependency (sglang's platform helpers, which import psutil) runs for real."""
    for _ in range(MAX_LEAF_STUBS):
        mark = set(sys.modules)
        try:
            return do()
        except Exception as e:  # noqa: BLE001 - a missing dependency is stubbed, anything else raised
            leaf = _missing_leaf(e, top)
            if leaf is None or leaf in stubs:
                raise
            _forget(set(sys.modules) - mark, top)
            if path is not None:
                rt._LOADED.pop(str(path.resolve()), None)
            stubs.append(leaf)
            rt.install_stubs([leaf], root)
    return do()


# ---- what to pass ------------------------------------------------------------------------------

def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # a bare word: a string


def _parse_args(items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise UsageError(f"--arg {item!r}: expected NAME=VALUE, VALUE a Python literal (1e-6, 'llama', None)")
        out[name.strip()] = _literal(value.strip())
    return out


def _scalar_guesses(name: str) -> list[Any]:
    low = name.lower()
    if "eps" in low:
        return [1e-6]
    if "softcap" in low or low.endswith("cap"):
        return [30.0]
    if _BOOL.search(name):
        return [False, True]
    if _COUNT.search(name):  # a chunk or block size, a number of groups: a small power of two
        return [16, 4, 1, None]
    if "offset" in low:
        return [0.0, 0]
    if re.search(r"scale|alpha|beta|gamma|temperature|multiplier|factor|coef|weight|lambda|smoothing", low):
        return [1.0, 0.5]
    if "mode" in low or "dtype" in low or "reduction" in low:
        return [None, 0, "none", "mean"]
    if "ignore_index" in low:
        return [-100]
    return [None, 1, 1.0, False]


class _Usage(ast.NodeVisitor):
    """How a host function uses each name: as a tensor, its rank, and names unpacked from its shape."""

    def __init__(self) -> None:
        self.tensor: set[str] = set()
        self.rank: dict[str, int] = {}
        self.unpacked: dict[str, list[str]] = {}

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and node.attr in _TENSOR_ATTRS:
            self.tensor.add(node.value.id)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:  # x.shape[1]
        v = node.value
        if (isinstance(v, ast.Attribute) and v.attr == "shape" and isinstance(v.value, ast.Name)
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int)
                and node.slice.value >= 0):
            self.rank[v.value.id] = max(self.rank.get(v.value.id, 0), node.slice.value + 1)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:  # x.size(1), x.stride(1), torch.empty_like(x)
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr in ("size", "stride") and isinstance(f.value, ast.Name)
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int)
                and node.args[0].value >= 0):
            self.rank[f.value.id] = max(self.rank.get(f.value.id, 0), node.args[0].value + 1)
        if isinstance(f, ast.Attribute) and f.attr.endswith("_like") and node.args and isinstance(node.args[0],
                                                                                                  ast.Name):
            self.tensor.add(node.args[0].id)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:  # a, b = x.shape
        t, v = node.targets[0], node.value
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "size" and not v.args:
            v = v.func
        if (isinstance(t, ast.Tuple) and isinstance(v, ast.Attribute) and v.attr == "shape"
                and isinstance(v.value, ast.Name) and all(isinstance(e, ast.Name) for e in t.elts)):
            names = [e.id for e in t.elts if isinstance(e, ast.Name)]
            self.unpacked.setdefault(v.value.id, names)
            self.tensor.add(v.value.id)
        self.generic_visit(node)


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def _dims_for(name: str, use: _Usage, rank: int | None = None) -> list[tuple[str, int]]:
    names = use.unpacked.get(name)
    r = len(names) if names else (rank or max(use.rank.get(name, 0), 2))
    r = max(1, min(r, 4))
    defaults = RANK_DIMS[r] if r in RANK_DIMS else RANK_DIMS[2]
    if names:  # past rank 4 (b, c, t, h, w = x.shape), each further size is a small 4
        return [(n, defaults[i][1] if i < len(defaults) else 4) for i, n in enumerate(names)]
    return list(defaults)


@dataclass
class _Plan:
    """Argument specs with alternatives to probe: ``options[i]`` are the choices for argument i."""

    options: list[list[dict[str, Any]]]
    sizes: dict[str, int]
    fixed: set[str]
    grid: tuple[str, ...] = ()

    def combos(self) -> list[list[dict[str, Any]]]:
        """Layouts to try, nearest the first guesses first: none changed, then one argument
        changed to an alternative, then two ... (at most MAX_PROBES)."""
        varied = [i for i, o in enumerate(self.options) if len(o) > 1]
        out: list[list[dict[str, Any]]] = []
        for n in range(len(varied) + 1):
            for which in itertools.combinations(varied, n):
                for picks in itertools.product(*(range(1, len(self.options[i])) for i in which)):
                    choice = dict(zip(which, picks))
                    out.append([o[choice.get(i, 0)] for i, o in enumerate(self.options)])
                    if len(out) >= MAX_PROBES:
                        return out
        return out


def _given_tensor(name: str, wl: Workload, sizes: dict[str, int]) -> dict[str, Any] | None:
    if name not in wl.shapes:
        return None
    dims = []
    for i, d in enumerate(wl.shapes[name]):
        key = f"{name}_{i}"
        sizes[key] = d
        dims.append(key)
    return {"name": name, "kind": "tensor", "dims": tuple(dims)}


def _launcher_plan(fn: ast.FunctionDef, wl: Workload, given: dict[str, Any], kf: KernelFacts) -> _Plan:
    from skel.kernels.triton import _pointer_params  # the Triton extractor's own reading of pointers

    use = _Usage()
    use.visit(fn)
    pointers = _pointer_params(kf)
    names = [p.name for p in kf.params]
    for ln in kf.launches:  # a parameter passed straight to a pointer of the kernel is a tensor
        if ln.host_function != fn.name:
            continue
        passed = list(zip(names, ln.args)) + [(k, v) for k, v in ln.kwargs.items()]
        use.tensor |= {v.strip() for k, v in passed if k in pointers and v.strip().isidentifier()}
    params = [*fn.args.posonlyargs, *fn.args.args]
    n_defaults = len(fn.args.defaults)
    first_default = len(params) - n_defaults
    sizes: dict[str, int] = {}
    fixed: set[str] = set()
    options: list[list[dict[str, Any]]] = []
    primary: list[tuple[str, int]] | None = None
    pending: list[tuple[int, str]] = []
    for i, p in enumerate(params):
        name = p.arg
        if name in ("self", "cls"):
            continue
        has_default = i >= first_default
        if name in given:
            options.append([{"name": name, "kind": "value", "value": given[name], "keyword": has_default}])
            continue
        t = _given_tensor(name, wl, sizes)
        if t is not None:
            options.append([t])
            if primary is None:
                primary = [(d, sizes[d]) for d in t["dims"]]
            continue
        if name in wl.sizes and name in use.tensor:  # a 1-D tensor of the size given
            sizes[f"{name}_0"] = wl.sizes[name]
            options.append([{"name": name, "kind": "tensor", "dims": (f"{name}_0",), "keyword": has_default}])
            continue
        if name in wl.sizes:
            options.append([{"name": name, "kind": "value", "value": wl.sizes[name], "keyword": has_default}])
            continue
        if has_default:
            continue
        if name in use.tensor:
            if primary is None and not _INDEX.search(name):
                primary = _dims_for(name, use)
                for d, v in primary:
                    sizes.setdefault(d, wl.sizes.get(d, v))
                if len(primary) >= 3:
                    fixed.add(primary[-1][0])
                options.append([{"name": name, "kind": "tensor", "dims": tuple(d for d, _ in primary)}])
            else:
                options.append([])
                pending.append((len(options) - 1, name))
            continue
        options.append([{"name": name, "kind": "value", "value": v} for v in _scalar_guesses(name)])
    if primary is None:
        raise InputError(f"{fn.name}: no parameter reads as a tensor (.shape, .stride, .view ...): give one with "
                         "--shape NAME=AxB")
    pdims = [d for d, _ in primary]
    for idx, name in pending:
        own = [(d, wl.sizes.get(d, v)) for d, v in _dims_for(name, use)] if name in use.unpacked else None
        if own:
            for d, v in own:
                sizes.setdefault(d, v)
        if _INDEX.search(name):
            high = pdims[-1]
            choices = [tuple(pdims[:-1]) or (pdims[0],), (pdims[0],)]
            options[idx] = [{"name": name, "kind": "tensor", "dims": c, "dtype": "index", "high": high}
                            for c in dict.fromkeys(choices)]
            continue
        shapes = [tuple(pdims), (pdims[-1],), (pdims[0],)]
        if own:
            shapes.insert(0, tuple(d for d, _ in own))
        if _WEIGHT.search(name):
            shapes.sort(key=lambda s: len(s) != 1)
        options[idx] = [{"name": name, "kind": "tensor", "dims": s} for s in dict.fromkeys(shapes)]
    for d, v in primary:
        sizes.setdefault(d, v)
    for name in list(sizes):
        if name in wl.sizes:
            sizes[name] = wl.sizes[name]
    return _Plan(options, sizes, fixed)


def _direct_plan(kf: KernelFacts, wl: Workload, given: dict[str, Any]) -> _Plan:
    """The jit kernel launched from its signature (see the module docstring)."""
    from skel.kernels.triton import _pointer_params  # the Triton extractor's own reading of pointers

    pointers = {p for p in _pointer_params(kf) if not (_STRIDE.search(p) or re.search(r"(?i)^(n_|num_)", p))}
    stored: set[str] = set()
    defs: dict[str, set[str]] = {}
    for a in kf.assigns:
        for t in a.targets:
            defs.setdefault(t.strip(), set()).update(a.names)
    for c in kf.calls:
        if c.name == "tl.store" and c.args:
            names = set(re.findall(r"[A-Za-z_]\w*", c.args[0]))
            for _ in range(4):
                names |= {n for x in list(names) for n in defs.get(x, ())}
            stored |= names & pointers
    literals = from_launches(kf)
    sizes = {"rows": wl.sizes.get("rows", 5), "cols": wl.sizes.get("cols", 100)}
    options: list[list[dict[str, Any]]] = []
    first_tensor = ""
    for p in kf.params:
        name = p.name
        if name in given:
            options.append([{"name": name, "kind": "value", "value": given[name]}])
        elif name in wl.shapes:
            made = _given_tensor(name, wl, sizes)
            assert made is not None
            made["written"] = name in stored
            options.append([made])
            first_tensor = first_tensor or name
        elif name in wl.sizes:
            options.append([{"name": name, "kind": "value", "value": wl.sizes[name]}])
        elif p.constexpr:
            if p.default:
                continue
            if name in literals.sizes:
                options.append([{"name": name, "kind": "value", "value": literals.sizes[name]}])
            elif _BOOL.search(name):
                options.append([{"name": name, "kind": "value", "value": v} for v in (False, True)])
            elif _VALUE.search(name):  # a constexpr value (beta, eps, ignore_index), not a block size
                options.append([{"name": name, "kind": "value", "value": v} for v in _scalar_guesses(name)])
            else:
                options.append([{"name": name, "kind": "pow2", "of": "cols", "min": 16}])
        elif name in pointers or (not p.default and re.search(r"(?i)ptr$", name)):
            options.append([{"name": name, "kind": "tensor", "dims": ("rows", "cols"), "written": name in stored}])
            first_tensor = first_tensor or name
        elif p.default:
            continue
        elif _STRIDE.search(name):
            axis = 1 if _LAST_AXIS.search(name) else 0
            options.append([{"name": name, "kind": "stride", "of": "", "axis": axis}])
        elif _ROWS.search(name):
            options.append([{"name": name, "kind": "size", "of": "rows"}])
        elif _SIZE.search(name):
            options.append([{"name": name, "kind": "size", "of": "cols"}])
        else:
            options.append([{"name": name, "kind": "value", "value": v} for v in _scalar_guesses(name)])
    if not first_tensor:
        raise InputError(f"{kf.name}: no pointer parameter found: give one with --shape NAME=AxB")
    for opts in options:
        for o in opts:
            if o["kind"] == "stride":
                o["of"] = first_tensor
    return _Plan(options, sizes, set(), grid=("rows",))


# ---- probing and writing -----------------------------------------------------------------------

def _probe(module: Any, kf: KernelFacts, launcher: str | None, plan: _Plan, dtype: Any
           ) -> Iterator[tuple[list[dict[str, Any]], int, list[str], str]]:
    """Each argument layout under which the original runs and launches the kernel, in the
    plan's order: (args, tensors returned, kernels launched, ""); when none launches it, the
    first that runs, with the last failure's words."""
    last = "no layout to try"
    fallback: tuple[list[dict[str, Any]], int, list[str]] | None = None
    found = False
    for args in plan.combos():
        spec = rt.Spec(str(kf.path), str(Path(module.__file__).resolve()), kf.name, launcher, args, plan.grid,
                       returned=0)
        try:
            inputs = spec.make_inputs(plan.sizes, dtype, 0, "cpu")
            with rt.recording_launches() as seen:
                results = _returned(spec, module, inputs)
        except Exception as e:  # noqa: BLE001 - the original under a guessed layout: try the next
            last = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
            continue
        if kf.name in seen:
            found = True
            yield args, results, seen, ""
            continue
        fallback = fallback or (args, results, seen)
        last = f"it ran but launched {', '.join(dict.fromkeys(seen)) or 'no kernel'}, not {kf.name}"
    if found:
        return
    if fallback is not None:
        yield *fallback, last
        return
    raise InputError(f"{kf.path}: the original does not run under any guessed layout ({last}); give sizes with "
                     "--shape NAME=AxB and values with --arg NAME=VALUE")


def _returned(spec: rt.Spec, module: Any, inputs: tuple) -> int:
    spec.returned = -1
    try:
        spec._call(module, inputs)
    except RuntimeError as e:
        m = re.match(r"the launcher returned (\d+) tensor", str(e))
        if not m:
            raise
        return int(m.group(1))
    raise AssertionError("unreachable: RETURNED is -1")


def _render(g: GeneratedHarness, grid: tuple[str, ...], returned: int, fixed: list[str], dtypes: list[str],
            command: str, kernel_ref: str) -> str:
    big = {k: (v if k in fixed else v * GPU_SCALE) for k, v in g.shapes["tiny"].items()}
    how = (f"calls the host launcher `{g.launcher}` of the kernel's file" if g.launcher else
           "launches the jit kernel directly from its signature (no host launcher in the file)")
    args = ",\n".join(f"    {a!r}" for a in g.args)
    lines = [
        f'"""Harness for `{g.kernel}` ({g.kernel_file.name}), written by `{command}`.',
        "",
        f"It {how}. The reference is the original kernel on the same inputs; outputs are the",
        "tensors it returns, then every tensor argument after the call. See docs/harness.md",
        "(Generated harnesses) for what each field means; edit SHAPES, ARGS, DTYPES and TOLERANCES",
        "to fit the kernel (the GPU shape is a guess).",
        "",
        f"    skel verify {kernel_ref} CANDIDATE.py --harness THIS_FILE --kernel {g.kernel}",
        '"""',
        "",
        "from skel.verifier.harness_rt import Spec",
        "",
        f"KERNEL_FILE = {kernel_ref!r}  # relative to this file's folder, or absolute",
        f"KERNEL = {g.kernel!r}",
        f"LAUNCHER = {g.launcher!r}  # None: the kernel is launched directly over GRID",
        "ARGS = [",
        args,
        "]",
        f"GRID = {grid!r}",
        f"RETURNED = {returned!r}  # tensors the launcher returns",
        f"BARE_PACKAGES = {g.bare!r}  # the kernel's parent packages imported without running their __init__",
        f"STUBS = {tuple(g.stubs)!r}  # modules replaced by stubs (not importable here)",
        "",
        f"SHAPES = {{'tiny': {g.shapes['tiny']!r}, 'large': {big!r}}}",
        "CPU_SHAPES = ('tiny',)",
        "GPU_SHAPES = ('large',)",
        f"FIXED = {tuple(fixed)!r}",
        f"DTYPES = {tuple(dtypes)!r}",
        f"TOLERANCES = {{{', '.join(f'{d!r}: {TOLERANCES.get(d, (1e-3, 1e-3))!r}' for d in dtypes)}}}",
        "ERROR_RATIO = 0  # the reference is the original itself, so its own error is not measured: the",
        "                 # candidate-vs-original error ratio is off; TOLERANCES decide",
        "",
        "_spec = Spec(__file__, KERNEL_FILE, KERNEL, LAUNCHER, ARGS, GRID, RETURNED, BARE_PACKAGES, STUBS)",
        "make_inputs = _spec.make_inputs",
        "make_outputs = _spec.make_outputs",
        "reference = _spec.reference",
        "launcher_for = _spec.launcher_for  # skel verify: each file's kernel, launched as above",
        "",
    ]
    return "\n".join(lines)


def generate(kernel_file: str | Path, out: str | Path, *, kernel: str | None = None,
             shapes: list[str] | tuple[str, ...] = (), args: list[str] | tuple[str, ...] = (),
             launcher: str | None = None, direct: bool = False, dtypes: list[str] | tuple[str, ...] = ("float32",),
             check: bool = True, command: str = "skel harness") -> GeneratedHarness:
    """Write a harness for ``kernel`` of ``kernel_file`` to ``out`` (see the module docstring).
    Needs torch and Triton; on the CPU, set TRITON_INTERPRET=1 before calling."""
    path = Path(kernel_file)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    for d in dtypes:
        try:
            dtype_of(d)
        except ValueError as e:
            raise UsageError(f"--dtype {d}: {e}") from None
    kf = _kernel_facts(path, kernel)
    kf.path = str(path.resolve())
    wl = Workload.parse(list(shapes))
    given = _parse_args(args)
    notes: list[str] = []
    module, bare, stubs = plan_imports(path.resolve(), notes)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    host: str | None = None
    if not direct:
        if launcher:
            host = launcher
        else:
            hosts = [ln.host_function for ln in kf.launches if ln.host_function and "." not in ln.host_function]
            host = next((h for h in hosts if _function(tree, h) is not None), None)
    if host:
        fn = _function(tree, host)
        if fn is None or not callable(getattr(module, host, None)):
            raise UsageError(f"{path}: no module-level function {host!r} to launch {kf.name} with")
        plan = _launcher_plan(fn, wl, given, kf)
    else:
        plan = _direct_plan(kf, wl, given)
    out_path = Path(out)
    rel = os.path.relpath(path.resolve(), out_path.resolve().parent)
    kernel_ref = rel if not rel.startswith("..") else str(path.resolve())
    first: tuple[GeneratedHarness, str] | None = None
    for n, (chosen, returned, launched, problem) in enumerate(_probe(module, kf, host, plan, dtype_of(dtypes[0]))):
        used = {d for a in chosen if a["kind"] == "tensor" for d in a["dims"] if isinstance(d, str)}
        used |= {a["of"] for a in chosen if a["kind"] in ("size", "pow2") and isinstance(a["of"], str)}
        sizes = {k: v for k, v in plan.sizes.items() if k in used}
        g = GeneratedHarness(out_path, path, kf.name, host, chosen, {"tiny": sizes}, list(dict.fromkeys(launched)),
                             bare, stubs, list(notes))
        if problem:
            g.notes.append(f"the launcher runs, but {problem}: give --launcher or --direct, or arguments that take "
                           "it there (--arg)")
        fixed = sorted(d for d in plan.fixed if d in sizes)
        text = _render(g, plan.grid, returned, fixed, list(dtypes), command, kernel_ref)
        _write(out_path, text)
        if not check:
            return g
        # a layout can run and still be wrong (a tensor too small for what the launcher views
        # it as: the kernel reads past it): the first layout whose self-check passes is kept
        g.check = self_check(out_path, path)
        if g.check.passed:
            if first is not None:
                g.notes.append(f"{n} earlier layout(s) ran but failed the self-check (the first: "
                               f"{first[0].check.detail if first[0].check else '?'})")
            return g
        first = first or (g, text)
        if n + 1 >= MAX_CHECKED:
            break
    assert first is not None  # _probe yields at least once or raises
    _write(out_path, first[1])
    return first[0]


def _write(out_path: Path, text: str) -> None:
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"{out_path}: cannot write the harness: {e.strerror or e}") from e
    try:  # rewritten within a second at the same length, a stale bytecode cache could be loaded
        Path(importlib.util.cache_from_source(str(out_path))).unlink(missing_ok=True)
    except (OSError, NotImplementedError, ValueError):
        pass


def self_check(harness: Path, kernel_file: Path) -> SelfCheck:
    """The original against itself through the harness: the same-results stage of
    ``skel verify`` (named shapes, two seeds, fresh shapes), on the CPU."""
    h = Harness.from_file(harness)
    mod = rt.load_kernel_module(kernel_file, getattr(h.module, "BARE_PACKAGES", False),
                                getattr(h.module, "STUBS", ()))
    fn = h.module.launcher_for(mod)
    try:
        res = correctness.same_results(h, fn, fn, shape_names=list(h.cpu_shapes), dtypes=list(h.dtypes), seed=0,
                                       device="cpu", fresh=2)
    except Exception as e:  # noqa: BLE001 - the harness itself fails: reported, never trusted
        return SelfCheck(False, f"the harness fails: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
    if res.verdict:
        return SelfCheck(False, f"the original disagrees with itself: {res.detail}", res.checked)
    if not res.checked:
        why = "; ".join(res.inconclusive[:2]) or "no case ran"
        return SelfCheck(False, f"nothing checked: {why}")
    return SelfCheck(True, f"{len(res.checked)} case(s): the original matches itself", res.checked)
