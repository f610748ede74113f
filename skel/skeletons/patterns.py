"""The declarative vocabulary of conditions: patterns over the kernel model.

A pattern names *what* it looks at — the kernel's calls, assignments, loops, ``if`` tests,
parameters, launches, decorators, its name, its module's path, the host calls of its file,
or the addresses its loads and stores compute — and *which* of those count: literal
fields (a call name, a keyword, a regex over a name or a value, inside a loop or not) and,
where a field is not enough, a small named test of one element (``where=``). It holds when
at least one element counts, and its hit points at those elements' lines. Every pattern
writes its hit the same way (``describe`` verbatim, the elements' lines sorted, the header's
lines when the pattern is about the signature), so a pattern and the ``custom`` function it
replaced say exactly the same thing.

``conditions.custom`` stays for what is not a pattern over one kind of element (an analysis
across several, a count, a comparison between kernels): each is a named, typed function
(``Lines``), and ``tests/test_conditions_data.py`` counts how many conditions are which.

    TARGET_LOADS = calls("tl.load", where=reads_target, name="target-loads", describe="...")
    V_AXIS = assigns(where=reads_v_axis, name="v-tile-axis", describe="...")
    SERVING_ENGINE = in_module(folders=_SERVING_PACKAGES, name="serving-engine-module", describe="...")
"""

from __future__ import annotations

import re
from collections import OrderedDict
from functools import wraps
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

from skel.kernels.flow import flow_of
from skel.skeletons.conditions import Condition, Hit, def_line, param_lines

if TYPE_CHECKING:
    from skel.kernels.flow import CallInfo, Flow, Node
    from skel.kernels.model import Assign, Call, Decorator, KernelFacts, Launch, Loop, Param

T = TypeVar("T")
#: what a ``custom`` function returns: the lines that make it hold (or True), else a falsy value
Lines = Iterable[int] | bool | None
#: a test of one element of the kernel model, given the kernel
Where = Callable[[T, "KernelFacts"], bool]
Pattern = str | re.Pattern[str]


V = TypeVar("V")


def per_kernel(view: Callable[[KernelFacts], V]) -> Callable[[KernelFacts], V]:
    """A view of the whole kernel that element tests (``where=``) read — its pointer
    arguments, its tile-shape names, its runtime strides — computed once per kernel instead
    of once per element tested. Kept for the last few kernels, matched by identity (a
    kernel's facts do not change once extracted)."""
    kept: OrderedDict[int, tuple[KernelFacts, V]] = OrderedDict()

    @wraps(view)
    def cached(k: KernelFacts) -> V:
        hit = kept.get(id(k))
        if hit is not None and hit[0] is k:
            return hit[1]
        value = view(k)
        kept[id(k)] = (k, value)
        if len(kept) > 8:
            kept.popitem(last=False)
        return value

    return cached


def _rx(p: Pattern) -> re.Pattern[str]:
    return p if isinstance(p, re.Pattern) else re.compile(p)


def _pattern(name: str, describe: str, found: Callable[[KernelFacts], list[int] | None], *,
             signature: bool = False, whole: bool = False) -> Condition:
    """The one way a pattern answers: ``found`` gives the lines of the elements that count
    (None or empty: it does not hold). ``whole``: a fact about the whole kernel, with no
    lines of its own (the hit then carries none)."""

    def test(k: KernelFacts) -> list[Hit] | None:
        lines = found(k)
        if not lines:
            return None
        return [Hit(name, describe, () if whole else tuple(sorted(set(lines))), signature)]

    return Condition(name, describe, test)


def _fits(rx: re.Pattern[str] | None, text: str, search: bool) -> bool:
    if rx is None:
        return True
    return bool(rx.search(text) if search else rx.fullmatch(text))


