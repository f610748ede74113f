"""The CUDA C++ extractor: fills :class:`~skel.kernels.model.KernelFacts` from ``.cu``/``.cuh``
and C++ sources with tree-sitter (its CUDA grammar for files that use CUDA syntax, its C++
grammar otherwise), so conditions, the store and the retriever read CUDA kernels the way
they read Triton ones.

Units (``KernelFacts.kind``):

- ``kernel``: a ``__global__`` function. The ``__device__`` functions of the same file it
  calls (transitively) are folded into it, as Triton device helpers are;
- ``binding``: a host function bound to Python in the same file (pybind11 or nanobind
  ``.def("name", &Cls::method, ...)``, ``m.def("name", &fn)``, or a bound lambda). Same-file
  host functions it calls are folded into it, and ``bindings`` lists every ``.def`` of its
  owner (the class or the module), so a condition can compare it with its siblings.

Facts keep Triton's shapes: a call's ``name`` is its callee without template arguments
(``cute::copy``, ``__shfl_xor_sync``; methods ``.wait`` with ``receiver``), inline PTX gives a
``Call("asm")`` plus one ``Call("ptx:<mnemonic>")`` per instruction, qualifiers such as
``__global__`` and ``__launch_bounds__`` are ``decorators``, template parameters are
``constexpr`` params, ``kernel<<<grid, block, smem, stream>>>`` and ``cudaLaunchKernelEx`` are
``launches``. Tree-sitter recovers from what it cannot parse (macros, unknown syntax), so a
file always yields what it could read; the walks here are iterative, so depth never raises.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import replace
from functools import lru_cache
from typing import Any, Iterator

from skel.kernels.dtypes import dtype_of_c_type
from skel.kernels.model import Assign, Call, Decorator, KernelFacts, Launch, Loop, Param, ParseError

#: a file worth parsing holds a kernel (spelled `__global__`, or through a macro such as
#: CUTLASS's `CUTLASS_GLOBAL`) or a Python binding
KERNEL_HINT = re.compile(r"__global__|\b[A-Z][A-Z0-9_]*_GLOBAL\b|\.def\s*\(|\bdef_static\s*\(")
#: qualifier macros of widely included headers (CUTLASS/CuTe), as they expand
_KNOWN_MACROS = {"CUTLASS_GLOBAL": "__global__", "CUTLASS_DEVICE": "__forceinline__ __device__",
                 "CUTLASS_HOST_DEVICE": "__forceinline__ __host__ __device__",
                 "CUTE_DEVICE": "__forceinline__ __device__", "CUTE_HOST_DEVICE": "__forceinline__ __host__ __device__"}
#: a file's own object-like macros that expand to qualifiers only (`#define DEVICE_INLINE __device__ __forceinline__`)
_QUALIFIER_WORD = r"(?:__\w+__|inline|static)"
_QUALIFIER_DEFINE = re.compile(
    rf"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+({_QUALIFIER_WORD}(?:[ \t]+{_QUALIFIER_WORD})*)[ \t]*$", re.M)
_CUDA_SYNTAX = re.compile(r"__global__|__device__|__shared__|<<<")
_MAX_TEXT = 160
_QUALIFIERS = {"__global__", "__device__", "__host__", "__forceinline__", "__noinline__"}
_STORAGE = {"__shared__", "__constant__", "__managed__", "volatile", "__restrict__", "__grid_constant__"}
_LOOPS = {"for_statement": "for", "for_range_loop": "range-for", "while_statement": "while", "do_statement": "do"}
_LAUNCH_APIS = {"cudaLaunchKernelEx": 1, "cudaLaunchKernel": 0, "cudaLaunchCooperativeKernel": 0,
                "cuLaunchKernelEx": 1, "cuLaunchKernel": 0}
_BIND_METHODS = {"def", "def_static"}
#: `PYBIND11_MODULE(name, m)` / `NB_MODULE(name, m)` / `TORCH_LIBRARY(name, m)`: `m` is the module
_MODULE_MACRO = re.compile(r"\b(?:PYBIND11_MODULE|NB_MODULE|TORCH_LIBRARY\w*)\s*\(\s*\w+\s*,\s*(\w+)")
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_IDENT = re.compile(r"[A-Za-z_]\w*")


@lru_cache(maxsize=2)
def _parser(cuda: bool):
    try:  # on the first C++/CUDA parse: a Triton-only run never loads it, a broken install is one ParseError
        import tree_sitter
        grammar = importlib.import_module("tree_sitter_cuda" if cuda else "tree_sitter_cpp")
    except ImportError as exc:  # pragma: no cover - both are dependencies of skel
        raise ParseError(f"C++/CUDA parsing needs tree-sitter and its grammars ({exc.name} missing)") from exc
    return tree_sitter.Parser(tree_sitter.Language(grammar.language()))


def _text(node: Any, limit: int = _MAX_TEXT) -> str:
    s = " ".join(node.text.decode("utf-8", "replace").split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _line(node: Any) -> int:
    return node.start_point[0] + 1


def _end_line(node: Any) -> int:
    return node.end_point[0] + 1


def _walk(node: Any) -> Iterator[Any]:
    """Every node under ``node`` (itself included), pre-order, without recursion."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _bare(name: str) -> str:
    """``ns::k<4, float>`` -> ``ns::k``: a callee without template arguments."""
    prev = None
    while prev != name:
        prev, name = name, _TEMPLATE_ARGS.sub("", name)
    return "".join(name.split())


