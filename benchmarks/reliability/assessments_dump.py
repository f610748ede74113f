"""Every skeleton's judgement of every kernel, as JSON lines: a behaviour fingerprint.

    python -m benchmarks.reliability.assessments_dump OUT.jsonl [--sglang WHEEL]

Writes, for each kernel of the skeleton fixtures (Triton and CUDA C++), the runnable
example pairs, the repository's ``examples/``, the installed fla-core and liger-kernel
packages and (with ``--sglang``) every Python and C++ source of an sglang wheel, its facts
and every skeleton's assessment (already present, preconditions matched with their lines,
preconditions failed, environment notes) for an unknown target and for CUDA sm_90 Triton
3.7.1. Two code trees that judge kernels the same way write byte-identical files (`cmp
a.jsonl b.jsonl`): run it with each tree first on PYTHONPATH to check that a refactor
changed nothing. ``python -m`` puts the current folder first on the path, so run it from a
folder outside both trees, with this checkout after the tree under test (it prints the
``skel`` it judged with):

    cd /tmp && PYTHONPATH=TREE:CHECKOUT python -m benchmarks.reliability.assessments_dump a.jsonl

Files are named, and extracted, by a layout-independent key (``fixtures/<id>.py``,
``pairs/<id>.py``), so moving the catalog's files does not show as a difference; the
CLI-level check of the same files under their real paths is ``suggest_dump``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import zipfile
from pathlib import Path

CPP = (".cu", ".cuh", ".cpp", ".cc", ".hpp", ".h")


def catalog_files(code_root: Path):
    """(key, path) of every fixture and runnable pair, in either layout: the flat one
    (``skeletons/fixtures/<id>.py``, ``skeletons/examples/<id>.py``) or one folder per
    skeleton (``skeletons/catalog/<id>/fixtures.py``, ``.../example.py``)."""
    sk = code_root / "skel/skeletons"
    found = []
    for p in sk.glob("fixtures/*"):
        if p.suffix in (".py", *CPP):
            found.append((f"fixtures/{p.name}", p))
    for p in sk.glob("examples/*.py"):
        if not p.name.startswith("_"):
            found.append((f"pairs/{p.name}", p))
    for p in sk.glob("catalog/*/fixtures*"):  # fixtures_training_ops.py -> <id>_training_ops.py
        found.append((f"fixtures/{p.parent.name}{p.name[len('fixtures'):]}", p))
    for p in sk.glob("catalog/*/example.py"):
        found.append((f"pairs/{p.parent.name}.py", p))
    return sorted(found)


def corpus(code_root: Path, wheel: str | None):
    yield from catalog_files(code_root)
    for p in sorted((code_root / "examples").glob("*.py")):
        yield f"examples/{p.name}", p
    for name in ("fla", "liger_kernel"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit(f"{name} is not installed (pip install --no-deps fla-core==0.6.0 liger-kernel==0.8.5)")
        root = Path(list(spec.submodule_search_locations)[0])
        for p in sorted(root.rglob("*.py")):
            yield f"{name}/{p.relative_to(root)}", p
    if wheel:
        with zipfile.ZipFile(wheel) as z:
            for n in sorted(z.namelist()):
                if n.startswith("sglang/") and n.endswith((".py", *CPP)):
                    yield n, z.read(n)


def main() -> None:
    args = sys.argv[1:]
    wheel = None
    if "--sglang" in args:
        i = args.index("--sglang")
        wheel = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1:
        raise SystemExit(__doc__)
    import skel
    from skel.kernels.extract import extract, hint
    from skel.skeletons.base import Target
    from skel.skeletons.registry import all_skeletons

    code_root = Path(skel.__file__).resolve().parent.parent
    print(f"skel from {code_root}", file=sys.stderr)
    skeletons = all_skeletons()
    targets = [Target(), Target(backend="cuda", cc=90, triton="3.7.1")]
    n = 0
    with open(args[0], "w") as out:
        for rel, src in corpus(code_root, wheel):
            raw = src if isinstance(src, bytes) else src.read_bytes()
            text = raw.decode("utf-8", errors="replace")
            if not hint(text, rel):
                continue
            try:
                kernels = extract(text, rel)
            except Exception as exc:  # noqa: BLE001 - recorded, compared like the rest
                out.write(json.dumps({"file": rel, "error": type(exc).__name__}) + "\n")
                continue
            for k in kernels:
                record = {"file": rel, "kernel": k.name, "facts": k.to_dict(), "assess": {}}
                for s in skeletons:
                    for i, t in enumerate(targets):
                        a = s.assess(k, t)
                        present = None if a.present is None else [str(h) for h in a.present] + [
                            list(h.lines) for h in a.present]
                        record["assess"][f"{s.id}/{i}"] = [
                            present, [[h.condition, str(h), list(h.lines)] for h in a.matched], a.failed,
                            a.env_ok, a.env_notes, a.kind, a.subject_holds]
                out.write(json.dumps(record, sort_keys=True, default=str) + "\n")
                n += 1
    print(f"{n} kernels -> {args[0]}")


if __name__ == "__main__":
    main()
