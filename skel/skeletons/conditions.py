"""Named, composable conditions over kernel facts.

A condition is a value, not a nested ``if``: it has a name a reader can scan, and when
it holds it says *why*, with the kernel's line numbers. Compose with ``&`` (all hold),
``|`` (first that holds) and ``~`` (does not hold)::

    FP32_DOT = calls("tl.dot", where=dot_operands_fp32, describe="a tl.dot on fp32 operands")
    NO_PRECISION = ~calls("tl.dot", kw="input_precision") & ~calls("tl.dot", kw="allow_tf32")

Builders cover the common shapes (a call, a keyword, a parameter, a name, a constant, a
decorator, a loop); ``custom`` takes any function of the facts for the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Iterable

from skel.kernels import dtypes

if TYPE_CHECKING:  # facts pull in libcst; conditions only read plain dataclasses
    from skel.kernels.model import Call, KernelFacts


@dataclass(frozen=True)
class Hit:
    """Why a condition holds: a sentence and the kernel lines it points at."""

    condition: str
    detail: str
    lines: tuple[int, ...] = ()
    # the condition is about the kernel's signature (a parameter, a decorator): its lines
    # are the header's; every other hit points at the statement that satisfied it
    signature: bool = False

    def __str__(self) -> str:
        where = f" (line {', '.join(map(str, self.lines[:4]))})" if self.lines else ""
        return f"{self.detail}{where}"


@dataclass(frozen=True)
class Condition:
    name: str
    describe: str
    test: Callable[[KernelFacts], list[Hit] | None] = field(repr=False, compare=False)
    # A *soft* precondition is a literal detail of how the technique is usually written
    # (a loop, a `tl.dot`, a runtime-length bound), not a reason it cannot apply: when it
    # is the only one that fails, the skeleton is a near miss (ranked below every full
    # match, naming what is missing) instead of hidden. ``relaxed``, when given, is what
    # must still hold for the near miss to be worth showing. Set with ``soft(...)``.
    soft: bool = field(default=False, compare=False)
    relaxed: "Condition | None" = field(default=None, repr=False, compare=False)

    def check(self, k: KernelFacts) -> list[Hit] | None:
        """The hits when the condition holds (possibly empty for negations), else None."""
        return self.test(k)

    def holds(self, k: KernelFacts) -> bool:
        return self.test(k) is not None

    def __and__(self, other: "Condition") -> "Condition":
        def test(k: KernelFacts) -> list[Hit] | None:
            a = self.test(k)
            if a is None:
                return None
            b = other.test(k)
            return None if b is None else a + b

        return Condition(f"{self.name} & {other.name}", f"{self.describe} and {other.describe}", test)

    def __or__(self, other: "Condition") -> "Condition":
        def test(k: KernelFacts) -> list[Hit] | None:
            a = self.test(k)
            return a if a is not None else other.test(k)

        return Condition(f"{self.name} | {other.name}", f"{self.describe} or {other.describe}", test)

    def __invert__(self) -> "Condition":
        def test(k: KernelFacts) -> list[Hit] | None:
            return [] if self.test(k) is None else None

        text = self.describe
        for article in ("a ", "an "):  # "no a `tl.dot`" reads badly: "no `tl.dot`"
            if text.startswith(article):
                text = text[len(article):]
        return Condition(f"~{self.name}", f"no {text}", test)


def _kw_matches(call: Call, kw: str | None, value: str | re.Pattern | None,
                k: KernelFacts | None = None) -> bool:
    if kw is None:
        return True
    if kw not in call.kwargs:
        return False
    if value is None:
        return True
    raw = call.kwargs[kw]
    if k is not None and raw in k.module_constants:  # `input_precision=DOT_PRECISION`
        resolved = k.module_constants[raw]
        if isinstance(value, re.Pattern):
            return bool(value.search(resolved))
        return bool(re.search(r"""['"]""" + re.escape(value) + r"""['"]""", resolved)) or resolved == value
    if isinstance(value, re.Pattern):
        return bool(value.search(raw))
    return raw.strip("'\" ") == value