def _callee(fn: Any) -> tuple[str, str, str]:
    """(name, receiver, template arguments) of a call's function node."""
    if fn.type == "field_expression":
        recv = fn.child_by_field_name("argument")
        field = fn.child_by_field_name("field")
        return "." + (_bare(_text(field)) if field is not None else ""), _text(recv) if recv is not None else "", ""
    full = _text(fn, 400)
    targs = ""
    if "<" in full:
        targs = full[full.find("<") + 1: full.rfind(">")] if ">" in full else ""
    return _bare(full), "", targs


def ptx_mnemonics(asm: str) -> list[str]:
    """The instruction mnemonics of an inline-PTX string: ``cp.async.cg.shared.global``,
    ``wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3`` (declarations and labels left out)."""
    out = []
    for piece in re.split(r"[;\n]", asm):
        s = piece.strip().lstrip("{}").strip()
        s = re.sub(r"^@!?%?\w+\s+", "", s)  # a predicate guard: @p / @!p
        if not s or s.startswith((".", "//", "}")) or s.endswith(":"):
            continue
        tok = s.split()[0].rstrip(",")
        if re.match(r"^[a-z][\w.:]*$", tok):
            out.append(tok)
    return out


#: qualifiers with arguments tree-sitter's grammars do not know: `__cluster_dims__(2, 1, 1)`
#: is blanked before parsing (and given back as a decorator), `__align__(16)` is `alignas(16)`
_CLUSTER_DIMS = re.compile(r"__cluster_dims__\s*\(([^()]*)\)")
_ALIGN = re.compile(r"\b__align__\s*\(")


def _blank_cluster_dims(source: str) -> tuple[str, list[tuple[int, list[str]]]]:
    """The source with every `__cluster_dims__(...)` blanked (lines and columns kept), and
    (line, its arguments) of each."""
    found = [(source.count("\n", 0, m.start()) + 1, [a.strip() for a in m.group(1).split(",") if a.strip()])
             for m in _CLUSTER_DIMS.finditer(source)]
    if not found:
        return source, []
    return _CLUSTER_DIMS.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source), found


def expand_qualifier_macros(source: str) -> str:
    """``CUTLASS_GLOBAL void k(...)`` -> ``__global__ void k(...)``: macros that stand for
    function qualifiers (CUTLASS's, and the file's own ``#define X __device__ ...``) replaced
    by what they expand to, so the parser sees a kernel. Line breaks are kept, so every line
    number stays the source's."""
    macros = dict(_KNOWN_MACROS)
    macros.update((name, " ".join(body.split())) for name, body in _QUALIFIER_DEFINE.findall(source))
    if "__align__" in source:
        source = _ALIGN.sub("alignas(", source)
    used = [m for m in macros if m in source]
    if not used:
        return source
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(used, key=len, reverse=True))) + r")\b")
    return pattern.sub(lambda m: macros[m.group(1)], source)


