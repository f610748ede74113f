"""libcst's parse with and without its per-node validation, side by side, and the same trees.

    python -m benchmarks.performance.parse_validation                 # fla-core + liger-kernel, 5 repeats
    python -m benchmarks.performance.parse_validation --repeat 9 ~/.cache/skel-bench/sglang/0.5.14/sglang

Every libcst node checks its fields as it is constructed; skel's parse
(``skel.kernels.tree.parse_module``) skips those checks, since a tree the parser built is
well formed by construction. Over the kernel-bearing files of fla-core and liger-kernel
(installed) and of any package folders given, this times ``libcst.parse_module`` (the parse
floor of ``benchmarks.performance.mine_and_suggest``) and skel's parse, alternating repeat by repeat
in one process with the garbage collector off (as in a mine's parser workers), and prints
medians with min–max. Then it checks, file by file, that both parses give equal trees
(``deep_equals``) that print back to the file's text, and that skel's extraction gives the
same facts with and without the checks. Exit 1 on any difference.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import importlib.util
import os
import json
import statistics
import sys
import time
from pathlib import Path


def _files(extra: list[str]) -> list[tuple[str, str]]:
    from skel.kernels.triton import KERNEL_HINT

    roots = []
    for pkg in ("fla", "liger_kernel"):
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            sys.exit(f"{pkg} is not installed: pip install --no-deps fla-core==0.6.0 liger-kernel==0.8.5")
        roots.append(Path(list(spec.submodule_search_locations)[0]))
    roots += [Path(p).expanduser() for p in extra]
    out = []
    for root in roots:
        for p in sorted(root.rglob("*.py")):
            text = p.read_text(encoding="utf-8", errors="replace")
            if "triton" in text and KERNEL_HINT.search(text):
                out.append((str(p.relative_to(root.parent)), text))
    return out


def _facts(text: str, rel: str) -> str:
    from skel.kernels.extract import extract
    from skel.kernels.model import ParseError

    try:
        return json.dumps([k.to_dict() for k in extract(text, rel)], sort_keys=True, default=str)
    except ParseError as exc:
        return f"ParseError: {exc}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("roots", nargs="*", help="more package folders to take kernel files from")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import libcst

    from skel.kernels import tree
    from skel.tables import table

    files = _files(args.roots)
    chars = sum(len(t) for _, t in files)
    print(f"{len(files)} kernel-bearing files, {chars / 1e6:.2f} MB; cpus {os.cpu_count()}; "
          f"python {sys.version.split()[0]}; libcst {importlib.metadata.version('libcst')}", flush=True)
    runs: dict[str, list[float]] = {"libcst.parse_module (validates every node)": [],
                                    "skel.kernels.tree.parse_module (no validation)": []}
    parsers = [libcst.parse_module, tree.parse_module]
    gc.disable()
    try:
        for _ in range(args.repeat):
            for out, parse in zip(runs.values(), parsers):
                t = time.perf_counter()
                for _, text in files:
                    try:
                        parse(text)
                    except Exception:  # noqa: BLE001 - a file libcst refuses is refused by both
                        pass
                out.append(time.perf_counter() - t)
    finally:
        gc.enable()
    base = statistics.median(next(iter(runs.values())))
    rows = [[name, f"{statistics.median(ts):.2f}s ({min(ts):.2f}–{max(ts):.2f})",
             f"{statistics.median(ts) / base:.2f}x"] for name, ts in runs.items()]
    print(table(["parse of every file", f"median of {args.repeat} (min–max)", "relative"], rows))

    differ = []
    for rel, text in files:
        try:
            checked = libcst.parse_module(text)
        except Exception as exc:  # noqa: BLE001
            checked = exc
        try:
            unchecked = tree.parse_module(text)
        except Exception as exc:  # noqa: BLE001
            unchecked = exc
        if isinstance(checked, Exception) or isinstance(unchecked, Exception):
            if type(checked) is not type(unchecked):
                differ.append(f"{rel}: {checked!r} / {unchecked!r}")
            continue
        if not checked.deep_equals(unchecked) or unchecked.code != text:
            differ.append(f"{rel}: trees differ")
    # the extraction as shipped (no checks) against the same extraction with libcst's checks
    shipped = {rel: _facts(text, rel) for rel, text in files}
    tree_parse = tree.parse_module
    tree.parse_module = libcst.parse_module  # type: ignore[assignment]
    import skel.kernels.triton as triton

    triton.parse_module = libcst.parse_module  # type: ignore[assignment]
    try:
        for rel, text in files:
            if _facts(text, rel) != shipped[rel]:
                differ.append(f"{rel}: facts differ")
    finally:
        tree.parse_module = tree_parse  # type: ignore[assignment]
        triton.parse_module = tree_parse  # type: ignore[assignment]
    print(f"trees and facts compared on {len(files)} files: "
          + ("the same" if not differ else f"{len(differ)} differ"))
    for d in differ[:20]:
        print("  " + d)
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