def calls(
    *names: str,
    kw: str | None = None,
    value: str | re.Pattern | None = None,
    in_loop: bool | None = None,
    where: Callable[[Call, KernelFacts], bool] | None = None,
    describe: str | None = None,
    name: str | None = None,
) -> Condition:
    """The kernel calls one of ``names`` (canonical: ``tl.dot``, ``tl.load``, ``.to``).

    ``kw``/``value``: the call passes that keyword (with that literal value, or matching
    a regex). ``in_loop``: inside (True) or outside (False) any loop. ``where``: any
    further test of the call.
    """
    label = name or "calls-" + "-".join(n.strip(".").replace("tl.", "") for n in names) + (f"-{kw}" if kw else "")
    text = describe or " or ".join(f"`{n}`" for n in names) + (f" with `{kw}`" if kw else "") + (
        " inside a loop" if in_loop else " outside loops" if in_loop is False else "")

    def test(k: KernelFacts) -> list[Hit] | None:
        found = [
            c for c in k.calls
            if c.name in names
            and _kw_matches(c, kw, value, k)
            and (in_loop is None or (c.loop_depth > 0) == in_loop)
            and (where is None or where(c, k))
        ]
        if not found:
            return None
        return [Hit(label, text, tuple(sorted({c.line for c in found})))]

    return Condition(label, text, test)


def param(pattern: str, *, constexpr: bool | None = None, describe: str | None = None,
          name: str | None = None) -> Condition:
    """A kernel parameter whose name fully matches the regex ``pattern``."""
    rx = re.compile(pattern)
    label = name or f"param-{pattern}"
    text = describe or f"a parameter matching `{pattern}`" + (" (constexpr)" if constexpr else "")

    def test(k: KernelFacts) -> list[Hit] | None:
        found = [p.name for p in k.params if rx.fullmatch(p.name) and (constexpr is None or p.constexpr == constexpr)]
        if not found:
            return None
        return [Hit(label, f"{text}: {', '.join(found[:4])}", param_lines(k, found), signature=True)]

    return Condition(label, text, test)


def param_lines(k: KernelFacts, names: Iterable[str]) -> tuple[int, ...]:
    """Where parameters are declared: the header line of each (its first occurrence), for
    conditions about the signature."""
    return tuple(sorted({k.names.get(n, k.line_start) for n in names}))


def def_line(k: KernelFacts) -> int:
    """The kernel's `def` line (below its decorators), for conditions about its name."""
    for i, text in enumerate(k.source.splitlines()):
        if re.match(rf"\s*(async\s+)?def\s+{re.escape(k.name)}\b", text):
            return k.line_start + i
    return k.line_start


def uses_name(pattern: str, *, describe: str | None = None, name: str | None = None) -> Condition:
    """An identifier (variable, parameter, constant name) fully matching ``pattern``."""
    rx = re.compile(pattern)
    label = name or f"name-{pattern}"
    text = describe or f"an identifier matching `{pattern}`"

    def test(k: KernelFacts) -> list[Hit] | None:
        found = {n: line for n, line in k.names.items() if rx.fullmatch(n)}
        if not found:
            return None
        # a parameter's first occurrence is the header: such a hit is about the signature
        body = {n: line for n, line in found.items() if k.param(n) is None}
        shown = body or found
        return [Hit(label, f"{text}: {', '.join(sorted(shown)[:4])}", tuple(sorted(shown.values()))[:4],
                    signature=not body)]

    return Condition(label, text, test)


def constant(pattern: str, *, describe: str | None = None, name: str | None = None) -> Condition:
    """A numeric literal whose text matches the regex ``pattern`` (e.g. ``1\\.4426``)."""
    rx = re.compile(pattern)
    label = name or f"const-{pattern}"
    text = describe or f"a constant matching `{pattern}`"

    def test(k: KernelFacts) -> list[Hit] | None:
        found = {c: line for c, line in k.constants.items() if rx.match(c)}
        if not found:
            return None
        return [Hit(label, f"{text}: {', '.join(sorted(found)[:3])}", tuple(sorted(found.values()))[:4])]

    return Condition(label, text, test)