def calls_where(*names: str, like: Pattern | None = None, search: bool = False, in_loop: bool | None = None,
                where: Where[Call] | None = None, name: str, describe: str, signature: bool = False) -> Condition:
    """A call: named one of ``names`` (any call when none is given) or whose canonical name
    matches ``like`` (a regex; fully unless ``search``), inside a loop or not, passing
    ``where``. The hit points at the calls' lines."""
    wanted = set(names)
    rx = _rx(like) if like is not None else None

    def found(k: KernelFacts) -> list[int]:
        return [c.line for c in k.calls
                if (not wanted or c.name in wanted) and _fits(rx, c.name, search)
                and (in_loop is None or (c.loop_depth > 0) == in_loop) and (where is None or where(c, k))]

    return _pattern(name, describe, found, signature=signature)


def assigns(*, target: Pattern | None = None, value: Pattern | None = None, op: str | None = None,
            calling: Iterable[str] = (), in_loop: bool | None = None, where: Where[Assign] | None = None,
            name: str, describe: str) -> Condition:
    """An assignment: one of its targets fully matching ``target``, its value's text
    containing a match of ``value``, its operator ``op`` (``=``, ``+=`` ...), its value
    calling one of ``calling``, inside a loop or not, passing ``where``."""
    trx = _rx(target) if target is not None else None
    vrx = _rx(value) if value is not None else None
    wanted = set(calling)

    def found(k: KernelFacts) -> list[int]:
        return [a.line for a in k.assigns
                if (trx is None or any(trx.fullmatch(t.strip()) for t in a.targets))
                and (vrx is None or vrx.search(a.value)) and (op is None or a.op == op)
                and (not wanted or bool(wanted & set(a.calls)))
                and (in_loop is None or (a.loop_depth > 0) == in_loop) and (where is None or where(a, k))]

    return _pattern(name, describe, found)


def loops_where(*, kind: str | Iterable[str] | None = None, bound: Pattern | None = None,
                where: Where[Loop] | None = None, name: str, describe: str) -> Condition:
    """A loop: of ``kind`` (``range``, ``tl.range``, ``tl.static_range``, ``while``), whose
    bounds' text (its iterator's arguments) contains a match of ``bound``, passing ``where``."""
    kinds = {kind} if isinstance(kind, str) else set(kind) if kind else None
    brx = _rx(bound) if bound is not None else None

    def found(k: KernelFacts) -> list[int]:
        return [lp.line for lp in k.loops
                if (kinds is None or lp.kind in kinds) and (brx is None or any(brx.search(a) for a in lp.args))
                and (where is None or where(lp, k))]

    return _pattern(name, describe, found)


def ifs(*, test: Pattern | None = None, where: Where[dict[str, Any]] | None = None, name: str,
        describe: str) -> Condition:
    """An ``if``: its test's text containing a match of ``test``, passing ``where`` (an if
    is ``{"line", "test", "names", "returns"}``)."""
    rx = _rx(test) if test is not None else None

    def found(k: KernelFacts) -> list[int]:
        return [i["line"] for i in k.ifs if (rx is None or rx.search(i["test"])) and (where is None or where(i, k))]

    return _pattern(name, describe, found)


def params_where(*, like: Pattern | None = None, constexpr: bool | None = None, annotation: Pattern | None = None,
                 where: Where[Param] | None = None, name: str, describe: str) -> Condition:
    """A parameter: its name fully matching ``like``, constexpr or not, its annotation
    containing a match of ``annotation``, passing ``where``. About the signature: the hit
    points at the parameters' header lines."""
    nrx = _rx(like) if like is not None else None
    arx = _rx(annotation) if annotation is not None else None

    def found(k: KernelFacts) -> list[int]:
        names = [p.name for p in k.params
                 if (nrx is None or nrx.fullmatch(p.name)) and (constexpr is None or p.constexpr == constexpr)
                 and (arx is None or arx.search(p.annotation)) and (where is None or where(p, k))]
        return list(param_lines(k, names)) if names else []

    return _pattern(name, describe, found, signature=True)


def launches(*, kw: str | None = None, own: bool = False, where: Where[Launch] | None = None, name: str,
             describe: str) -> Condition:
    """A host launch in the kernel's file (``kernel[grid](...)``, ``<<<...>>>``): passing
    ``kw``, of this kernel itself (``own``) rather than any launch the file makes, passing
    ``where``. The hit points at the launches."""

    def found(k: KernelFacts) -> list[int]:
        return [ln.line for ln in k.launches
                if (kw is None or kw in ln.kwargs) and (not own or ln.kernel == k.name)
                and (where is None or where(ln, k))]

    return _pattern(name, describe, found)