def _asm_string(node: Any) -> str:
    parts = []
    for n in node.children:
        if n.type in ("string_literal", "concatenated_string", "raw_string_literal"):
            for s in _walk(n):
                if s.type == "string_content":
                    parts.append(s.text.decode("utf-8", "replace"))
                elif s.type == "escape_sequence":
                    parts.append({"\\n": "\n", "\\t": " "}.get(s.text.decode(), ""))
            break
    return "".join(parts)


# ---------------------------------------------------------------------------------------
# one function's facts
# ---------------------------------------------------------------------------------------

class _Body:
    """Walks one function (or bound lambda) and records its facts."""

    def __init__(self, facts: KernelFacts) -> None:
        self.k = facts
        self.launch_sites: list[tuple[Any, str, str]] = []  # (call node, kernel name, via)

    def run(self, root: Any) -> None:
        k = self.k
        # (node, loop depth, innermost loop line, the loops whose body holds the node)
        stack: list[tuple[Any, int, int, tuple[Loop, ...]]] = [(root, 0, 0, ())]
        assigned: dict[int, set[str]] = {}  # id(loop) -> names (re)assigned in its body
        while stack:
            n, depth, loop_line, inside = stack.pop()
            t = n.type
            child_depth, child_loop = depth, loop_line
            if t in _LOOPS:
                child_depth, child_loop = depth + 1, _line(n)
                loop = self._loop(n, depth + 1)
                assigned[id(loop)] = set()
                body = n.child_by_field_name("body")
                # only the body is "in" the loop (not its header), as its `assigned` says
                stack.extend((c, child_depth, child_loop, inside + (loop,) if c == body else inside)
                             for c in reversed(n.children))
                continue
            if t in ("assignment_expression", "update_expression") and inside:
                target = n.child_by_field_name("left" if t == "assignment_expression" else "argument")
                if target is not None:
                    text = _text(target, 60)
                    for lp in inside:  # one pass: nested loops cost their depth, not a walk each
                        assigned[id(lp)].add(text)
            if t == "call_expression":
                self._call(n, depth, loop_line)
            elif t == "gnu_asm_expression":
                self._asm(n, depth, loop_line)
            elif t == "init_declarator":
                self._declared(n, depth, loop_line)
            elif t == "assignment_expression":
                self._assigned(n, depth, loop_line)
            elif t == "declaration" or t == "field_declaration":
                self._types(n)
            elif t == "if_statement":
                self._if(n)
            elif t == "field_expression" and n.parent is not None and n.parent.type != "call_expression":
                k.attributes.setdefault(_text(n, 80), _line(n))
            elif t in ("identifier", "type_identifier", "primitive_type", "namespace_identifier"):
                k.names.setdefault(n.text.decode("utf-8", "replace"), _line(n))
            elif t == "qualified_identifier":
                k.names.setdefault(_bare(_text(n, 200)), _line(n))
            elif t in _STORAGE:
                k.names.setdefault(t, _line(n))
            elif t == "number_literal":
                k.constants.setdefault(n.text.decode(), _line(n))
            elif t == "return_statement" and n.named_children:
                k.returns_value = True
            elif t == "comment":
                k.notes.append({"line": _line(n), "text": _comment(n)})
            stack.extend((c, child_depth, child_loop, inside) for c in reversed(n.children))
        for lp in k.loops:
            if id(lp) in assigned:
                lp.assigned = sorted(assigned[id(lp)])

    def _call(self, n: Any, depth: int, loop_line: int) -> None:
        fn = n.child_by_field_name("function")
        if fn is None:
            return
        name, receiver, targs = _callee(fn)
        args_node = n.child_by_field_name("arguments")
        args = [_text(a) for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
        call = Call(name=name, line=_line(n), args=args, loop_depth=depth, loop_line=loop_line, receiver=receiver)
        if targs:
            call.kwargs["template"] = targs[:_MAX_TEXT]
        call.target = _target_of(n)
        self.k.calls.append(call)
        if any(c.type == "kernel_call_syntax" for c in n.children):
            self.launch_sites.append((n, name.split("::")[-1], "<<<>>>"))
        elif name.split("::")[-1] in _LAUNCH_APIS:
            at = _LAUNCH_APIS[name.split("::")[-1]]
            if len(args) > at:
                self.launch_sites.append((n, _bare(args[at].lstrip("&(").split(")")[-1].strip()).split("::")[-1],
                                          name.split("::")[-1]))

    def _asm(self, n: Any, depth: int, loop_line: int) -> None:
        asm = _asm_string(n)
        line = _line(n)
        self.k.calls.append(Call(name="asm", line=line, args=[" ".join(asm.split())[:400]], loop_depth=depth,
                                 loop_line=loop_line))
        for m in ptx_mnemonics(asm):
            self.k.calls.append(Call(name="ptx:" + m, line=line, loop_depth=depth, loop_line=loop_line))

    def _loop(self, n: Any, depth: int) -> Loop:
        kind = _LOOPS[n.type]
        args: list[str] = []
        targets: list[str] = []
        if kind == "for":
            for field in ("initializer", "condition", "update"):
                c = n.child_by_field_name(field)
                args.append(_text(c) if c is not None else "")
            init = n.child_by_field_name("initializer")
            if init is not None:
                targets = [_text(d.child_by_field_name("declarator")) for d in _walk(init)
                           if d.type == "init_declarator" and d.child_by_field_name("declarator") is not None]
        elif kind == "range-for":
            for field in ("declarator", "right"):
                c = n.child_by_field_name(field)
                args.append(_text(c) if c is not None else "")
            d = n.child_by_field_name("declarator")
            targets = [_text(d)] if d is not None else []
        else:
            c = n.child_by_field_name("condition")
            args = [_text(c) if c is not None else ""]
        kwargs = {}
        prev = n.prev_sibling
        while prev is not None and prev.type == "comment":
            prev = prev.prev_sibling
        if prev is not None and prev.type == "preproc_call" and _text(prev).startswith("#pragma"):
            arg = _text(prev)[len("#pragma"):].strip()
            if arg.startswith("unroll"):
                kwargs["pragma"] = arg
        loop = Loop(line=_line(n), end_line=_end_line(n), kind=kind, args=args, kwargs=kwargs, depth=depth,
                    targets=targets)  # `assigned` is filled by the walk (run)
        self.k.loops.append(loop)
        return loop

    def _declared(self, n: Any, depth: int, loop_line: int) -> None:
        d, v = n.child_by_field_name("declarator"), n.child_by_field_name("value")
        if d is None or v is None:
            return
        self._assign(n, [_declared_name(d)], "=", v, depth, loop_line)

    def _assigned(self, n: Any, depth: int, loop_line: int) -> None:
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        op = n.child_by_field_name("operator")
        if left is None or right is None:
            return
        self._assign(n, [_text(left, 80)], _text(op) if op is not None else "=", right, depth, loop_line)

    def _assign(self, n: Any, targets: list[str], op: str, value: Any, depth: int, loop_line: int) -> None:
        names, calls = [], []
        for x in _walk(value):
            if x.type == "identifier":
                names.append(x.text.decode("utf-8", "replace"))
            elif x.type == "call_expression" and x.child_by_field_name("function") is not None:
                calls.append(_callee(x.child_by_field_name("function"))[0])
        self.k.assigns.append(Assign(line=_line(n), targets=targets, op=op, value=_text(value), names=names,
                                     calls=calls, loop_depth=depth, loop_line=loop_line))

    def _types(self, n: Any) -> None:
        """Declared types: ``var_types``/``var_dtypes`` per declared name, `extern __shared__`."""
        type_node = n.child_by_field_name("type")
        if type_node is None:
            return
        words = {_text(c) for c in n.children if c.type in ("type_qualifier", "storage_class_specifier")}
        # `volatile int* flag` keeps its qualifier: a spin-wait polls memory declared volatile
        ctype = " ".join([q for q in ("const", "volatile") if q in words] + [_text(type_node, 120)])
        if "extern" in words and "__shared__" in words:
            self.k.names.setdefault("extern __shared__", _line(n))
        for d in n.children_by_field_name("declarator"):
            name = _declared_name(d)
            if not name:
                continue
            self.k.var_types[name] = ctype + ("*" if "pointer" in d.type or d.type == "init_declarator"
                                              and "pointer" in (d.child_by_field_name("declarator") or d).type else "")
            dt = dtype_of_c_type(ctype)
            if dt:
                self.k.var_dtypes[name] = dt

    def _if(self, n: Any) -> None:
        cond = n.child_by_field_name("condition")
        cons = n.child_by_field_name("consequence")
        test = _text(cond) if cond is not None else ""
        # `returns`: the branch itself returns (its own statements, not nested ones: scanning
        # every nested block made 50,000 nested ifs quadratic)
        own = [cons] if cons is not None and cons.type == "return_statement" else \
            (cons.named_children if cons is not None else [])
        self.k.ifs.append({"line": _line(n), "test": test.strip("()"), "names": sorted(set(_IDENT.findall(test))),
                           "returns": any(x.type == "return_statement" for x in own)})


def _target_of(call: Any) -> str:
    p = call.parent
    while p is not None and p.type in ("parenthesized_expression", "cast_expression"):
        p = p.parent
    if p is not None and p.type == "init_declarator":
        d = p.child_by_field_name("declarator")
        return _declared_name(d) if d is not None else ""
    if p is not None and p.type == "assignment_expression":
        left = p.child_by_field_name("left")
        return _text(left, 60) if left is not None else ""
    return ""


def _declared_name(d: Any) -> str:
    """The identifier a declarator declares (through pointers, references, arrays, inits)."""
    for x in _walk(d):
        if x.type in ("identifier", "field_identifier"):
            return x.text.decode("utf-8", "replace")
        if x.type in ("initializer_list", "argument_list"):
            break
    return ""


def _comment(n: Any) -> str:
    s = n.text.decode("utf-8", "replace").strip()
    s = re.sub(r"^(//+|/\*+)|\*+/$", "", s)
    return " ".join(line.strip().lstrip("*").strip() for line in s.splitlines()).strip()


# ---------------------------------------------------------------------------------------
# the file
# ---------------------------------------------------------------------------------------

class _Function:
    """A function definition of the file: where it is, what it is, its own facts."""

    def __init__(self, node: Any, lines: list[str], path: str) -> None:
        self.node = node
        top = node.parent if node.parent is not None and node.parent.type == "template_declaration" else node
        self.top = top
        decl = node.child_by_field_name("declarator")
        fdecl = next((x for x in _walk(decl) if x.type == "function_declarator"), None) if decl is not None else None
        name_node = fdecl.child_by_field_name("declarator") if fdecl is not None else None
        self.qualified = _bare(_text(name_node, 200)) if name_node is not None else ""
        self.name = self.qualified.split("::")[-1]
        self.owner = _enclosing_class(node) or ("::".join(self.qualified.split("::")[:-1]).split("::")[-1]
                                                if "::" in self.qualified else "")
        words = {c.type for c in node.children}
        self.is_global = "__global__" in words
        self.is_device = "__device__" in words and not self.is_global
        start, end = _line(top), _end_line(node)
        self.facts = KernelFacts(name=self.name, path=path, line_start=start, line_end=end,
                                 source="\n".join(lines[start - 1:end]), language="cuda")
        self.body = _Body(self.facts)
        self._signature(node, fdecl)

    def _signature(self, node: Any, fdecl: Any) -> None:
        k = self.facts
        for c in node.children:
            if c.type in _QUALIFIERS:
                k.decorators.append(Decorator(name=c.type, line=_line(c)))
            elif c.type == "launch_bounds":
                items = [_text(x) for x in c.named_children]
                k.decorators.append(Decorator(name="__launch_bounds__", line=_line(c), list_items=items))
        if self.top is not node:
            plist = self.top.child_by_field_name("parameters")
            items = [_text(p) for p in plist.named_children] if plist is not None else []
            k.decorators.insert(0, Decorator(name="template", line=_line(self.top), list_items=items))
            for p in plist.named_children if plist is not None else []:
                if "type_parameter" in p.type:  # `typename T`, `class... Ts`
                    pname = next((_text(x) for x in p.named_children if x.type == "type_identifier"), "")
                else:
                    pname = _declared_name(p.child_by_field_name("declarator") or p)
                kind = "typename" if "type_parameter" in p.type else _text(p.child_by_field_name("type") or p, 60)
                default = p.child_by_field_name("default_value") or p.child_by_field_name("default_type")
                k.params.append(Param(name=pname, annotation=f"template {kind}", constexpr=True,
                                      default=_text(default) if default is not None else ""))
        plist = fdecl.child_by_field_name("parameters") if fdecl is not None else None
        for p in plist.named_children if plist is not None else []:
            if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
                continue
            d = p.child_by_field_name("declarator")
            t = p.child_by_field_name("type")
            ann = " ".join(_text(x) for x in p.children if x.type in ("type_qualifier",)) + " " + \
                (_text(t) if t is not None else "")
            if d is not None and ("pointer" in d.type or "reference" in d.type):
                ann += "*" if "pointer" in d.type else "&"
            k.params.append(Param(name=_declared_name(d) if d is not None else "", annotation=ann.strip()))
        # what the signature's own qualifiers say (`const T* __restrict__ x`)
        if plist is not None:
            for x in _walk(plist):
                if x.type in _STORAGE:
                    k.names.setdefault(x.type, _line(x))


def _enclosing_class(node: Any) -> str:
    p = node.parent
    while p is not None:
        if p.type in ("class_specifier", "struct_specifier"):
            n = p.child_by_field_name("name")
            return _bare(_text(n)) if n is not None else ""
        if p.type in ("function_definition", "lambda_expression"):
            return ""
        p = p.parent
    return ""


def _binding(call: Any, module_vars: set[str]) -> dict | None:
    """A pybind11/nanobind ``.def("name", target, extra...)`` call, or None."""
    fn = call.child_by_field_name("function")
    if fn is None or fn.type != "field_expression":
        return None
    field = fn.child_by_field_name("field")
    if field is None or _text(field) not in _BIND_METHODS:
        return None
    args_node = call.child_by_field_name("arguments")
    args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
    if len(args) < 2 or args[0].type != "string_literal":
        return None
    pyname = "".join(s.text.decode("utf-8", "replace") for s in _walk(args[0]) if s.type == "string_content")
    target = args[1]
    lam = target if target.type == "lambda_expression" else None
    fn_text = _bare(_text(target, 200)).lstrip("&").strip("()")
    fn_text = re.sub(r"^static_cast<.*>\(|^py::overload_cast<.*>\(|^nb::overload_cast<.*>\(", "", fn_text)
    return {"line": _line(field), "python_name": pyname,
            "function": pyname if lam is not None else fn_text.split("::")[-1].lstrip("&"),
            "class": "" if lam is not None or "::" not in fn_text else fn_text.split("::")[-2].lstrip("&"),
            "owner": _owner(fn.child_by_field_name("argument"), module_vars),
            "guards": [_text(a) for a in args[2:]], "lambda": lam}


def _owner(recv: Any, module_vars: set[str]) -> str:
    """What a `.def` binds onto: the class of a `py::class_<T>(...)` chain, a variable, or
    "module" for the module object."""
    n = recv
    while n is not None and n.type == "call_expression":
        fn = n.child_by_field_name("function")
        if fn is None:
            break
        if fn.type == "field_expression":  # another `.def(...)` of the chain
            n = fn.child_by_field_name("argument")
            continue
        text = _text(fn, 200)
        m = re.search(r"class_\s*<\s*([\w:]+)", text)
        return m.group(1).split("::")[-1] if m else _bare(text)
    if n is None:
        return ""
    return "module" if n.type == "identifier" and _text(n) in module_vars else _text(n, 60)


def _fold(k: KernelFacts, own: dict[str, KernelFacts], allowed: set[str]) -> None:
    """Fold the facts of the same-file functions ``k`` calls (transitively) into ``k``."""
    seen = {k.name}
    queue = [c.name.split("::")[-1] for c in k.calls]
    while queue:
        name = queue.pop(0)
        if name in seen or name not in allowed or name not in own:
            continue
        seen.add(name)
        h = own[name]
        k.folded[name] = [h.line_start, h.line_end]
        k.calls += h.calls
        k.loops += h.loops
        k.assigns += h.assigns
        k.ifs += h.ifs
        k.notes += h.notes
        for table in ("names", "attributes", "constants"):
            mine = getattr(k, table)
            for key, line in getattr(h, table).items():
                mine.setdefault(key, line)
        queue += [c.name.split("::")[-1] for c in h.calls]


def _copy(f: KernelFacts) -> KernelFacts:
    return replace(f, calls=list(f.calls), loops=list(f.loops), assigns=list(f.assigns), ifs=list(f.ifs),
                   notes=list(f.notes), names=dict(f.names), attributes=dict(f.attributes),
                   constants=dict(f.constants), folded={}, decorators=list(f.decorators), params=list(f.params),
                   launches=[], bindings=[])


def extract_file(source: str, path: str = "<string>", *, helpers: bool = False) -> list[KernelFacts]:
    """The ``__global__`` kernels and Python-bound host functions in a C++/CUDA source.

    ``__device__`` functions are folded into the kernels calling them and left out of the
    result unless ``helpers`` is set (then they come as kind ``helper``)."""
    if not KERNEL_HINT.search(source):
        return []
    lines = source.splitlines()  # the source as written: what units show and notes quote
    expanded, cluster_dims = _blank_cluster_dims(expand_qualifier_macros(source))
    data = expanded.encode("utf-8", "surrogatepass")
    cuda = path.endswith((".cu", ".cuh")) or bool(_CUDA_SYNTAX.search(expanded))
    try:
        tree = _parser(cuda).parse(data)
    except (ValueError, RuntimeError) as exc:  # pragma: no cover - tree-sitter recovers from syntax errors
        raise ParseError(str(exc) or type(exc).__name__) from exc
    module_vars = {"m", *_MODULE_MACRO.findall(source)}
    functions: list[_Function] = []
    binds: list[dict] = []
    module_calls: dict[str, int] = {}
    for n in _walk(tree.root_node):
        if n.type == "function_definition":
            functions.append(_Function(n, lines, path))
        elif n.type == "call_expression":
            fn = n.child_by_field_name("function")
            if fn is not None:
                module_calls.setdefault(_callee(fn)[0], _line(n))
            b = _binding(n, module_vars)
            if b is not None:
                binds.append(b)
    binds.sort(key=lambda b: b["line"])  # a `.def(...).def(...)` chain is walked outermost (last) first
    for f in functions:
        f.body.run(f.node.child_by_field_name("body") or f.node)
        body = f.node.child_by_field_name("body")
        for line, items in cluster_dims:  # a `__cluster_dims__` in the function's signature
            if f.facts.line_start <= line <= (_line(body) if body is not None else f.facts.line_end):
                f.facts.decorators.append(Decorator(name="__cluster_dims__", line=line, list_items=items))
    own = {f.name: f.facts for f in functions}
    launches = _launches(functions)

    found: list[KernelFacts] = []
    device = {f.name for f in functions if f.is_device}
    for f in functions:
        if not (f.is_global or (helpers and f.is_device)):
            continue
        k = _copy(f.facts)
        k.kind = "kernel" if f.is_global else "helper"
        _fold(k, {n: x for n, x in own.items() if n != k.name}, device)
        k.launches = launches.get(k.name, [])
        found.append(k)
    # Python bindings: the bound function (or lambda), with the host functions it calls folded in
    by_qualified = {(f.owner, f.name): f for f in functions if f.node.child_by_field_name("body") is not None}
    host = {f.name for f in functions if not f.is_global and not f.is_device}
    bound_done: set[tuple[str, str]] = set()
    for b in binds:
        key = (b["class"], b["function"])
        if key in bound_done:
            continue
        if b["lambda"] is not None:
            lam = b["lambda"]
            start, end = _line(lam), _end_line(lam)
            k = KernelFacts(name=b["python_name"], path=path, line_start=start, line_end=end,
                            source="\n".join(lines[start - 1:end]), language="cuda")
            body = _Body(k)
            body.run(lam.child_by_field_name("body") or lam)
        else:
            fn = _bound_function(b, by_qualified)
            if fn is None or fn.is_global:
                continue
            k = _copy(fn.facts)
        bound_done.add(key)
        k.kind = "binding"
        _fold(k, {n: x for n, x in own.items() if n != k.name}, host)
        k.bindings = [{kk: vv for kk, vv in x.items() if kk != "lambda"} | {"self": x is b or (
            x["function"] == b["function"] and x["class"] == b["class"])} for x in binds if x["owner"] == b["owner"]]
        found.append(k)
    # whether each bound function releases the GIL, by its `.def` guard or in its own body:
    # a condition compares a binding with the siblings that do
    released = {u.name for u in found if u.kind == "binding" and _releases_gil(u)}
    for k in found:
        for x in k.bindings:
            x["releases_gil"] = x["function"] in released or any("gil_scoped_release" in g for g in x["guards"])
    for k in found:
        k.module_calls = dict(module_calls)
        k.notes = _notes_above(k, lines) + k.notes
    found.sort(key=lambda x: x.line_start)
    return found


def _bound_function(b: dict, functions: dict[tuple[str, str], _Function]) -> _Function | None:
    """The definition a `.def` binds: by class and name, else the one function of that name
    (tree-sitter can lose a class around its members when a macro it cannot expand opens
    the class body, e.g. `EP_STATIC_ASSERT(...);`: the members are still there)."""
    exact = functions.get((b["class"], b["function"]))
    if exact is not None:
        return exact
    named = [f for (_, name), f in functions.items() if name == b["function"]]
    return named[0] if len(named) == 1 else None


_GIL_RELEASE = re.compile(r"gil_scoped_release|Py_BEGIN_ALLOW_THREADS|PyEval_SaveThread")


def _releases_gil(k: KernelFacts) -> bool:
    """The unit releases the GIL in its own body (not in a helper folded into it)."""
    own = [n for n, line in k.names.items() if not k.helper_at(line)]
    return any(_GIL_RELEASE.search(n) for n in own) or any(_GIL_RELEASE.search(c.name) for c in k.calls
                                                           if not k.helper_at(c.line))


def _launches(functions: list[_Function]) -> dict[str, list[Launch]]:
    out: dict[str, list[Launch]] = {}
    for f in functions:
        for node, kernel, via in f.body.launch_sites:
            line = _line(node)
            calls = f.facts.calls
            kwargs: dict[str, str] = {}
            grid = ""
            cfg = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
            if cfg is not None:
                parts = [_text(x) for x in cfg.named_children]
                grid = parts[0] if parts else ""
                for key, val in zip(("block", "smem", "stream"), parts[1:]):
                    kwargs[key] = val
            else:
                kwargs["via"] = via
                # `cudaLaunchKernelEx(&cfg, k, ...)`: the shape is in the config's fields
                for a in f.facts.assigns:
                    for target in a.targets:
                        if target.endswith((".gridDim", "->gridDim")) and a.line <= line:
                            grid = a.value
                        elif target.endswith((".blockDim", "->blockDim")) and a.line <= line:
                            kwargs["block"] = a.value
                        elif target.endswith((".dynamicSmemBytes", "->dynamicSmemBytes")) and a.line <= line:
                            kwargs["smem"] = a.value
            out.setdefault(kernel, []).append(Launch(
                kernel=kernel, line=line, grid=grid, grid_is_callable=False, kwargs=kwargs, host_function=f.name,
                host_calls=sorted({c.name for c in calls}), host_names=sorted(f.facts.names),
                calls_before=[c.name for c in calls if c.line < line],
                calls_after=[c.name for c in calls if c.line > line]))
    return out


_COMMENT_LINE = re.compile(r"^\s*(//|/\*|\*)")


def _notes_above(k: KernelFacts, lines: list[str]) -> list[dict]:
    """The comment block right above the unit (its doc comment)."""
    out = []
    i = k.line_start - 2
    while i >= 0 and _COMMENT_LINE.match(lines[i]):
        text = re.sub(r"^\s*(//+|/\*+|\*+/?)", "", lines[i]).strip().rstrip("*/").strip()
        if text:
            out.append({"line": i + 1, "text": text})
        i -= 1
    return list(reversed(out))