def decorated(dec: str, *, kw: str | None = None, describe: str | None = None,
              where: Callable | None = None, name: str | None = None) -> Condition:
    """The kernel carries decorator ``dec`` (canonical: ``triton.autotune``)."""
    label = name or f"decorated-{dec.split('.')[-1]}" + (f"-{kw}" if kw else "")
    text = describe or f"`@{dec}`" + (f" with `{kw}`" if kw else "")

    def test(k: KernelFacts) -> list[Hit] | None:
        found = [d for d in k.decorators if d.name == dec and (kw is None or kw in d.kwargs)
                 and (where is None or where(d, k))]
        if not found:
            return None
        return [Hit(label, text, tuple(d.line for d in found), signature=True)]

    return Condition(label, text, test)


def loop(*, kind: str | Iterable[str] | None = None, containing: str | None = None,
         kw: str | None = None, describe: str | None = None, name: str | None = None) -> Condition:
    """A loop (``range``, ``tl.range``, ``tl.static_range``, ``while``) whose body calls
    ``containing`` (e.g. ``tl.load``), optionally with keyword ``kw`` on the loop iterator."""
    kinds = {kind} if isinstance(kind, str) else set(kind) if kind else None
    label = name or "loop" + (f"-{containing.replace('tl.', '')}" if containing else "") + (f"-{kw}" if kw else "")
    text = describe or "a loop" + (f" calling `{containing}`" if containing else "") + (
        f" with `{kw}`" if kw else "")

    def test(k: KernelFacts) -> list[Hit] | None:
        found = []
        for lp in k.loops:
            if kinds is not None and lp.kind not in kinds:
                continue
            if kw is not None and kw not in lp.kwargs:
                continue
            if containing is not None and not any(
                c.name == containing and lp.line <= c.line <= lp.end_line for c in k.calls
            ):
                continue
            found.append(lp.line)
        if not found:
            return None
        return [Hit(label, text, tuple(found))]

    return Condition(label, text, test)


def launched_with(kw: str, *, describe: str | None = None, name: str | None = None) -> Condition:
    """A host launch ``kernel[grid](..., kw=...)`` passes ``kw`` (e.g. ``num_stages``)."""
    label = name or f"launch-{kw}"
    text = describe or f"launched with `{kw}=`"

    def test(k: KernelFacts) -> list[Hit] | None:
        found = [ln.line for ln in k.launches if kw in ln.kwargs]
        if not found:
            return None
        return [Hit(label, text, tuple(found))]

    return Condition(label, text, test)


def custom(name: str, describe: str, fn: Callable[[KernelFacts], Iterable[int] | bool | None], *,
           signature: bool = False) -> Condition:
    """Any test of the facts. ``fn`` returns the lines that make it hold (or True), or a
    falsy value when it does not hold: the lines of the statements that satisfy it, never
    the decorator or `def` line. ``signature``: the condition is about the kernel's
    signature (a parameter, a decorator, the kernel's name), so its lines are the header's
    (see ``param_lines``)."""

    def test(k: KernelFacts) -> list[Hit] | None:
        res = fn(k)
        if res is None or res is False:
            return None
        if res is True:
            return [Hit(name, describe, (), signature)]
        lines = tuple(sorted(set(res)))
        return [Hit(name, describe, lines, signature)] if lines else None

    return Condition(name, describe, test)


ALWAYS = Condition("always", "any kernel", lambda k: [])


def soft(cond: Condition, relaxed: Condition | None = None) -> Condition:
    """``cond`` as a soft precondition (see ``Condition.soft``): failing it alone makes a
    near miss, provided ``relaxed`` holds (when given) or another precondition points at
    lines of the kernel."""
    return replace(cond, soft=True, relaxed=relaxed)