def decorators(dec: str, *more: str, where: Where[Decorator] | None = None, name: str, describe: str) -> Condition:
    """The decorator ``dec`` (canonical: ``triton.autotune``), or any of ``more``
    (``__launch_bounds__`` or ``__maxnreg__``), passing ``where``; about the signature."""
    wanted = {dec, *more}

    def found(k: KernelFacts) -> list[int]:
        return [d.line for d in k.decorators if d.name in wanted and (where is None or where(d, k))]

    return _pattern(name, describe, found, signature=True)


def kernel_named(like: Pattern, *, search: bool = False, line: str = "def", name: str, describe: str,
                 signature: bool = True) -> Condition:
    """The unit's own name matches ``like`` (fully, unless ``search``). The hit points at
    its ``def`` line (``line="def"``) or its first line, decorators included (``"start"``)."""
    rx = _rx(like)

    def found(k: KernelFacts) -> list[int]:
        if not _fits(rx, k.name, search):
            return []
        return [def_line(k) if line == "def" else k.line_start]

    return _pattern(name, describe, found, signature=signature)


def in_module(*, folders: Iterable[str] = (), stem: Pattern | None = None, parts: Pattern | None = None,
              name: str, describe: str) -> Condition:
    """The kernel's file sits in a module of this kind: a folder of its path is one of
    ``folders``, its file name (without ``.py``) fully matches ``stem``, or any folder or
    the stem fully matches ``parts``. A fact about the whole file: no lines."""
    wanted = frozenset(folders)
    srx = _rx(stem) if stem is not None else None
    prx = _rx(parts) if parts is not None else None

    def found(k: KernelFacts) -> list[int]:
        path = k.path.replace("\\", "/").split("/")
        base = path[-1].removesuffix(".py")
        hit = any(f in wanted for f in path[:-1]) or (srx is not None and bool(srx.fullmatch(base))) or (
            prx is not None and any(prx.fullmatch(p) for p in [*path[:-1], base]))
        return [k.line_start] if hit else []

    return _pattern(name, describe, found, whole=True)


def file_calls(like: Pattern, *, search: bool = True, lines: bool = True, name: str, describe: str) -> Condition:
    """A host call anywhere in the kernel's file (``module_calls``) whose name matches
    ``like``: the hit points at those calls (``lines``) or carries no lines."""
    rx = _rx(like)

    def found(k: KernelFacts) -> list[int]:
        return [line for call, line in k.module_calls.items() if _fits(rx, call, search)]

    return _pattern(name, describe, found, whole=not lines)


def names_where(like: Pattern, *, where: Where[str] | None = None, name: str, describe: str) -> Condition:
    """An identifier of the kernel (variable, parameter or constant name) fully matching
    ``like`` and passing ``where``; the hit points at each one's first line."""
    rx = _rx(like)

    def found(k: KernelFacts) -> list[int]:
        return [line for n, line in k.names.items() if rx.fullmatch(n) and (where is None or where(n, k))]

    return _pattern(name, describe, found)


#: the calls that take a pointer first: their first argument is an address
POINTER_CALLS = ("tl.load", "tl.store", "tl.atomic_add", "tl.atomic_max", "tl.atomic_min", "tl.atomic_cas",
                 "tl.atomic_xchg", "tl.atomic_and", "tl.atomic_or", "tl.atomic_xor")
#: an address test: the kernel's data flow, the load/store/atomic, its address expression
AddressTest = Callable[["Flow", "CallInfo", "Node"], bool]
#: an address test that also reads the kernel's facts (which parameters are constexpr, or
#: declared `tl.int64`): the data flow, the call, its address, the kernel
KernelAddressTest = Callable[["Flow", "CallInfo", "Node", "KernelFacts"], bool]


