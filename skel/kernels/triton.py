"""The Triton extractor: Triton kernels in a Python file → the kernel model, from one
libcst parse.

Both the miner (over whole repositories) and the retriever (over the user's kernel) use it,
so a condition sees the same facts in both places. Each kernel-bearing file is parsed once;
the kernels are found with a plain walk; positions (lines and source text) come from one
code-generation pass over each kernel function (``skel.kernels.positions``), so host code
never pays for them; and the parsed kernel stays attached to its facts
(:class:`skel.kernels.model.Syntax`) for the data-flow view, which therefore never parses
again.
"""

from __future__ import annotations

import gc
import re
from dataclasses import replace

import libcst as cst

from skel.kernels.backends import backend_hint
from skel.kernels.comments import block_end, notes_of
from skel.kernels.dtypes import value_dtype
from skel.kernels.model import Assign, Call, Decorator, KernelFacts, Launch, Loop, Param, ParseError, Syntax  # noqa: F401 - ParseError is re-exported
from skel.kernels.positions import Positions
from skel.kernels.tree import Walker, descendants, dotted, name_reads, parse_module

#: Files not containing this text cannot hold a Triton kernel: skip them before parsing.
KERNEL_HINT = re.compile(r"\bjit\b")

#: How many times this process has parsed Python source (tests count it: one per file).
PARSES = 0

_MAX_TEXT = 160


# ---------------------------------------------------------------------------------------
# name canonicalisation
# ---------------------------------------------------------------------------------------


