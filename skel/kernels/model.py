"""The kernel model: what skel knows about one GPU kernel, whatever language it is in.

A :class:`KernelFacts` holds what conditions read without re-parsing: the calls a kernel
makes (with keyword arguments, loop depth and line), its parameters, decorators, loops,
assignments, names, constants, inferred dtypes and where the host launches it. It is plain
data: the miner caches and stores it, the retriever reads it. A language's extractor
(``skel.kernels.triton`` for Triton) fills it from one parse, and attaches the parsed tree
(:class:`Syntax`) while it is alive so the data-flow view (``skel.kernels.flow``) is built
from the same tree instead of parsing again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any


class ParseError(Exception):
    """A source the extractor of its language cannot parse (invalid Python, for one)."""


@dataclass
class Call:
    """One call inside a kernel, e.g. ``tl.dot(a, b, input_precision="tf32x3")``."""

    name: str  # canonical dotted name: "tl.dot", "tl.load", ".to" for methods
    line: int
    args: list[str] = field(default_factory=list)  # positional arguments, as source text
    kwargs: dict[str, str] = field(default_factory=dict)  # keyword -> source text
    loop_depth: int = 0
    loop_line: int = 0  # line of the innermost enclosing loop, 0 outside loops
    receiver: str = ""  # for method calls: the object's source text
    target: str = ""  # name the call's result is assigned to (innermost assignment), if any


@dataclass
class Loop:
    line: int
    end_line: int
    kind: str  # "range", "tl.range", "tl.static_range", "while", or the iterator call name
    args: list[str] = field(default_factory=list)
    kwargs: dict[str, str] = field(default_factory=dict)
    depth: int = 1
    targets: list[str] = field(default_factory=list)
    assigned: list[str] = field(default_factory=list)  # names (re)assigned inside the loop


@dataclass
class Assign:
    line: int
    targets: list[str]
    op: str  # "=", "+=", ...
    value: str
    names: list[str]  # identifiers the value reads
    calls: list[str]  # canonical names of calls in the value
    loop_depth: int = 0
    loop_line: int = 0


@dataclass
class Param:
    name: str
    annotation: str = ""
    constexpr: bool = False
    default: str = ""


@dataclass
class Launch:
    """A host-side ``kernel[grid](..., num_warps=4)`` launch."""

    kernel: str
    line: int
    grid: str
    grid_is_callable: bool
    kwargs: dict[str, str] = field(default_factory=dict)
    host_function: str = ""
    # canonical names of every call in the launching host function (e.g. the
    # `torch.cuda.get_device_capability` that picks this launch's block sizes)
    host_calls: list[str] = field(default_factory=list)
    host_names: list[str] = field(default_factory=list)  # identifiers read in that function
    # identifiers read by the functions of the same file that the launching function calls
    # (`grid = _get_launch_config_2d(n)`, whose body reads `multi_processor_count`)
    helper_names: list[str] = field(default_factory=list)
    star_kwargs: list[str] = field(default_factory=list)  # `**config`: meta-parameters from a dict
    # for each `**` argument, where its dict comes from: what the launching function last
    # assigned to it (`get_config(M, E)`, `{"BLOCK_SIZE_M": 64, "num_warps": 4}`), else the
    # module constant of that name, else the expression itself
    star_sources: list[str] = field(default_factory=list)
    # for each meta-parameter passed as a local name (`num_warps=num_warps`): the values the
    # launching function assigned it, with the `if` tests around each (`4`,
    # `max(16, 8192 // BLOCK_DK) [if _nv_cap[0] < 8]`), then those of the names they read
    # (`_nv_cap = torch.cuda.get_device_capability()`)
    kwarg_sources: dict[str, list[str]] = field(default_factory=dict)
    # the same for the names the grid reads (`grid = (min(num_tokens, 8192),)`): a capped or
    # SM-sized grid is how a persistent launch shows on the host
    grid_sources: list[str] = field(default_factory=list)
    # the kernel as written at the launch when it was a local holding a kernel chosen there
    # (`kernel = select_matmul_kernel(M, N, config)` then `kernel[grid](...)`): `kernel`
    # names the jit function the chooser returns, `launched_as` the local
    launched_as: str = ""
    # canonical names of the launching function's calls before and after this launch, in
    # source order (method calls keep their receiver: `y.add_`): what the host does to the
    # kernel's inputs first (a prologue) and to its outputs afterwards (an epilogue)
    calls_before: list[str] = field(default_factory=list)
    calls_after: list[str] = field(default_factory=list)
    # the positional arguments as written (`x.stride(0)`, `1`), in order
    args: list[str] = field(default_factory=list)
    # the `if` tests the launch sits under in the launching function, innermost last, an
    # `else`/`elif` arm's negated (`not (kv_group_num == 1)`): when the host launches it
    guards: list[str] = field(default_factory=list)


@dataclass
class Decorator:
    name: str  # canonical: "triton.jit", "triton.autotune", "triton.heuristics", other
    line: int
    kwargs: dict[str, str] = field(default_factory=dict)
    # autotune only: number of triton.Config(...) literal entries (-1 when generated),
    # and every key named inside the configs (meta-parameters, num_warps, num_stages ...)
    config_count: int = 0
    config_keys: list[str] = field(default_factory=list)
    list_items: list[str] = field(default_factory=list)  # key=[...] / heuristics dict keys
    spelling: str = ""  # the name as written, when it differs from `name` (wrapper autotuners)


@dataclass
class KernelFacts:
    name: str
    path: str
    line_start: int
    line_end: int
    source: str
    params: list[Param] = field(default_factory=list)
    decorators: list[Decorator] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    assigns: list[Assign] = field(default_factory=list)
    names: dict[str, int] = field(default_factory=dict)  # identifier -> first line
    attributes: dict[str, int] = field(default_factory=dict)  # dotted attribute -> first line
    constants: dict[str, int] = field(default_factory=dict)  # numeric literal -> first line
    ifs: list[dict] = field(default_factory=list)  # {"line", "test", "names", "returns"}
    launches: list[Launch] = field(default_factory=list)
    module_calls: dict[str, int] = field(default_factory=dict)  # host calls in the file
    var_dtypes: dict[str, str] = field(default_factory=dict)  # var -> "fp32"|"lowp"|"fp8"
    # module-level `NAME = <expr>` assignments (source text), so a keyword passed as a
    # module constant (`input_precision=DOT_PRECISION`) can be resolved by conditions
    module_constants: dict[str, str] = field(default_factory=dict)
    # the accelerator the file is written for when its path or imports say so ("npu",
    # "mlu", ...); "" when it looks like ordinary CUDA/ROCm Triton
    backend_hint: str = ""
    # why, when the hint comes from the files that import this one rather than from its
    # own text (every importer imports it under `if _is_hip:`); see skel/kernels/importers.py
    backend_reason: str = ""
    # `@triton.jit` device helpers of the same file this kernel calls (transitively), by
    # name -> [first line, last line]: their calls, loops, assignments, names and constants
    # are folded into this kernel's (with the helper's own line numbers), so a technique
    # that lives in a helper is seen in the kernel that runs it
    folded: dict[str, list[int]] = field(default_factory=dict)
    # JSON tables of tuned launch configs beside the kernel's file (`configs/*.json`), set
    # by whoever knows the file's folder (the miner, `skel suggest`); the extractor reads
    # source text only
    config_tables: list[str] = field(default_factory=list)
    returns_value: bool = False  # a `return <value>` in the body (device helpers return)
    # the language the unit is written in ("triton", "cuda"): a skeleton is only judged on
    # units of its languages
    language: str = "triton"
    # "kernel"; "binding" for a host C++ function bound to Python (pybind11/nanobind);
    # "helper" for a device helper, returned only when asked for
    kind: str = "kernel"
    # a binding's `.def`s on the same owner (class or module), its own marked "self": what
    # a condition compares it with (a sibling that releases the GIL ...)
    bindings: list[dict] = field(default_factory=list)
    # C++ declared variable -> its type's text (`float4`, `__nv_bfloat162`)
    var_types: dict[str, str] = field(default_factory=dict)
    # what the authors wrote about this kernel, {"line", "text"} each: comments and
    # docstrings in the kernel (the comment right above it included), in the helpers it
    # calls, in the functions that launch it, and the module's own (its docstring, and
    # top-level comments not placed above another function)
    notes: list[dict] = field(default_factory=list)

    def helper_at(self, line: int) -> str:
        """The folded helper whose lines hold ``line`` ("" when it is the kernel's own)."""
        for name, (start, end) in self.folded.items():
            if start <= line <= end:
                return name
        return ""

    # --- convenience queries used by conditions -------------------------------------
    def calls_named(self, *names: str) -> list[Call]:
        wanted = set(names)
        return [c for c in self.calls if c.name in wanted]

    def decorator(self, name: str) -> Decorator | None:
        for d in self.decorators:
            if d.name == name:
                return d
        return None

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    #: the parsed tree while it is alive (never stored, never compared): set by the extractor
    syntax: Syntax | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """Plain data for the cache and the store (the tree is left out)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name != "syntax"}

    @classmethod
    def from_dict(cls, d: dict) -> "KernelFacts":
        d = dict(d)
        d.pop("syntax", None)
        d["params"] = [Param(**p) for p in d.get("params", [])]
        d["decorators"] = [Decorator(**x) for x in d.get("decorators", [])]
        d["calls"] = [Call(**x) for x in d.get("calls", [])]
        d["loops"] = [Loop(**x) for x in d.get("loops", [])]
        d["assigns"] = [Assign(**x) for x in d.get("assigns", [])]
        d["launches"] = [Launch(**x) for x in d.get("launches", [])]
        return cls(**d)

    def tokens(self) -> list[str]:
        """A bag of structural tokens: the kernel's fingerprint for similarity."""
        out: set[str] = set()
        out.update("call:" + c.name for c in self.calls)
        out.update("kw:" + c.name + "." + k for c in self.calls for k in c.kwargs)
        out.update("loop:" + lp.kind for lp in self.loops)
        out.update("dec:" + d.name for d in self.decorators)
        for p in self.params:
            out.add(("cparam:" if p.constexpr else "param:") + _param_shape(p.name))
        out.update("attr:" + a for a in self.attributes if a.startswith("tl."))
        if any(c.loop_depth for c in self.calls_named("tl.load")):
            out.add("shape:load-in-loop")
        if any(c.loop_depth for c in self.calls_named("tl.dot")):
            out.add("shape:dot-in-loop")
        if self.launches:
            out.update("launch:" + k for ln in self.launches for k in ln.kwargs)
        return sorted(out)

    def text(self) -> str:
        """The document embedded for vector search: the kernel's name, calls, loops and
        decorators as plain words.

        Kept short because the model's cost grows with its word pieces, and a mine embeds
        every kernel: ``tl.program_id`` is five pieces (``t ##l . program _ id``) where
        ``program id`` is two. So calls lose their module prefix, names are split at
        underscores, each word is said once, and ``jit``, which every kernel has, is left
        out. Parameters are left out too: their names (``x_ptr``, ``stride_xm``, ``BT``)
        were a third of the pieces, and the retrieval benchmark's dev split ranked as well
        without them (``benchmarks/performance/embed_text.py``; the README has the numbers). On
        fla-core and liger-kernel's 659 kernels the text went from 137 pieces (mean) to 46."""
        calls = _words(sorted({_unprefixed(c.name) for c in self.calls}))
        loops = " ".join(sorted({lp.kind for lp in self.loops})) or "none"
        decs = " ".join(sorted({_unprefixed(d.name) for d in self.decorators} - {"jit"})) or "none"
        return f"{self.language} kernel {_words([self.name])}. calls: {calls}. loops: {loops}. decorators: {decs}."


#: module prefixes a call or decorator name is said without (the longest that fits first)
_PREFIXES = ("tl.extra.cuda.libdevice.", "tl.math.", "libdevice.", "triton.language.", "tl.", "triton.")


def _unprefixed(name: str) -> str:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name.lstrip(".")  # a method call is stored as ".to"


def _words(names) -> str:
    """``names`` split at underscores, dots and spaces into words, each said once (first
    spelling kept), in order."""
    seen: set[str] = set()
    out: list[str] = []
    for name in names:
        for w in re.split(r"[_.\s]+", name):
            if w and w.lower() not in seen:
                seen.add(w.lower())
                out.append(w)
    return " ".join(out)


def _param_shape(name: str) -> str:
    """Collapse parameter names into families so similar kernels share tokens."""
    if name.isupper() or name.startswith(("BLOCK", "USE_", "HAS_", "IS_")):
        return name
    if name.endswith("_ptr") or name.endswith("ptr"):
        return "*_ptr"
    if name.startswith("stride"):
        return "stride*"
    return name.lower()



def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_record(v) if hasattr(v, "__dataclass_fields__") else v for v in value]
    if isinstance(value, dict):
        return dict(value)
    return value


def _record(item: Any) -> dict:
    """``dataclasses.asdict`` of a Call, Loop, Param ...: their fields hold strings, numbers
    and flat lists or dicts of those, so a one-level copy gives the same dict. asdict
    deep-copies every value on its way, and a mine converts tens of thousands of these."""
    out = dict(item.__dict__)
    for key, x in out.items():
        if type(x) is list:
            out[key] = list(x)
        elif type(x) is dict:
            out[key] = dict(x)
    return out


@dataclass
class Syntax:
    """A kernel's parsed tree as its extractor left it: the function node, where each of its
    nodes sits (lines and source text) and how the file spells its imports. Lives only in
    the process that parsed the file; the data-flow view reads it."""

    node: Any  # the language's function node (libcst.FunctionDef for Triton)
    positions: Any  # skel.kernels.positions.Positions
    aliases: Any  # skel.kernels.triton.Aliases (canonical names for calls)
    flow: Any = None  # skel.kernels.flow.Flow, built on first use
    # the device helpers folded into this kernel: (function node, its Positions) each; the
    # data-flow view walks them as if inlined (facts read back from a store have none)
    helpers: list = field(default_factory=list)