def addresses(*, of: Iterable[str] = POINTER_CALLS, where: AddressTest | None = None,
              kernel_where: KernelAddressTest | None = None, name: str, describe: str) -> Condition:
    """A load, store or atomic (``of``) whose address (its first argument, read through the
    kernel's data flow) has the shape ``where`` tests: a product of a program id and a
    stride, offsets wrapped with ``%``, rows gathered through loaded indices ... (and
    ``kernel_where``, the same test given the kernel's facts too, for one that reads its
    parameters). The hit points at those calls. A kernel whose data flow could not be read
    does not match."""
    wanted = tuple(of)

    def found(k: KernelFacts) -> list[int]:
        fl = flow_of(k)
        if not fl.ok:
            return []
        out = []
        for c in fl.calls:
            if c.name not in wanted:
                continue
            addr = c.arg(0, "pointer")
            if addr is not None and (where is None or where(fl, c, addr)) and (
                    kernel_where is None or kernel_where(fl, c, addr, k)):
                out.append(c.line)
        return out

    return _pattern(name, describe, found)


# --- compositions: patterns over patterns -------------------------------------------------
# ``&``, ``|`` and ``~`` (``conditions.Condition``) compose without a name of their own; these
# name the composed rule, so it reads as one reason among the kernel's.


def any_of(*patterns: Condition, name: str, describe: str, signature: bool = False) -> Condition:
    """Elements of several kinds taken together (a call *or* a type name, a load *or* a
    launch): holds when any of ``patterns`` holds, pointing at the lines of every one that
    does (``|`` stops at the first)."""

    def test(k: KernelFacts) -> list[Hit] | None:
        results = [p.check(k) for p in patterns]
        if all(r is None for r in results):
            return None
        lines = {ln for r in results for h in (r or []) for ln in h.lines}
        return [Hit(name, describe, tuple(sorted(lines)), signature)]

    return Condition(name, describe, test)


def absent(pattern: Condition, *, name: str, describe: str, signature: bool = False) -> Condition:
    """None of what ``pattern`` selects is there. Holds, with no lines, when ``pattern`` does
    not hold — a reason of its own, where ``~pattern`` holds without saying anything."""

    def test(k: KernelFacts) -> list[Hit] | None:
        return None if pattern.check(k) is not None else [Hit(name, describe, (), signature)]

    return Condition(name, describe, test)


def implies(given: Condition, then: Condition, *, name: str, describe: str, signature: bool = False) -> Condition:
    """A rule between two patterns: where ``given`` holds, ``then`` must hold too (a PDL launch
    needs the kernel's wait; a TMA store needs its fence). Holds, with no lines, when
    ``given`` does not hold or ``then`` does."""

    def test(k: KernelFacts) -> list[Hit] | None:
        if given.check(k) is None or then.check(k) is not None:
            return [Hit(name, describe, (), signature)]
        return None

    return Condition(name, describe, test)


def unit(kind: str, *, name: str, describe: str, signature: bool = True) -> Condition:
    """The unit is of ``kind``: ``kernel`` (a ``__global__`` function, or a ``@triton.jit``
    kernel), ``binding`` (a Python-bound C++ function), ``helper``. A fact about the whole
    unit: no lines."""

    def test(k: KernelFacts) -> list[Hit] | None:
        return [Hit(name, describe, (), signature)] if k.kind == kind else None

    return Condition(name, describe, test)


def source(like: Pattern, *, name: str, describe: str) -> Condition:
    """The unit's source text contains a match of ``like`` (for what the kernel model does
    not keep, such as a broadcast ``[:, None]``); the hit points at the matching lines."""
    rx = _rx(like)

    def found(k: KernelFacts) -> list[int]:
        return [k.line_start + i for i, text in enumerate(k.source.splitlines()) if rx.search(text)]

    return _pattern(name, describe, found)


#: every builder of this vocabulary (and the structured ones in ``conditions``): what the
#: data-conditions test counts as a pattern, against ``custom``
BUILDERS = ("calls", "param", "uses_name", "constant", "decorated", "loop", "launched_with",
            "calls_where", "assigns", "loops_where", "ifs", "params_where", "launches", "decorators",
            "kernel_named", "in_module", "file_calls", "names_where", "addresses", "any_of", "absent", "implies",
            "unit", "source")