#: Launch meta-parameters supplied by a tuned table: `kernel[grid](..., **config)` where
#: the dict comes from an offline-tuned lookup (`get_config(M, E)`,
#: `try_get_optimal_moe_config(...)`, a JSON file the module loads), from a dict literal
#: that sets launch keys (`num_warps`, `num_stages`, `BLOCK_SIZE_*`), or is simply named as
#: one (`**config`, `**cfg`); or tile sizes / `num_warps` / `num_stages` passed by name whose
#: values the launcher read from such a lookup (`BLOCK_N = config["BLOCK_N"]` after `config =
#: get_lora_expand_config(...)`, a helper in another module); or JSON config tables in a
#: `configs/` folder beside the file for a kernel whose launch is not in sight or unpacks a
#: dict. Serving code (vLLM, SGLang fused MoE) tunes these per GPU and shape offline, so
#: autotuning, pipelining depth and
#: hardware tiers are handled already — by the table, not by static code we can see.
#: The skeletons that tune launches take `~LAUNCH_CONFIG_DICT` as a precondition: they are
#: not suggested for such a kernel (rather than suggested with a caveat), because the
#: table already is per-shape, per-GPU measurement — what `@triton.autotune` would add —
#: and editing the kernel's launch would bypass the table the authors maintain; the failed
#: precondition still says why in `skel suggest --json`.
#: A plain `**kwargs` that none of this explains is usually a few hand-set values (Liger's
#: DyT launcher), which is exactly what autotuning replaces.
_CONFIG_DICT = re.compile(r"(?i)conf|cfg")
_TABLE_LOOKUP = re.compile(r"(?i)(get|load|lookup|select|pick|find|best|optimal|tuned)\w*conf\w*\(|"
                           r"conf\w*\[|json\.loads?\(|\b\w*tuned\w*\b|\btable\b")
#: A dict literal written in the tuned-table format (the `BLOCK_SIZE_M/N/K`,
#: `GROUP_SIZE_M` keys vLLM/SGLang tuning scripts write), or one fixing both `num_warps`
#: and `num_stages`, is a table entry (or its default). One or two hand-picked values
#: (`{"BLOCK_N": 1024, "num_warps": 8}`) are not: that is what autotuning replaces.
_TABLE_KEYS = re.compile(r"""['"](BLOCK_SIZE_\w+|GROUP_SIZE_M)['"]\s*:""")


def _table_entry(source: str) -> bool:
    if not source.lstrip().startswith(("{", "dict(")):
        return False
    return bool(_TABLE_KEYS.search(source)) or (
        bool(re.search(r"num_warps['\"]?\s*[:=]", source)) and bool(re.search(r"num_stages['\"]?\s*[:=]", source)))


def _table_star(name: str, source: str) -> bool:
    """One `**name` argument whose dict (``source``) comes from a tuned table."""
    return bool(_CONFIG_DICT.search(name) or _TABLE_LOOKUP.search(source) or _table_entry(source))


#: Tile-size meta-parameters: BLOCK_M, BLOCK_SIZE_K, TILE_N, BK, BV, BM ... The
#: autotuner and hardware-tiered launches pick these; any value covers the range.
#: (``skel.skeletons.predicates.names`` re-exports it for the catalog.)
TILE_NAME = re.compile(r"(BLOCK|TILE)(_?[A-Z0-9]+)*|B[A-Z]{1,2}")
#: launch meta-parameters a tuned table would set: tile sizes and the compiler's knobs
_META_KWARG = re.compile(TILE_NAME.pattern + r"|num_warps|num_stages|GROUP_SIZE_M")


def _looked_up(ln) -> bool:
    """A tile size, `num_warps` or `num_stages` passed by name whose value the launching
    function read from a tuned table: `BLOCK_N = config["BLOCK_N"]` after `config =
    get_lora_expand_config(...)` (a lookup in another module, sglang's LoRA kernels)."""
    return any(_META_KWARG.fullmatch(kw) and chain and _TABLE_LOOKUP.search(" ".join(chain))
               for kw, chain in ln.kwarg_sources.items())


