"""What `skel suggest` and `skel skeletons` print, for many kernels: a CLI-level behaviour fingerprint.

    python -m benchmarks.reliability.suggest_dump OUT.txt [--sglang WHEEL] [--every N]

Runs the command line in-process (click's runner) on every fixture and runnable pair of
the catalog, the repository's ``examples/``, every Nth file of the installed fla-core and
liger-kernel and (with ``--sglang``) of an sglang wheel's Python and C++ sources, in the
text, JSON and prompt formats for two targets, plus `skel skeletons list --json` and
`skel skeletons show ID` for every skeleton. Each file's real path is replaced by a
layout-independent key in what is written, so two trees that answer the same way write
byte-identical files (`cmp a.txt b.txt`) even when the catalog's files moved. Run with
each tree first on PYTHONPATH and SKEL_HOME set to an empty folder, from a folder outside
both trees (as ``assessments_dump``, whose file list it shares, says):

    cd /tmp && PYTHONPATH=TREE:CHECKOUT python -m benchmarks.reliability.suggest_dump a.txt
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from pathlib import Path

from benchmarks.reliability.assessments_dump import CPP, catalog_files


def files(code_root: Path, wheel: str | None, every: int, work: Path):
    import importlib.util

    from skel.kernels.extract import hint

    # the catalog's files are run from copies named by their key under one folder, so the
    # paths the answers print (and the prompt's `Check:` line, whose length the token budget
    # counts) are the same in every layout
    for key, p in catalog_files(code_root):
        copy = work / "catalog" / key
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(p.read_bytes())
        yield key, copy
    for p in sorted((code_root / "examples").glob("*.py")):
        yield f"examples/{p.name}", p
    for name in ("fla", "liger_kernel"):
        spec = importlib.util.find_spec(name)
        root = Path(list(spec.submodule_search_locations)[0])
        found = [p for p in sorted(root.rglob("*.py")) if hint(p.read_text(errors="replace"), p.name)]
        for p in found[::every]:
            yield f"{name}/{p.relative_to(root)}", p
    if wheel:
        with zipfile.ZipFile(wheel) as z:
            names = [n for n in sorted(z.namelist()) if n.startswith("sglang/") and n.endswith((".py", *CPP))]
            found = [n for n in names if hint(z.read(n).decode("utf-8", "replace"), n)]
            for n in found[::every]:
                z.extract(n, work)
                yield n, work / n


def main() -> None:
    args = sys.argv[1:]
    wheel, every = None, 4
    for flag in ("--sglang", "--every"):
        if flag in args:
            i = args.index(flag)
            if flag == "--sglang":
                wheel = args[i + 1]
            else:
                every = int(args[i + 1])
            del args[i:i + 2]
    if len(args) != 1:
        raise SystemExit(__doc__)
    os.environ.setdefault("SKEL_HOME", tempfile.mkdtemp(prefix="skel-home-"))
    from click.testing import CliRunner

    import skel
    from skel.cli import cli
    from skel.skeletons.registry import all_skeletons

    code_root = Path(skel.__file__).resolve().parent.parent
    print(f"skel from {code_root}", file=sys.stderr)
    runner = CliRunner()
    work = Path(tempfile.mkdtemp(prefix="skel-sg-"))  # same length every run: written as <work>
    runs = [[], ["--json", "--arch", "sm90", "--backend", "cuda", "--triton", "3.6.0"],
            ["--format", "prompt", "--arch", "sm90", "--backend", "cuda", "--triton", "3.7.1"]]
    with open(args[0], "w") as out:
        for argv in (["skeletons", "list", "--json"], ["skeletons", "list"]):
            r = runner.invoke(cli, argv)
            out.write(f"=== {' '.join(argv)} -> {r.exit_code}\n{r.output}\n")
        for s in all_skeletons():
            r = runner.invoke(cli, ["skeletons", "show", s.id])
            out.write(f"=== skeletons show {s.id} -> {r.exit_code}\n{r.output}\n")
        n = 0
        for key, path in files(code_root, wheel, every, work):
            for extra in runs:
                r = runner.invoke(cli, ["suggest", str(path), *extra])
                text = r.output.replace(str(path), key)
                text = text.replace(os.path.relpath(path), key)
                text = text.replace(str(work), "<work>").replace(str(code_root), "<root>")
                out.write(f"=== suggest {key} {' '.join(extra)} -> {r.exit_code}\n{text}\n")
            n += 1
    print(f"{n} files -> {args[0]}")


if __name__ == "__main__":
    main()
