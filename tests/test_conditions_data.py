"""Conditions are data where they can be: patterns from the declarative vocabulary
(``skel.skeletons.patterns`` and the structured builders of ``conditions``); what stays
``custom`` is a named, typed function.

Counted over the source of every skeleton (``catalog/*/skeleton.py``) and the shared
predicates, one call site = one condition.
"""

from __future__ import annotations

import ast
from pathlib import Path

from skel.skeletons.patterns import BUILDERS

SKELETONS = Path(__file__).resolve().parent.parent / "skel" / "skeletons"
FILES = sorted(SKELETONS.glob("catalog/*/skeleton.py")) + sorted(SKELETONS.glob("predicates/*.py"))
#: the most custom conditions may be, as a share of all conditions (issue #34's target)
CUSTOM_SHARE = 0.30


#: where the vocabulary lives: a call counts only when its name was imported from here
VOCABULARY = ("skel.skeletons.conditions", "skel.skeletons.patterns")


def _calls(name_set):
    for f in FILES:
        src = f.read_text(encoding="utf-8")
        tree = ast.parse(src)
        funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        # `constant` is also a data-flow reader in skel.kernels.flow: only the vocabulary's own counts
        imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.module in VOCABULARY
                    for a in n.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in name_set \
                    and node.func.id in imported:
                yield f, node, funcs


def counts() -> tuple[int, int]:
    custom = sum(1 for _ in _calls({"custom"}))
    patterns = sum(1 for _ in _calls(set(BUILDERS)))
    return custom, patterns


def test_most_conditions_are_patterns():
    custom, patterns = counts()
    share = custom / (custom + patterns)
    print(f"{custom} custom, {patterns} patterns: custom share {share:.2f}")
    assert share <= CUSTOM_SHARE, f"{custom} custom conditions of {custom + patterns} ({share:.0%})"


def test_what_stays_custom_is_a_named_typed_function():
    """``custom(name, describe, fn)``: ``fn`` is a function of the module (no lambda), its
    parameter and return annotated, so mypy checks it and a reader finds it by name."""
    bad = []
    for f, node, funcs in _calls({"custom"}):
        where = f"{f.relative_to(SKELETONS)}:{node.lineno}"
        fn = node.args[2] if len(node.args) > 2 else next((kw.value for kw in node.keywords if kw.arg == "fn"), None)
        if not isinstance(fn, ast.Name) or fn.id not in funcs:
            bad.append(f"{where}: fn is not a function defined in the module")
            continue
        d = funcs[fn.id]
        if d.returns is None or not d.args.args or d.args.args[0].annotation is None:
            bad.append(f"{where}: {fn.id} lacks type annotations")
    assert not bad, "\n".join(bad)