def _config_dict_launches(k) -> list[int]:
    out = []
    for ln in k.launches:
        sources = ln.star_sources or [""] * len(ln.star_kwargs)
        if any(_table_star(n, src) for n, src in zip(ln.star_kwargs, sources)) or _looked_up(ln):
            out.append(ln.line)
    return out


def _tuned_table(k) -> list[Hit] | None:
    lines = _config_dict_launches(k)
    if lines:
        return [Hit("launch-config-dict", "launch config supplied by a tuned table (`**config`, or tile sizes "
                                          "read from a config lookup)", tuple(lines))]
    if k.config_tables and (not k.launches or any(ln.star_kwargs for ln in k.launches)):
        shown = ", ".join(k.config_tables[:2])
        return [Hit("launch-config-dict", f"tuned launch configs in JSON tables beside the file (configs/{shown})")]
    return None


LAUNCH_CONFIG_DICT = Condition(
    "launch-config-dict", "launch config supplied by a tuned table (`**config` or configs/*.json beside the file)",
    _tuned_table)


# --- dtype helpers shared by precision skeletons ----------------------------------------

def operand_dtype(arg: str, k: KernelFacts) -> str:
    """Best-effort dtype of a ``tl.dot`` operand's source text: fp32, lowp, fp8 or ''."""
    return dtypes.operand_dtype(arg, k.var_dtypes)


def dot_operands_fp32(call: Call, k: KernelFacts) -> bool:
    """Both operands of a ``tl.dot`` are known to be fp32 (from casts or fp32 zeros)."""
    if len(call.args) < 2:
        return False
    return all(operand_dtype(a, k) == "fp32" for a in call.args[:2])


def dot_operands_lowp(call: Call, k: KernelFacts) -> bool:
    if len(call.args) < 2:
        return False
    return any(operand_dtype(a, k) in ("lowp", "fp8") for a in call.args[:2])


# --- small readers of facts shared by many skeletons ---------------------------------------

#: A Python identifier (``pid_m``, ``BLOCK_K``, ``_x``): the one spelling of this pattern;
#: ``skel.skeletons.predicates.names`` re-exports it for the catalog.
IDENT = re.compile(r"[A-Za-z_]\w*")


_TARGETS: dict[tuple[str, ...], list[str]] = {}  # assign_targets' answers, by target texts


def assign_targets(a) -> list[str]:
    """Plain variable names an assignment writes (`a, b = ...` gives both)."""
    # asked of every assignment by many detectors (about a million times over a package):
    # the answer depends on the target texts alone, so it is kept per texts (and copied,
    # as callers may extend it)
    key = tuple(a.targets)
    names = _TARGETS.get(key)
    if names is None:
        out: list[str] = []
        for t in a.targets:
            out += [x.strip(" ()") for x in t.split(",")]
        names = [x for x in out if IDENT.fullmatch(x)]
        if len(_TARGETS) > 50_000:
            _TARGETS.clear()
        _TARGETS[key] = names
    return list(names)


@lru_cache(maxsize=4096)
def rx(pattern: str) -> re.Pattern[str]:
    """``re.compile``, kept for patterns built per variable name (``r"\\b" + re.escape(n)``):
    there are thousands of those, more than ``re``'s own cache holds, so ``re.search`` kept
    compiling the same patterns again."""
    return re.compile(pattern)


def assign_calls(a) -> set[str]:
    """Canonical call names in an assignment's value; a method on a value is `.name`."""
    out = set()
    for c in a.calls:
        head = c.split(".")[0]
        out.add(c if "." not in c or head in ("tl", "triton", "") else "." + c.rsplit(".", 1)[1])
    return out


def split_top(text: str) -> list[str]:
    """Split source text on commas outside brackets: `f(a, b), c` -> [`f(a, b)`, ` c`]."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]