class Aliases:
    """Maps local import names to canonical ``triton`` / ``tl`` spellings."""

    def __init__(self) -> None:
        self.map: dict[str, str] = {"triton": "triton", "tl": "tl"}
        # `jit` names imported from the project itself; they count as `triton.jit` only
        # in a file that imports triton (a stray `from utils import jit` elsewhere is not)
        self.project_jit: set[str] = set()
        self.imports_triton = False

    def add_import(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for a in node.names:
                full = dotted(a.name)
                local = a.asname.name.value if a.asname and isinstance(a.asname.name, cst.Name) else full
                if full.startswith("triton"):
                    self.map[local] = self._canon(full)
                    self.imports_triton = True
            return
        module = dotted(node.module) if node.module else ""
        if isinstance(node.names, cst.ImportStar):
            return
        if not module.startswith("triton"):
            self._project_jit(node, module)
            return
        self.imports_triton = True
        for a in node.names:
            name = dotted(a.name)
            local = a.asname.name.value if a.asname and isinstance(a.asname.name, cst.Name) else name
            self.map[local] = self._canon(f"{module}.{name}")

    def _project_jit(self, node: cst.ImportFrom, module: str) -> None:
        """``from .. import jit`` / ``from .utils import jit``: a project re-export of
        ``triton.jit`` (serving code wraps it to add its own hooks). A ``jit`` from another
        compiler (numba, jax, torch ...) is not one."""
        relative = bool(node.relative)
        if not relative and module.split(".")[0] in _OTHER_JITS:
            return
        assert not isinstance(node.names, cst.ImportStar)
        for a in node.names:
            if dotted(a.name) != "jit":
                continue
            local = a.asname.name.value if a.asname and isinstance(a.asname.name, cst.Name) else "jit"
            if relative or module:
                self.project_jit.add(local)

    @staticmethod
    def _canon(full: str) -> str:
        if full == "triton.language" or full.startswith("triton.language."):
            return "tl" + full[len("triton.language"):]
        return full

    def canonical(self, name: str) -> str:
        if not name:
            return name
        head, _, rest = name.partition(".")
        base = self.map.get(head)
        if base is None:
            if not rest and head in self.project_jit and self.imports_triton:
                return "triton.jit"
            return name
        full = f"{base}.{rest}" if rest else base
        return self._canon(full) if full.startswith("triton.language") else full


_JIT = {"triton.jit"}
#: compilers whose `jit` decorator is not Triton's: `from numba import jit` is not a kernel
_OTHER_JITS = {"numba", "jax", "torch", "cupy", "taichi", "mlx", "tensorflow", "numpy", "pythran", "warp"}
_KERNEL_DECORATORS = {"triton.jit", "triton.autotune", "triton.heuristics"}


def _decorator_name(dec: cst.Decorator, aliases: Aliases) -> str:
    expr = dec.decorator
    if isinstance(expr, cst.Call):
        expr = expr.func
    return aliases.canonical(dotted(expr))


def is_kernel(func: cst.FunctionDef, aliases: Aliases) -> bool:
    return any(_decorator_name(d, aliases) in _JIT for d in func.decorators)


# ---------------------------------------------------------------------------------------
# extraction
# ---------------------------------------------------------------------------------------

_EMPTY = cst.Module(body=[])


def squeeze(text: str, limit: int = _MAX_TEXT) -> str:
    """Source text on one line (whitespace runs collapsed), cut at ``limit``."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def host_code(node: cst.CSTNode, limit: int = _MAX_TEXT) -> str:
    """Text of a host-side node (no positions are computed for host code)."""
    return squeeze(_EMPTY.code_for_node(node), limit)


class _Texts:
    """Host nodes by name (module constants, a launching function's assignments), their
    source text generated when first read: generating code is the costly part of host
    facts, and most of these are never read (only names a kernel uses, or a launch's
    `**config`, are)."""

    def __init__(self, limit: int) -> None:
        self.nodes: dict[str, cst.CSTNode] = {}  # a rebinding keeps the name's first place
        self.limit = limit
        self._texts: dict[str, str] = {}

    def __setitem__(self, name: str, node: cst.CSTNode) -> None:
        self.nodes[name] = node
        self._texts.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self.nodes

    def __getitem__(self, name: str) -> str:
        text = self._texts.get(name)
        if text is None:
            text = self._texts[name] = host_code(self.nodes[name], self.limit)
        return text


def _kwargs(call: cst.Call, code=host_code) -> tuple[list[str], dict[str, str]]:
    args, kwargs = [], {}
    for a in call.args:
        if a.keyword is not None:
            kwargs[a.keyword.value] = code(a.value)
        elif not a.star:
            args.append(code(a.value))
    return args, kwargs


def _read_configs(value: cst.BaseExpression, d: Decorator,
                  scope: dict[str, cst.CSTNode] | None = None) -> None:
    """Count the `triton.Config(...)` entries and collect every key they set.

    ``scope``: the module's constants and (non-kernel) functions by name. Configs are often
    built elsewhere in the file — `configs=CONFIGS`, `configs=gen_config()` (a helper that
    returns a comprehension or appends in a loop), `triton.Config({...}, **opts)` with the
    options in a module list of dicts — so the nodes the configs read are read too: the
    keys of a `**opts` spread are those of the dict literals (`{"num_stages": s}`,
    `dict(num_stages=s)`) among them, and a `cfg.pre_hook = ...` set on built configs
    counts as a `pre_hook` key."""
    nodes = _config_nodes(value, scope or {})
    keys: set[str] = set()
    count = 0
    generated = any(descendants(n, (cst.ListComp, cst.GeneratorExp, cst.For, cst.While)) for n in nodes)
    spread = False
    for root in nodes:
        for node in descendants(root, cst.Call):
            if dotted(node.func).split(".")[-1] == "Config":
                count += 1
                for a in node.args:
                    if a.star == "**":
                        spread = True
                    elif a.keyword is not None:
                        keys.add(a.keyword.value)
                    elif isinstance(a.value, cst.Dict):
                        keys.update(_dict_keys(a.value))
    if spread:  # `triton.Config({...}, **opts)`: what the dicts around it set
        for root in nodes:
            for dnode in descendants(root, cst.Dict):
                keys.update(_dict_keys(dnode))
            for call in descendants(root, cst.Call):
                if dotted(call.func) == "dict":
                    keys.update(a.keyword.value for a in call.args if a.keyword is not None)
    for root in nodes:
        for target in descendants(root, cst.AssignTarget):
            if isinstance(target.target, cst.Attribute) and target.target.attr.value == "pre_hook":
                keys.add("pre_hook")
    d.config_count = -1 if generated else count
    d.config_keys = sorted(keys)


def _dict_keys(node: cst.Dict) -> set[str]:
    return {str(e.key.evaluated_value) for e in node.elements
            if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)}


def _config_nodes(value: cst.BaseExpression, scope: dict[str, cst.CSTNode]) -> list[cst.CSTNode]:
    """``value`` and what it reads from the module, a few levels deep: the constants it
    names and the bodies of the module functions it calls (`gen_config()`)."""
    nodes: list[cst.CSTNode] = [value]
    seen: set[str] = set()
    todo: list[cst.CSTNode] = [value]
    while todo and len(seen) < 16:
        node = todo.pop()
        for n in descendants(node, cst.Name):
            if n.value in scope and n.value not in seen:
                seen.add(n.value)
                nodes.append(scope[n.value])
                todo.append(scope[n.value])
    return nodes


class _KernelVisitor(Walker):
    def __init__(self, facts: KernelFacts, aliases: Aliases, positions: Positions) -> None:
        self.pos = positions
        self.f = facts
        self.al = aliases
        self.loops: list[Loop] = []
        self.assigned: list[set[str]] = []  # per open loop: names its body assigns
        self.assign_targets: list[str] = []

    # positions --------------------------------------------------------------------------
    def _line(self, node: cst.CSTNode) -> int:
        return self.pos.line(node)

    def _end(self, node: cst.CSTNode) -> int:
        return self.pos.end_line(node)

    def code(self, node: cst.CSTNode, limit: int = _MAX_TEXT) -> str:
        return squeeze(self.pos.source(node), limit)

    def _loop_ctx(self) -> tuple[int, int]:
        return len(self.loops), (self.loops[-1].line if self.loops else 0)

    # structure ---------------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if self.f.params:  # nested helper function: facts still count, params do not
            return True
        for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            ann = self.code(p.annotation.annotation) if p.annotation else ""
            self.f.params.append(
                Param(
                    name=p.name.value,
                    annotation=ann,
                    constexpr=self.al.canonical(ann) in ("tl.constexpr", "constexpr"),
                    default=self.code(p.default) if p.default else "",
                )
            )
        for dec in node.decorators:
            self.f.decorators.append(self._decorator(dec))
        # decorator arguments (autotune configs) are recorded above, not as kernel calls
        self.walk(node.params)
        self.walk(node.body)
        return False

    def visit_Return(self, node: cst.Return) -> bool:
        if node.value is not None:
            self.f.returns_value = True
        return True

    def _decorator(self, dec: cst.Decorator) -> Decorator:
        name = _decorator_name(dec, self.al)
        d = Decorator(name=name, line=self._line(dec))
        expr = dec.decorator
        if not isinstance(expr, cst.Call):
            return d
        _, d.kwargs = _kwargs(expr, self.code)
        if name != "triton.autotune" and {"configs", "key"} <= set(d.kwargs):
            # a project's own autotuner (`@fla_cache_autotune(configs=..., key=...)`, FlagGems'
            # `@libtuner`): same contract as triton.autotune, so conditions treat it as one
            d.name, d.spelling, name = "triton.autotune", name, "triton.autotune"
        for a in expr.args:
            if a.star:  # `**autotune_cache_kwargs`: not the configs
                continue
            if a.keyword is None and isinstance(a.value, cst.Dict):  # heuristics({...})
                d.list_items += [self.code(e.key) for e in a.value.elements if isinstance(e, cst.DictElement)]
            if a.keyword and a.keyword.value == "key" and isinstance(a.value, (cst.List, cst.Tuple)):
                d.list_items += [self.code(e.value) for e in a.value.elements]
            if a.keyword and a.keyword.value == "configs" or (name == "triton.autotune" and a.keyword is None):
                _read_configs(a.value, d)
        return d

    def visit_For(self, node: cst.For) -> bool:
        kind = "iter"
        args: list[str] = []
        kwargs: dict[str, str] = {}
        if isinstance(node.iter, cst.Call):
            kind = self.al.canonical(dotted(node.iter.func)) or "iter"
            args, kwargs = _kwargs(node.iter, self.code)
        targets = [n.value for n in name_reads(node.target)]
        self._assigned(node.target)  # an inner loop's variable is assigned in the outer loops
        self._open(Loop(
            line=self._line(node), end_line=self._end(node), kind=kind, args=args, kwargs=kwargs,
            depth=len(self.loops) + 1, targets=targets,
        ))
        return True

    def leave_For(self, node: cst.For) -> None:
        self._close()

    def visit_While(self, node: cst.While) -> bool:
        self._open(Loop(
            line=self._line(node), end_line=self._end(node), kind="while", args=[self.code(node.test)],
            depth=len(self.loops) + 1,
        ))
        return True

    def leave_While(self, node: cst.While) -> None:
        self._close()

    # every name (re)assigned in a loop's body, collected during the one walk: an open
    # loop's set grows as its body is visited and joins its parent's when the loop closes
    def _open(self, loop: Loop) -> None:
        self.f.loops.append(loop)
        self.loops.append(loop)
        self.assigned.append(set())

    def _close(self) -> None:
        names = self.assigned.pop()
        self.loops.pop().assigned = sorted(names)
        if self.assigned:
            self.assigned[-1] |= names

    def _assigned(self, target: cst.CSTNode) -> None:
        if self.assigned:
            self.assigned[-1].update(n.value for n in name_reads(target))

    def visit_If(self, node: cst.If) -> bool:
        returns = any(isinstance(s, cst.SimpleStatementLine) and any(isinstance(x, cst.Return) for x in s.body)
                      for s in node.body.body) if isinstance(node.body, cst.IndentedBlock) else False
        self.f.ifs.append({
            "line": self._line(node), "test": self.code(node.test),
            "names": sorted({n.value for n in name_reads(node.test)}), "returns": returns,
            "loop_depth": len(self.loops),
        })
        return True

    # statements --------------------------------------------------------------------------
    def _record_assign(self, node, targets: list[str], op: str, value: cst.BaseExpression) -> None:
        depth, loop_line = self._loop_ctx()
        value_text = self.code(value, 400)
        calls = sorted({self._call_name(c) for c in descendants(value, cst.Call)})
        self.f.assigns.append(Assign(
            line=self._line(node), targets=targets, op=op, value=value_text[:_MAX_TEXT],
            names=sorted({n.value for n in name_reads(value)}), calls=calls,
            loop_depth=depth, loop_line=loop_line,
        ))
        dt = value_dtype(value_text)
        for t in targets:
            if dt:
                self.f.var_dtypes[t] = dt
            elif op == "=" and t in self.f.var_dtypes and "tl.dot" not in calls:
                # reassigned from something we cannot type: forget what we knew
                self.f.var_dtypes.pop(t, None)

    def visit_Assign(self, node: cst.Assign) -> bool:
        for t in node.targets:
            self._assigned(t.target)
        targets = [self.code(t.target) for t in node.targets]
        self._record_assign(node, targets, "=", node.value)
        self.assign_targets.append(targets[0] if targets else "")
        return True

    def leave_Assign(self, node: cst.Assign) -> None:
        self.assign_targets.pop()

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        op = self.code(node.operator).strip()
        self._assigned(node.target)
        self._record_assign(node, [self.code(node.target)], op, node.value)
        self.assign_targets.append(self.code(node.target))
        return True

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        self.assign_targets.pop()

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        self._assigned(node.target)
        if node.value is not None:
            self._record_assign(node, [self.code(node.target)], "=", node.value)
        return True

    # expressions -------------------------------------------------------------------------
    def _call_name(self, node: cst.Call) -> str:
        name = self.al.canonical(dotted(node.func))
        if isinstance(node.func, cst.Attribute) and not name.startswith(("tl.", "triton.")):
            head = dotted(node.func.value)
            if not head or head.split(".")[0] not in self.al.map:
                # `b_q.to(...)`, `tl.load(p).to(...)`: a method call on a value; keep the method
                return "." + node.func.attr.value
        return name or "<call>"

    def visit_Call(self, node: cst.Call) -> bool:
        name = self._call_name(node)
        args, kwargs = _kwargs(node, self.code)
        depth, loop_line = self._loop_ctx()
        receiver = self.code(node.func.value) if isinstance(node.func, cst.Attribute) and name.startswith(".") else ""
        self.f.calls.append(Call(
            name=name, line=self._line(node), args=args, kwargs=kwargs, loop_depth=depth,
            loop_line=loop_line, receiver=receiver,
            target=self.assign_targets[-1] if self.assign_targets else "",
        ))
        return True

    # first occurrences only: the line is looked up once per distinct name, not per use
    def visit_Name(self, node: cst.Name) -> None:
        if node.value not in self.f.names:
            self.f.names[node.value] = self._line(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        name = self.al.canonical(dotted(node))
        if name and name not in self.f.attributes:
            self.f.attributes[name] = self._line(node)
        return True

    def visit_Float(self, node: cst.Float) -> None:
        if node.value not in self.f.constants:
            self.f.constants[node.value] = self._line(node)

    visit_Integer = visit_Float


#: launch keywords that are Triton's own meta-parameters (tile constexprs are upper case)
_META_KWARGS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu")
_SOURCE_NAMES, _SOURCE_VALUES = 6, 6  # names followed per meta-parameter, values kept per name


class _HostVisitor(Walker):
    """Finds ``kernel[grid](...)`` launches and what their host function does (no positions).

    A grid is *callable* when it is a lambda, or a name bound to a lambda or to a
    ``def grid(meta)`` in the launching function or at module level.
    """

    def __init__(self, aliases: Aliases, grid_funcs: set[str], constants: _Texts | None = None) -> None:
        self.al = aliases
        self.constants = constants if constants is not None else _Texts(200)  # module-level `NAME = <expr>`
        self._host_assigns = _Texts(400)  # the launching function's `name = value`, latest first
        # every `name = value` of the launching function so far, with the `if` tests around it
        self._assign_log: dict[str, list[tuple[cst.BaseExpression, tuple[cst.BaseExpression, ...]]]] = {}
        self._tests: list[cst.BaseExpression] = []  # the `if` tests around the current statement
        # the same as text, negated in an `else`/`elif` arm (`not (kv_group_num == 1)`): a launch's guards
        self._guards: list[str] = []
        self._orelse: dict[int, int] = {}  # id(an if's else arm) -> its test's place in _guards
        self._texts: dict[tuple[int, int], str] = {}  # (id(node), limit) -> its code, for this function
        self.grid_funcs = grid_funcs  # module-level callables usable as grids
        self.launches: list[Launch] = []
        self.calls: set[str] = set()
        self.function = ""
        self._top: cst.FunctionDef | None = None
        self._first_launch = 0
        self._local_callables: set[str] = set()
        self._host_calls: set[str] = set()
        self._host_names: set[str] = set()
        self._host_seq: list[str] = []  # the launching function's calls, in source order
        # top-level host function -> the identifiers its body reads (for `Launch.helper_names`)
        self.function_names: dict[str, set[str]] = {}
        # top-level host function -> the names it returns (`return _w8a8_block_fp8_matmul`)
        self.function_returns: dict[str, set[str]] = {}
        # id(launch) -> the names the launched local may hold (`kernel = pick(...)` -> {"pick()"})
        self._launch_choices: dict[int, set[str]] = {}
        # id(launch call node) -> [launch, calls seen before it, calls seen once its arguments are done]
        self._launch_nodes: dict[int, list] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if self._top is None:
            self.function = node.name.value
            self._top = node
            self._first_launch = len(self.launches)
            self._local_callables, self._host_calls, self._host_names = set(), set(), set()
            self._host_seq, self._launch_nodes = [], {}
            self._host_assigns, self._assign_log, self._tests, self._texts = _Texts(400), {}, [], {}
            self._guards, self._orelse = [], {}
        else:
            self._local_callables.add(node.name.value)  # nested `def grid(meta)`
        return True

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._top is not node:
            return
        self.function_names.setdefault(node.name.value, set()).update(self._host_names)
        for ln in self.launches[self._first_launch:]:
            if ln.grid in self._local_callables:
                ln.grid_is_callable = True
            ln.host_calls = sorted(self._host_calls)
            ln.host_names = sorted(self._host_names)
        for launch, start, end in self._launch_nodes.values():
            launch.calls_before = self._host_seq[:start]
            launch.calls_after = self._host_seq[end:]
        self._top, self.function = None, ""

    def visit_If(self, node: cst.If) -> bool:
        if self._top is not None:
            self._tests.append(node.test)
            self._else_arm(node)
            self._guards.append(host_code(node.test))
            if node.orelse is not None:
                self._orelse[id(node.orelse)] = len(self._guards) - 1
        return True

    def leave_If(self, node: cst.If) -> None:
        if self._top is not None:
            self._tests.pop()
            self._guards.pop()

    def visit_Else(self, node: cst.Else) -> bool:
        if self._top is not None:
            self._else_arm(node)
        return True

    def _else_arm(self, node: cst.CSTNode) -> None:
        """Entering the `else`/`elif` arm of an `if`: its guard holds negated there."""
        at = self._orelse.pop(id(node), None)
        if at is not None:
            self._guards[at] = f"not ({self._guards[at]})"

    def visit_Assign(self, node: cst.Assign) -> bool:
        if self._top is not None:
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    self._host_assigns[t.target.value] = node.value
                self._log_assign(t.target, node.value)
        if isinstance(node.value, cst.Lambda):
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    (self._local_callables if self._top else self.grid_funcs).add(t.target.value)
        return True

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        if self._top is not None:
            self._log_assign(node.target, node.value)
        return True

    def _log_assign(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """Note `name = value` (each name of `a, b = f(x)` gets `f(x)`; `a, b = x, y` pairs up)."""
        if isinstance(target, cst.Name):
            self._assign_log.setdefault(target.value, []).append((value, tuple(self._tests)))
        elif isinstance(target, (cst.Tuple, cst.List)):
            values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
            if values is not None and len(values) != len(target.elements):
                values = None
            for i, e in enumerate(target.elements):
                self._log_assign(e.value, values[i].value if values is not None else value)

    def _kwarg_sources(self, call: cst.Call) -> dict[str, list[str]]:
        """For each launch meta-parameter passed as a name the launching function assigned
        (`num_warps=num_warps`, `BLOCK_M=BLOCK_M`): what it was assigned so far, each value
        with the `if` tests it sits under (`4`, `max(16, 8192 // BLOCK_DK) [if _nv_cap[0] < 8]`),
        then, a few levels deep, what the names those read were assigned (`_nv_cap =
        torch.cuda.get_device_capability() [if _nv_cap is None]`). It tells a literal
        reached through a local from a value chosen per GPU or per shape."""
        out: dict[str, list[str]] = {}
        for a in call.args:
            if a.keyword is None or not isinstance(a.value, cst.Name) or a.value.value not in self._assign_log:
                continue
            kw = a.keyword.value
            if not (kw in _META_KWARGS or not any(ch.islower() for ch in kw) or "split" in kw.lower()):
                continue
            out[kw] = self._sources(a.value.value)
        return out

    def _grid_sources(self, grid: cst.BaseExpression) -> list[str]:
        """What the launching function assigned to the names a grid reads (`grid = (grid_m,)`
        after `grid_m = min(m, 8192)`), as `name = value` lines."""
        out: list[str] = []
        for n in descendants(grid, cst.Name) if not isinstance(grid, cst.Name) else [grid]:
            if n.value in self._assign_log:
                out += [t for t in self._sources(n.value, named=True) if t not in out]
        return out

    def _sources(self, first: str, named: bool = False) -> list[str]:
        """The values assigned to ``first`` (bare unless ``named``, each with the `if` tests
        around it), then those of the names they read (`name = value`), a few levels deep."""
        texts: list[str] = []
        todo, seen = [first], set[str]()
        while todo and len(seen) < _SOURCE_NAMES:
            name = todo.pop(0)
            if name in seen:
                continue
            seen.add(name)
            for value, tests in self._assign_log.get(name, [])[-_SOURCE_VALUES:]:
                text = self._code(value, 200)
                cond = "; ".join(self._code(t, 120) for t in tests)
                text = f"{text} [if {cond}]" if cond else text
                # the parameter's own values bare, those of names they read as `name = value`
                texts.append(text if name == first and not named else f"{name} = {text}")
                todo.extend(n.value for n in descendants(value, cst.Name) if n.value in self._assign_log)
                for t in tests:
                    todo.extend(n.value for n in descendants(t, cst.Name) if n.value in self._assign_log)
        return texts

    def _code(self, node: cst.CSTNode, limit: int) -> str:
        """`host_code`, once per node: launches of one function share their locals' values."""
        key = (id(node), limit)
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = host_code(node, limit)
        return text

    def visit_Name(self, node: cst.Name) -> None:
        if self._top is not None:
            self._host_names.add(node.value)

    def visit_Return(self, node: cst.Return) -> bool:
        if self._top is not None and isinstance(node.value, cst.Name):
            self.function_returns.setdefault(self.function, set()).add(node.value.value)
        return True

    def _choices(self, name: str) -> set[str]:
        """What a local launched as a kernel may hold: the names assigned to it
        (`kernel = _fwd_kernel`, either arm of `a if c else b`) and, as `f()`, the functions
        whose result was assigned (`kernel = select_kernel(M, N, config)`)."""
        out: set[str] = set()
        for value, _ in self._assign_log.get(name, []):
            todo = [value]
            while todo:
                v = todo.pop()
                if isinstance(v, cst.Name):
                    out.add(v.value)
                elif isinstance(v, cst.IfExp):
                    todo += [v.body, v.orelse]
                elif isinstance(v, cst.Call) and isinstance(v.func, cst.Name):
                    out.add(v.func.value + "()")
        return out

    def visit_Call(self, node: cst.Call) -> bool:
        func = node.func
        if isinstance(func, cst.Subscript):
            kernel = dotted(func.value)
            dims = [e.slice.value for e in func.slice if isinstance(e.slice, cst.Index)]
            if kernel and dims and len(dims) == len(func.slice):
                # `k[grid](...)`, or `k[NT, B * H](...)`: a tuple grid written without parentheses
                grid_node = dims[0] if len(dims) == 1 else None
                grid = host_code(dims[0]) if grid_node is not None else "(" + ", ".join(map(host_code, dims)) + ")"
                args, kwargs = _kwargs(node)
                launch = Launch(
                    kernel=kernel.split(".")[-1], line=0, grid=grid, args=args,
                    guards=list(self._guards) if self._top is not None else [],
                    grid_is_callable=isinstance(grid_node, cst.Lambda) or (
                        isinstance(grid_node, cst.Name) and grid_node.value in self.grid_funcs),
                    kwargs=kwargs, host_function=self.function,
                    star_kwargs=[host_code(a.value) for a in node.args if a.star == "**"],
                )
                launch.star_sources = [self._star_source(a.value) for a in node.args if a.star == "**"]
                if self._top is not None:
                    if "." not in kernel and kernel in self._assign_log:
                        self._launch_choices[id(launch)] = self._choices(kernel)
                    launch.kwarg_sources = self._kwarg_sources(node)
                    launch.grid_sources = self._grid_sources(dims[0] if grid_node is not None
                                                             else cst.Tuple([cst.Element(d) for d in dims]))
                self.launches.append(launch)
                if self._top is not None:
                    self._launch_nodes[id(node)] = [launch, len(self._host_seq), len(self._host_seq)]
        else:
            name = self.al.canonical(dotted(func))
            if name:
                self.calls.add(name)
                if self._top is not None:
                    self._host_calls.add(name)
                    self._host_seq.append(name)
        return True

    def _star_source(self, value: cst.BaseExpression) -> str:
        """Where a `**config` dict comes from: the value the launching function last
        assigned to that name (`get_config(M, E)`, a dict literal), else the module
        constant of that name, else the expression itself (`configs[key]`, `self.cfg`)."""
        name = dotted(value)
        if name in self._host_assigns:
            text = self._host_assigns[name]
        elif name in self.constants:
            text = self.constants[name]
        else:
            text = host_code(value, 400)
        # the module tables it reads, spelled out: `_TUNED[str(M)]` -> `... [_TUNED = json.load(f)]`
        tables = [f"[{n} = {self.constants[n]}]" for n in dict.fromkeys(re.findall(r"[A-Za-z_]\w*", text))
                  if n in self.constants and n != name]
        return " ".join([text, *tables])

    def leave_Call(self, node: cst.Call) -> None:
        entry = self._launch_nodes.get(id(node))
        if entry is not None:  # calls inside the launch's own arguments are neither before nor after
            entry[2] = len(self._host_seq)



def extract_file(source: str, path: str = "<string>", *, helpers: bool = False) -> list[KernelFacts]:
    """All Triton kernels in ``source``, with their facts. Raises ParseError.

    ``@triton.jit`` device helpers (see :func:`device_helpers`) are not kernels: their
    facts are folded into the kernels that call them, and they are left out of the result
    unless ``helpers`` is set."""
    if not KERNEL_HINT.search(source):
        return []
    global PARSES
    PARSES += 1
    try:
        module = parse_module(source)
    except (cst.ParserSyntaxError, RecursionError, ValueError) as exc:
        msg = str(exc).strip().splitlines()
        raise ParseError(msg[0] if msg else type(exc).__name__) from exc
    # The tree is large and acyclic (refcounting frees it). Without this, every cyclic-GC
    # pass during extraction rescans all of it: about a tenth of the extraction's time.
    # Freezing only exempts what exists now from those scans, and unfreezing at the end
    # hands it back as it was.
    gc.freeze()
    try:
        found = _extract(module, source, path)
    finally:
        gc.unfreeze()
    if found:
        _attach_notes(found, source)
    helper_names = device_helpers(found)
    # fold from each function's own facts, not from a helper already folded into
    own = {h.name: replace(h, calls=list(h.calls), loops=list(h.loops), assigns=list(h.assigns), notes=list(h.notes),
                           ifs=list(h.ifs)) for h in found}
    for k in found:
        _fold_helpers(k, {name: h for name, h in own.items() if name != k.name})
        if k.folded and k.syntax is not None:
            trees = [own[n].syntax for n in k.folded]
            k.syntax.helpers = [(t.node, t.positions) for t in trees if t is not None]
    return found if helpers else [k for k in found if k.name not in helper_names]


# ---------------------------------------------------------------------------------------
# device helpers
# ---------------------------------------------------------------------------------------

_POINTER_CALLS = {"tl.load", "tl.store", "tl.make_block_ptr", "tl.make_tensor_descriptor"}


def _pointer_params(k: KernelFacts) -> set[str]:
    """Parameters that memory is read or written through (directly or via local names)."""
    params = {p.name for p in k.params if not p.constexpr}
    out = {p.name for p in k.params if "pointer" in p.annotation}
    defs: dict[str, set[str]] = {}
    for a in k.assigns:
        for t in a.targets:
            defs.setdefault(t.strip(), set()).update(a.names)
    for c in k.calls:
        if c.name not in _POINTER_CALLS and not c.name.startswith("tl.atomic_"):
            continue
        text = c.args[0] if c.args else c.kwargs.get("pointer", c.kwargs.get("base", c.kwargs.get("ptr", "")))
        names = set(re.findall(r"[A-Za-z_]\w*", text))
        for _ in range(4):
            names |= {n for x in list(names) for n in defs.get(x, ())}
        out |= names & params
    return out


def device_helpers(found: list[KernelFacts]) -> set[str]:
    """Names of the ``@triton.jit`` functions of one file that are device helpers, not
    kernels. The rule, in order:

    1. launched in the file (``name[grid](...)``): a kernel;
    2. called from another ``@triton.jit`` function of the file: a helper (its facts are
       folded into its callers);
    3. called by no jit function of the file: a helper when it takes no pointer argument
       (nothing is loaded or stored through a parameter) and returns a value — ``tanh``,
       ``exp2`` or ``remap_xcd`` in a shared utilities module. A function that stores
       through a pointer, or returns nothing, stays a kernel: it can only be launched.
    """
    names = {k.name for k in found}
    called = {c.name for k in found for c in k.calls if c.name in names and c.name != k.name}
    launched = {ln.kernel for k in found for ln in k.launches}
    out = set()
    for k in found:
        if k.name in launched:
            continue
        if k.name in called or (k.returns_value and not _pointer_params(k)):
            out.add(k.name)
    return out


def _fold_helpers(k: KernelFacts, others: dict[str, KernelFacts]) -> None:
    """Fold the facts of the jit functions ``k`` calls (transitively) into ``k``. A call
    inside one of ``k``'s loops puts the helper's calls, loops and assignments at that
    loop depth; lines stay the helper's own (``KernelFacts.folded`` says which)."""
    queue = [(c, c.loop_depth, c.loop_line) for c in k.calls if c.name in others]
    while queue:
        site, depth, loop_line = queue.pop(0)
        name = site.name
        if name in k.folded or name == k.name:
            continue
        h = others[name]
        k.folded[name] = [h.line_start, h.line_end]
        k.assigns.extend(_bind_params(h, site, depth, loop_line))
        for c in h.calls:
            k.calls.append(replace(c, loop_depth=c.loop_depth + depth, loop_line=c.loop_line or loop_line))
            if c.name in others:
                queue.append((c, c.loop_depth + depth, c.loop_line or loop_line))
        k.loops.extend(replace(lp, depth=lp.depth + depth) for lp in h.loops)
        k.assigns.extend(replace(a, loop_depth=a.loop_depth + depth, loop_line=a.loop_line or loop_line)
                         for a in h.assigns)
        k.ifs.extend(dict(i, loop_depth=i.get("loop_depth", 0) + depth) for i in h.ifs)
        k.notes.extend(x for x in h.notes if not any(y["line"] == x["line"] for y in k.notes))
        for lines_of, theirs_at in ((k.names, h.names), (k.attributes, h.attributes), (k.constants, h.constants)):
            for key, line in theirs_at.items():
                lines_of.setdefault(key, line)
        for texts, theirs in ((k.var_dtypes, h.var_dtypes), (k.module_constants, h.module_constants)):
            for key, text in theirs.items():
                texts.setdefault(key, text)


_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)")


def _attach_notes(found: list[KernelFacts], source: str) -> None:
    """Give each jit function the comments and docstrings that speak about it (see
    ``KernelFacts.notes``). Helpers' notes reach the kernels calling them when folded."""
    lines = source.splitlines()
    notes = notes_of(source)
    defs: dict[str, list[tuple[int, int]]] = {}  # function name -> its (def line, last line) ranges
    tops: list[tuple[int, int]] = []  # top-level functions and classes, decorators included
    for n, text in enumerate(lines, 1):
        m = _DEF.match(text)
        if m:
            end = block_end(lines, n)
            defs.setdefault(m.group(1), []).append((n, end))
            if not text[0].isspace():
                first = n
                while first > 1 and lines[first - 2].startswith("@"):
                    first -= 1
                tops.append((first, end))
    starts = {a for a, _ in tops} | {a for k in found for a in (k.line_start,)}

    def owned(lo: int, hi: int) -> list[dict]:
        # notes inside [lo, hi], and the comment block ending right above it
        return [{"line": x.line, "text": x.text} for x in notes if lo <= x.line <= hi or x.end == lo - 1]

    module = [{"line": x.line, "text": x.text} for x in notes
              if x.indent == 0 and not any(a <= x.line <= b for a, b in tops) and x.end + 1 not in starts]
    for k in found:
        mine = owned(k.line_start, k.line_end)
        for host in dict.fromkeys(ln.host_function for ln in k.launches if ln.host_function):
            for a, b in defs.get(host, ()):
                mine += owned(a, b)
        k.notes = list({x["line"]: x for x in reversed(mine + module)}.values())[::-1]  # one per line


_IDENT = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


def _bind_params(h: KernelFacts, site: Call, depth: int, loop_line: int) -> list[Assign]:
    """The helper's parameters bound to what its first call site passes (`lo = 0`,
    `hi = start_m * BLOCK_M`), at the call's line: a bound computed in the kernel and used
    by a loop in the helper reads as the kernel's own."""
    bound = list(zip((p.name for p in h.params), site.args)) + [
        (p.name, site.kwargs[p.name]) for p in h.params if p.name in site.kwargs]
    return [Assign(line=site.line, targets=[name], op="=", value=text,
                   names=sorted(set(_IDENT.findall(text)) - {"tl", "triton"}),
                   calls=[], loop_depth=depth, loop_line=loop_line)
            for name, text in bound if text.strip() != name]


class _ModuleScan:
    """The module-level statements a file's kernels depend on: imports (aliases), constants,
    the kernels themselves (and which sit under an `if _is_hip:`), and `def grid(meta)`
    callables. A class, not a closure: a recursive nested function is a reference cycle,
    and it would keep the file's whole tree alive until the cyclic collector ran."""

    def __init__(self) -> None:
        self.aliases = Aliases()
        self.kernels: list[cst.FunctionDef] = []
        self.functions: dict[str, cst.FunctionDef] = {}  # the module's other functions (config builders ...)
        self.grid_funcs: set[str] = set()
        self.constants = _Texts(200)
        self.constant_nodes: dict[str, cst.BaseExpression] = {}
        self.on_rocm: set[int] = set()  # id() of kernels defined in the body of an `if _is_hip:`

    def walk(self, body, rocm: bool = False) -> None:
        aliases = self.aliases
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for s in stmt.body:
                    if isinstance(s, (cst.Import, cst.ImportFrom)):
                        aliases.add_import(s)
                    elif isinstance(s, (cst.Assign, cst.AnnAssign)) and s.value is not None:
                        target = s.target if isinstance(s, cst.AnnAssign) else s.targets[0].target
                        if isinstance(target, cst.Name):
                            self.constants[target.value] = s.value
                            self.constant_nodes[target.value] = s.value
            elif isinstance(stmt, cst.FunctionDef):
                if is_kernel(stmt, aliases):
                    self.kernels.append(stmt)
                    if rocm:
                        self.on_rocm.add(id(stmt))
                else:
                    self.functions.setdefault(stmt.name.value, stmt)
                    if stmt.params.params and stmt.params.params[0].name.value in ("meta", "META"):
                        self.grid_funcs.add(stmt.name.value)
            elif isinstance(stmt, (cst.If, cst.Try, cst.With)):
                self.walk(stmt.body.body, rocm or (isinstance(stmt, cst.If)
                                                   and _ROCM_TEST.fullmatch(host_code(stmt.test)) is not None))
                if isinstance(stmt, cst.If) and stmt.orelse is not None:
                    self.walk(stmt.orelse.body.body if isinstance(stmt.orelse, cst.Else) else [stmt.orelse], rocm)
            elif isinstance(stmt, cst.ClassDef):
                self.walk(stmt.body.body, rocm)


def _resolve_chosen(host: _HostVisitor, kernel_names: set[str]) -> list[Launch]:
    """Launches of a local that holds a kernel chosen in the launching function become
    launches of each jit function of the file it can hold: `kernel = select_kernel(M, N,
    config)` then `kernel[grid](..., **config)` launches what `select_kernel` returns
    (sglang's block-FP8 GEMM), so the kernel keeps its tuned-table launch."""
    out: list[Launch] = []
    for ln in host.launches:
        choices = host._launch_choices.get(id(ln))
        if ln.kernel in kernel_names or not choices:
            out.append(ln)
            continue
        held = {c for c in choices if not c.endswith("()")}
        for c in choices - held:
            held |= host.function_returns.get(c[:-2], set())
        chosen = sorted(held & kernel_names)
        out += [replace(ln, kernel=name, launched_as=ln.kernel) for name in chosen] or [ln]
    return out


def _extract(module: cst.Module, source: str, path: str) -> list[KernelFacts]:
    scan = _ModuleScan()
    scan.walk(module.body)
    aliases, kernels, grid_funcs = scan.aliases, scan.kernels, scan.grid_funcs
    constants, constant_nodes, on_rocm = scan.constants, scan.constant_nodes, scan.on_rocm
    if not kernels:
        return []

    host = _HostVisitor(aliases, grid_funcs, constants)
    for stmt in module.body:  # kernels themselves launch nothing: skip their bodies
        if not (isinstance(stmt, cst.FunctionDef) and stmt in kernels):
            host.walk(stmt)
    for ln in host.launches:  # what the same-file functions the launcher calls read (one level)
        called = {c.rpartition(".")[2] for c in ln.host_calls} - {ln.host_function}
        ln.helper_names = sorted({n for f in called & host.function_names.keys() for n in host.function_names[f]})
    lines = source.splitlines()
    launch_lines = _launch_lines(lines, {ln.kernel for ln in host.launches})
    for ln in host.launches:
        queue = launch_lines.get(ln.kernel)
        ln.line = queue.pop(0) if queue else 0
    host.launches = _resolve_chosen(host, {f.name.value for f in kernels})

    out: list[KernelFacts] = []
    search_from = 0
    hint = backend_hint(path, source)
    scope: dict[str, cst.CSTNode] = {**constant_nodes, **scan.functions}
    wraps = _WrapScan({f.name.value for f in kernels})
    # a wrapper call names a kernel right after `)(`: files without one (nearly all) skip the walk
    if re.search(r"\)\(\s*(?:" + "|".join(re.escape(n) for n in wraps.kernels) + r")\s*\)", source):
        module.visit(wraps)
    for func in kernels:
        def_line, search_from = _find_def(lines, func.name.value, search_from)
        # one code-generation pass over the kernel alone gives every node's line and text;
        # shifting by the real `def` line makes them the file's lines (a kernel inside a
        # class or an `if` is generated without its outer indentation)
        positions = Positions(func, module)
        positions.offset = def_line - positions.line(func.name)
        head = func.decorators[0] if func.decorators else func
        first = positions.line(head)  # the first decorator
        last = positions.end_line(func)
        facts = KernelFacts(
            name=func.name.value, path=path, line_start=max(first, 1), line_end=last,
            source="\n".join(lines[max(first, 1) - 1:last]),
        )
        _KernelVisitor(facts, aliases, positions).walk(func)
        facts.syntax = Syntax(func, positions, aliases)
        facts.launches = [ln for ln in host.launches if ln.kernel == facts.name]
        facts.module_calls = {c: 0 for c in sorted(host.calls)}
        facts.module_constants = {n: constants[n] for n in constants.nodes if n in facts.names}
        facts.backend_hint = hint or ("rocm" if id(func) in on_rocm else "")
        # `@triton.autotune(configs=CONFIGS | gen_config() | [... **opts ...])`: read the
        # configs with what they read from the module (constants, helper functions)
        for d, dec in zip(facts.decorators, func.decorators):
            configs = _configs_arg(dec) if d.name == "triton.autotune" else None
            if configs is not None:
                _read_configs(configs, d, scope)
        for wrapped, inner in wraps.found.get(facts.name, []):
            line = next((i + 1 for i, t in enumerate(lines) if re.match(rf"\s*{re.escape(wrapped)}\s*=", t)), 0)
            wrap = _wrapping_decorators(inner, aliases, line, scope)
            if wrap is None:
                continue
            facts.decorators.append(wrap)
            # launched by the wrapped name: those launches are this kernel's
            facts.launches += [replace(ln, kernel=facts.name, launched_as=wrapped)
                               for ln in host.launches if ln.kernel == wrapped]
        out.append(facts)
    return out


class _WrapScan(cst.CSTVisitor):
    """`X = triton.autotune(configs=..., key=...)(kernel)` anywhere in the module (inside an
    `if`/`try` too): the autotuner applied by a call instead of a decorator — GPTQModel wraps each
    `_impl` kernel twice this way (`custom_autotune.autotune(...)(_impl)`, small and large
    config sets) and launches the wrapped names. Kernel name -> [(wrapped name, the inner call)]."""

    def __init__(self, kernels: set[str]) -> None:
        self.kernels = kernels
        self.found: dict[str, list[tuple[str, cst.Call]]] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node.name.value not in self.kernels  # a kernel's body wraps nothing

    def visit_Assign(self, node: cst.Assign) -> None:
        v = node.value
        if not (isinstance(v, cst.Call) and isinstance(v.func, cst.Call) and len(node.targets) == 1
                and isinstance(node.targets[0].target, cst.Name)):
            return
        args = [a for a in v.args if a.keyword is None and not a.star]
        if len(args) == 1 and isinstance(args[0].value, cst.Name) and args[0].value.value in self.kernels:
            self.found.setdefault(args[0].value.value, []).append((node.targets[0].target.value, v.func))


def _wrapping_decorators(inner: cst.Call, aliases: Aliases, line: int,
                         scope: dict[str, cst.CSTNode]) -> Decorator | None:
    """The Decorator a call-wrapping autotuner stands for: `triton.autotune(...)`, or a project's
    own with `configs=` and `key=` (the same contract the decorator form is read by); None for any
    other wrapper (`functools.partial`, `torch.compile`)."""
    name = aliases.canonical(dotted(inner.func))
    _, kwargs = _kwargs(inner)
    d = Decorator(name=name, line=line, kwargs=kwargs)
    if name != "triton.autotune":
        if not {"configs", "key"} <= set(kwargs):
            return None
        d.name, d.spelling = "triton.autotune", name
    for a in inner.args:
        if a.keyword and a.keyword.value == "key" and isinstance(a.value, (cst.List, cst.Tuple)):
            d.list_items += [host_code(e.value) for e in a.value.elements]
    configs = _configs_arg(cst.Decorator(decorator=inner))
    if configs is not None:
        _read_configs(configs, d, scope)
    return d


def _configs_arg(dec: cst.Decorator) -> cst.BaseExpression | None:
    """The configs an autotune decorator is given (`configs=...`, or its first positional
    argument)."""
    expr = dec.decorator
    if not isinstance(expr, cst.Call):
        return None
    for a in expr.args:
        if a.keyword is not None and a.keyword.value == "configs":
            return a.value
    positional = [a for a in expr.args if a.keyword is None and not a.star]
    return positional[0].value if positional else None


#: an `if` whose test is only an is-this-ROCm flag (`_is_hip`, `is_hip()`,
#: `current_platform.is_rocm()`): kernels defined in its body are ROCm-only. A test with
#: anything more (`not _is_hip`, `_is_hip and x`) says nothing certain.
_ROCM_TEST = re.compile(r"(?i)(?:[A-Za-z_][\w.]*\.)?_?is_(?:hip|rocm|amd)\w*(?:\(\))?")


def _find_def(lines: list[str], name: str, start: int) -> tuple[int, int]:
    pat = re.compile(rf"^\s*(async\s+)?def\s+{re.escape(name)}\s*\(")
    for i in range(start, len(lines)):
        if pat.match(lines[i]):
            return i + 1, i + 1
    for i in range(0, len(lines)):  # defined out of order (e.g. inside an if/else)
        if pat.match(lines[i]):
            return i + 1, start
    return 1, start


def _launch_lines(lines: list[str], kernels: set[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    if not kernels:
        return out
    pat = re.compile(r"\b(" + "|".join(re.escape(k) for k in kernels) + r")\s*\[")
    for i, text in enumerate(lines):
        for m in pat.finditer(text):
            out.setdefault(m.group(1), []).append(i + 1)
    return out
